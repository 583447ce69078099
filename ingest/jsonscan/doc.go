// Package jsonscan is the JSON tokenizer that package ingest reads trace
// files with: a window of the input text (Scanner.Buf) read in blocks on a
// goroutine of its own, and functions that scan one token or value at a
// position of it without allocating, eight bytes at a time where they can.
//
// It knows JSON and the layouts trace writers give it (Kineto's
// indentation, compact JSON), not traces: which keys matter and what their
// values mean are ingest's. A value longer than MaxValueBytes is not held
// in memory: SkipStream passes over it a block at a time.
//
// The calling convention: a scanning method takes a position in Buf and
// returns the position after what it scanned, or ErrShort when Buf ends
// first (the caller calls More, which keeps the unparsed tail, and scans
// again from the value's start), or a *SyntaxError with the byte offset
// of the input. Scans never read past Buf, so a Buf cut anywhere gives
// either the same result as a longer one or ErrShort.
package jsonscan
