package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// SkipRest skips the rest of an object from i, a position inside it at
// nesting depth 1 and outside any string, and returns the position after
// its closing brace. It is for the bodies of events the reader drops, where
// speed matters more than checking every byte: it only balances braces
// outside strings.
//
// It jumps from brace to brace (bytes.IndexByte) and tells whether a brace
// is in a string by the quotes before it, from the last position known to
// be outside a string: the start of the brace's line when it is near (JSON
// strings cannot hold a raw newline, so every line starts outside a
// string), else the previous brace. Quotes are counted eight bytes at a
// time, so a long line (compact JSON, one event per line) costs little.
func (s *Scanner) SkipRest(i int) (int, error) {
	if next := s.skipEventTail(i); next >= 0 {
		return next, nil
	}
	b := s.Buf
	depth := 1
	floor := i // a position known to be outside any string
	close := -1
	for {
		if close < i {
			close = indexByteFrom(b, i, '}')
		}
		// An opening brace matters only before the next closing one: the
		// search stops there, so that no byte is searched twice for it
		// (a search to the next '{' would run on into the next event).
		k := close
		if o := bytes.IndexByte(b[i:close], '{'); o >= 0 {
			k = i + o
		}
		if k == len(b) {
			return 0, ErrShort
		}
		start := floor
		if nl := lastNewline(b, max(floor, k-lineLook), k); nl >= 0 {
			start = nl + 1
		}
		if inString(b, start, k) {
			e := stringEnd(b, k+1)
			if e < 0 {
				return 0, ErrShort
			}
			floor, i = e, e
			continue
		}
		if b[k] == '{' {
			depth++
		} else if depth--; depth == 0 {
			return k + 1, nil
		}
		// Closing braces that follow with only whitespace between (the
		// event's own after its args: Kineto's "}\n  }", compact JSON's
		// "}}") are outside any string too: no search needed.
		for {
			j := k + 1
			for j < len(b) && j < k+8 && spaceBytes[b[j]] {
				j++
			}
			if j >= len(b) || b[j] != '}' {
				break
			}
			if depth--; depth == 0 {
				return j + 1, nil
			}
			k = j
		}
		floor, i = k+1, k+1
	}
}

// indexByteFrom returns the position of the first c in b at or after i, or
// len(b).
func indexByteFrom(b []byte, i int, c byte) int {
	if k := bytes.IndexByte(b[i:], c); k >= 0 {
		return i + k
	}
	return len(b)
}

// lineLook is how far back from a brace SkipRest looks for the start of
// its line: Kineto's lines are short; past this a line is read from the
// previous brace instead.
const lineLook = 32

// inString reports whether position k is inside a string, reading b from
// start, a position outside any string, leniently: a newline ends a
// string. Eight bytes without a backslash or a newline (or the fewer
// before k) are read as one word: each quote in them toggles the state.
func inString(b []byte, start, k int) bool {
	if k-start > longRun {
		// A long run, as compact JSON's one event per line makes: when it
		// holds no backslash and no newline, its quotes alone decide, and
		// the library counts them many bytes at a time.
		run := b[start:k]
		if bytes.IndexByte(run, '\\') < 0 && bytes.IndexByte(run, '\n') < 0 {
			return bytes.Count(run, quote)&1 == 1
		}
	}
	in := false
	j := start
	for j < k {
		if j+8 <= len(b) {
			// The word at j, cut to the bytes before k: most runs are
			// short (from a line's start or a brace to the next brace).
			w, m := binary.LittleEndian.Uint64(b[j:]), uint64(highs)
			if n := k - j; n < 8 {
				m &= 1<<(8*n) - 1
			}
			if (ZeroBytes(w^(Lows*'\\'))|ZeroBytes(w^(Lows*'\n')))&m == 0 {
				in = in != (bits.OnesCount64(ZeroBytes(w^(Lows*'"'))&m)&1 == 1)
				j = min(j+8, k)
				continue
			}
		}
		switch c := b[j]; {
		case c == '\n':
			in = false
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\' && b[j+1] != '\n':
			j++
		}
		j++
	}
	return in || j > k // j > k: an escape took the byte at k
}

// longRun is the length from which inString counts the quotes of a run
// with bytes.Count rather than eight bytes at a time: below it, the calls
// cost more than they save.
const longRun = 96

