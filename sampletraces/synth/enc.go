package synth

import (
	"io"
	"strconv"
	"sync"
)

// flushSize is the buffer size at which events are handed to the sink.
const flushSize = 1 << 20

// sink receives a full buffer and returns an empty one to fill next.
type sink interface {
	flush(b []byte) ([]byte, error)
}

// syncSink writes buffers to w in the caller's goroutine.
type syncSink struct{ w io.Writer }

func (s syncSink) flush(b []byte) ([]byte, error) {
	_, err := s.w.Write(b)
	return b[:0], err
}

// asyncSink writes buffers to w from a second goroutine (the compressor),
// so that formatting and compression run on two cores.
type asyncSink struct {
	full chan []byte
	free chan []byte
	done chan error
	mu   sync.Mutex
	err  error // first write error, seen by flush
}

// newAsyncSink starts the writing goroutine; close must be called.
func newAsyncSink(w io.Writer) *asyncSink {
	s := &asyncSink{full: make(chan []byte, 2), free: make(chan []byte, 3), done: make(chan error, 1)}
	for i := 0; i < 2; i++ {
		s.free <- make([]byte, 0, flushSize+64<<10)
	}
	go func() {
		var err error
		for b := range s.full {
			if err == nil {
				if _, err = w.Write(b); err != nil {
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
				}
			}
			s.free <- b[:0]
		}
		s.done <- err
	}()
	return s
}

func (s *asyncSink) flush(b []byte) ([]byte, error) {
	s.full <- b
	free := <-s.free
	s.mu.Lock()
	defer s.mu.Unlock()
	return free, s.err
}

// close waits for the writes to finish and returns the first error.
func (s *asyncSink) close() error {
	close(s.full)
	return <-s.done
}

// countSink counts bytes and drops them (size estimates).
type countSink struct{ n int64 }

func (s *countSink) flush(b []byte) ([]byte, error) {
	s.n += int64(len(b))
	return b[:0], nil
}

// appendUS appends ns as microseconds with three decimals, as Kineto
// writes ts and dur.
func appendUS(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	f := ns % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// appendDims appends a JSON array of three ints.
func appendDims(b []byte, d [3]int) []byte {
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(d[0]), 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(d[1]), 10)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(d[2]), 10)
	return append(b, ']')
}

// appendQuoted appends s in double quotes; s must be JSON-safe (checked
// once for every template string by jsonSafe).
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// jsonSafe reports whether s needs no escaping inside a JSON string.
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}
