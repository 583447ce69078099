package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// errShort says the buffer ended inside the value being parsed: the caller
// fetches more input and parses the value again from its start.
var errShort = errors.New("short buffer")

// errTooLong says a value is longer than the scanner holds (maxValue).
var errTooLong = errors.New("JSON value too long to hold")

// maxValueBytes is the most bytes of one value held in memory: far more
// than any real event (kernel names run to thousands of bytes), far less
// than a pathological file's single string of hundreds of MB.
const maxValueBytes = 16 << 20

// SyntaxError is invalid JSON at a byte offset of the uncompressed text.
type SyntaxError struct {
	Offset int64 // byte offset in the uncompressed JSON text
	Msg    string
	// AtEnd is set when the text ended inside the document: a file cut
	// short, or one still being written.
	AtEnd bool
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns io.ErrUnexpectedEOF for a text that ended inside the
// document, as a truncated gzip stream's error wraps it, so that
// errors.Is(err, io.ErrUnexpectedEOF) tells any input cut short.
func (e *SyntaxError) Unwrap() error {
	if e.AtEnd {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// scanner holds a window of the uncompressed input. Parsing functions take a
// position in buf and return the position after what they parsed, or
// errShort when buf ends too early, or a *SyntaxError.
type scanner struct {
	src  *blockReader
	cur  *block // block that buf lies in, nil when buf is a private copy
	buf  []byte
	pos  int
	base int64 // input offset of buf[0]
	// maxValue bounds the bytes of one value (an event, a top-level
	// value) held in buf; a longer one is skipped by skipStream.
	maxValue int
	// onBlock, when set, is called after each new block.
	onBlock func()
	// check, when set, is called after each new block; its error stops
	// the read (Budget).
	check func() error
}

// more drops buf[:keep], appends the next block and sets pos to 0 (the old
// keep). It returns io.EOF at the end of input, or the reader's error, or
// errTooLong when buf[keep:] already holds maxValue bytes: a value that long
// is not held (see skipStream). A tail longer than a block's room is copied
// with at least as many new bytes after it, so that a value growing over
// many blocks is copied and parsed again a bounded number of times.
func (s *scanner) more(keep int) error {
	tail := s.buf[keep:]
	if len(tail) >= s.maxValue && s.maxValue > 0 {
		return errTooLong
	}
	b := s.src.next()
	if b == nil {
		if s.src.err != nil {
			return s.src.err
		}
		return io.EOF
	}
	s.base += int64(keep)
	if len(tail) <= b.prefix {
		at := b.prefix - len(tail)
		copy(b.mem[at:b.prefix], tail)
		s.src.release(s.cur)
		s.cur = b
		s.buf = b.mem[at : b.prefix+b.n]
	} else {
		nb := make([]byte, 0, 2*len(tail)+len(b.mem))
		nb = append(append(nb, tail...), b.data()...)
		s.src.release(s.cur)
		s.src.release(b)
		for len(nb) < 2*len(tail) {
			if b = s.src.next(); b == nil {
				break // the next call reports the end or the error
			}
			nb = append(nb, b.data()...)
			s.src.release(b)
		}
		s.cur = nil
		s.buf = nb
	}
	s.pos = 0
	if s.onBlock != nil {
		s.onBlock()
	}
	if s.check != nil {
		return s.check()
	}
	return nil
}

// syntax returns a SyntaxError at buf position i.
func (s *scanner) syntax(i int, format string, args ...any) error {
	return &SyntaxError{Offset: s.base + int64(i), Msg: fmt.Sprintf(format, args...)}
}

// unexpected describes the byte at i for an error message.
func (s *scanner) unexpected(i int, want string) error {
	if i >= len(s.buf) {
		return errShort
	}
	return s.syntax(i, "expected %s, found %q", want, s.buf[i])
}

// ws skips JSON whitespace from i. Runs of spaces (Kineto's indentation)
// are passed over eight bytes at a time.
func (s *scanner) ws(i int) int {
	b := s.buf
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for {
		if i+8 <= len(b) {
			n := bits.TrailingZeros64(binary.LittleEndian.Uint64(b[i:])^(lows*' ')) / 8
			if i += n; n == 8 {
				continue
			}
		}
		if i >= len(b) || !spaceBytes[b[i]] {
			return i
		}
		i++
	}
}

// spaceBytes are the JSON whitespace bytes. It is never written after
// initialization.
var spaceBytes = [256]bool{' ': true, '\n': true, '\r': true, '\t': true}

// str scans the string that starts at i (b[i] == '"'). It returns its raw
// content (escapes left as they are) and the position after the closing
// quote.
func (s *scanner) str(i int) (raw []byte, next int, err error) {
	q := closingQuote(s.buf, i+1)
	if q < 0 {
		return nil, 0, errShort
	}
	return s.buf[i+1 : q], q + 1, nil
}

// literal scans a number, true, false or null at i and returns its text.
// Runs of digits are passed over eight bytes at a time.
func (s *scanner) literal(i int) ([]byte, int, error) {
	b := s.buf
	j := i
	for {
		if j+8 <= len(b) {
			n := bits.TrailingZeros64(nonDigits(binary.LittleEndian.Uint64(b[j:]))) / 8
			if j += n; n == 8 {
				continue
			}
		}
		if j >= len(b) || !literalBytes[b[j]] {
			break
		}
		j++
	}
	if j == len(b) {
		return nil, 0, errShort
	}
	if j == i {
		return nil, 0, s.unexpected(i, "a JSON value")
	}
	return b[i:j], j, nil
}

// literalBytes are the bytes that numbers, true, false and null are made
// of. It is never written after initialization.
var literalBytes = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefghijklmnopqrstuvwxyz-+.EIN") { // NaN, Infinity: Python writes them
		t[c] = true
	}
	return t
}()

// skip skips the value at i.
func (s *scanner) skip(i int) (int, error) {
	if i >= len(s.buf) {
		return 0, errShort
	}
	switch s.buf[i] {
	case '"':
		_, next, err := s.str(i)
		return next, err
	case '{', '[':
		return s.skipContainer(i)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n', 'N', 'I':
	default:
		return 0, s.unexpected(i, "a JSON value")
	}
	_, next, err := s.literal(i)
	return next, err
}

// skipContainer skips the object or array at i, checking that brackets
// match up to a nesting depth of 64.
func (s *scanner) skipContainer(i int) (int, error) {
	b := s.buf
	var stack uint64 // bit set: object
	depth, deep := 0, false
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			_, next, err := s.str(i)
			if err != nil {
				return 0, err
			}
			i = next
			continue
		case '{', '[':
			stack = stack<<1 | uint64(c&^'[')>>5&1 // '{'-'[' == 32
			depth++
			deep = deep || depth > 64
		case '}', ']':
			if !deep && (stack&1 == 1) != (c == '}') {
				return 0, s.syntax(i, "mismatched %q", c)
			}
			stack >>= 1
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
		i++
	}
	return 0, errShort
}

// retry runs step at pos, fetching more input as long as it reports
// errShort, and moves pos past what it parsed.
func (s *scanner) retry(step func(int) (int, error)) error {
	for {
		next, err := step(s.pos)
		if err == nil {
			s.pos = next
			return nil
		}
		if err != errShort {
			return err
		}
		if err := s.more(s.pos); err != nil {
			return s.eofErr(err)
		}
	}
}

// eofErr turns the end of input inside a value into a syntax error, and
// errTooLong into an error that says where the long value starts.
func (s *scanner) eofErr(err error) error {
	switch err {
	case io.EOF:
		err := s.syntax(len(s.buf), "unexpected end of input (truncated file?)")
		err.(*SyntaxError).AtEnd = true
		return err
	case errTooLong:
		return fmt.Errorf("%w: more than %d MiB at byte offset %d", errTooLong, s.maxValue>>20, s.base+int64(s.pos))
	}
	return err
}