// quote is the byte string of a quote, for bytes.Count. It is never
// written.
var quote = []byte{'"'}

// stringEnd returns the position after the string that is open at j: after
// its closing quote, or at the newline that ends it; -1 if b ends first.
func stringEnd(b []byte, j int) int {
	for ; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j + 1
		case '\n':
			return j
		case '\\':
			if j+1 < len(b) && b[j+1] != '\n' {
				j++
			}
		}
	}
	return -1
}

// lastNewline returns the position of the last newline in b[lo:hi], or -1.
// It reads eight bytes at a time from the end.
func lastNewline(b []byte, lo, hi int) int {
	for ; hi-8 >= lo; hi -= 8 {
		if m := ZeroBytes(binary.LittleEndian.Uint64(b[hi-8:]) ^ (Lows * '\n')); m != 0 {
			return hi - 1 - bits.LeadingZeros64(m)/8
		}
	}
	for hi--; hi >= lo; hi-- {
		if b[hi] == '\n' {
			return hi
		}
	}
	return -1
}

// ClosingQuote returns the position of the quote that ends the string whose
// content starts at j, or -1 if b ends first.
func ClosingQuote(b []byte, j int) int {
	for {
		q := IndexQuote(b, j)
		if q < 0 {
			return -1
		}
		if b[q-1] != '\\' {
			return q
		}
		n := 0
		for p := q - 1; b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// skipEventTail returns what SkipRest returns for the rest of an object
// at i when that rest ends the way an event's does in Kineto's layout or
// in compact JSON, and -1 otherwise (and when Buf ends first). It finds
// the first closing brace and the first opening brace before it with
// bytes.IndexByte, and tells that they are outside strings without
// reading the bytes between them one by one:
//
//   - Kineto's layout: the event's own brace after a line break and two
//     spaces (no args, as flow events), or its args' brace at the end of
//     the line "\n    \"args\": {" and their closing brace on a line of
//     its own, followed by the event's on the next. A line starts outside
//     any string (a newline ends one, for SkipRest).
//   - compact JSON, "...,\"args\":{...}}" or "...}": no backslash and no
//     newline in the run, whose quotes then pair up.
//
// The run holds no other brace, so the depth goes to zero at the brace
// found, as it would byte by byte.
func (s *Scanner) skipEventTail(i int) int {
	b := s.Buf
	k := bytes.IndexByte(b[i:], '}')
	if k < 0 {
		return -1
	}
	c := i + k // the first closing brace
	o := bytes.IndexByte(b[i:c], '{')
	if o < 0 {
		if c-i >= 3 && b[c-1] == ' ' && b[c-2] == ' ' && b[c-3] == '\n' {
			return c + 1 // Kineto's "\n  }"
		}
		if plainRun(b[i:c]) && bytes.Count(b[i:c], quote)&1 == 0 {
			return c + 1
		}
		return -1
	}
	o += i // the first opening brace, before c
	if bytes.IndexByte(b[o+1:c], '{') >= 0 {
		return -1 // nested deeper: left to SkipRest
	}
	const kinetoArgs, kinetoArgsEnd, compactArgs = "\n    \"args\": {", "\n    }\n  }", `,"args":{`
	if o-i >= len(kinetoArgs)-1 && string(b[o+1-len(kinetoArgs):o+1]) == kinetoArgs &&
		c+len(kinetoArgsEnd)-5 <= len(b) && c-5 > o && string(b[c-5:c+len(kinetoArgsEnd)-5]) == kinetoArgsEnd {
		return c + len(kinetoArgsEnd) - 5
	}
	if c+1 < len(b) && b[c+1] == '}' && o-i >= len(compactArgs)-1 && string(b[o+1-len(compactArgs):o+1]) == compactArgs &&
		plainRun(b[i:c]) && bytes.Count(b[i:o], quote)&1 == 0 && bytes.Count(b[o:c], quote)&1 == 0 {
		return c + 2
	}
	return -1
}

// plainRun reports whether run holds no backslash and no newline: its
// quotes alone then say where its strings are.
func plainRun(run []byte) bool {
	return bytes.IndexByte(run, '\\') < 0 && bytes.IndexByte(run, '\n') < 0
}
