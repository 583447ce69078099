package jsonscan

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// ErrShort says the buffer ended inside the value being parsed: the caller
// fetches more input and parses the value again from its start.
var ErrShort = errors.New("short buffer")

// ErrTooLong says a value is longer than the Scanner holds (maxValue).
var ErrTooLong = errors.New("JSON value too long to hold")

// MaxValueBytes is the most bytes of one value held in memory: far more
// than any real event (kernel names run to thousands of bytes), far less
// than a pathological file's single string of hundreds of MB.
const MaxValueBytes = 16 << 20

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

// Scanner holds a window of the input text, Buf, and a position in it, Pos.
// Its parsing methods take a position in Buf and return the position after
// what they parsed, or ErrShort when Buf ends too early (the caller calls
// More and parses the value again from its start), or a *SyntaxError.
//
// Buf and Pos are fields rather than methods because the event decoders
// of package ingest read them in their hot loops; Buf is valid until the
// next call of More.
type Scanner struct {
	// Buf is the window of input: its byte i is at input offset Offset(i).
	Buf []byte
	// Pos is the position up to which the caller has parsed Buf.
	Pos int

	src  *blockReader
	cur  *block // block that Buf lies in, nil when Buf is a private copy
	base int64  // input offset of Buf[0]
	// maxValue bounds the bytes of one value (an event, a top-level
	// value) held in Buf; a longer one is skipped by SkipStream.
	maxValue int
	onBlock  func()
	check    func() error
}

// Options say how a Scanner reads its input.
type Options struct {
	// Context, when not nil, stops the reading with its error once done.
	Context context.Context
	// Limit, when positive, bounds the bytes read: past it reading fails
	// with an error wrapping ErrTooLarge.
	Limit int64
	// BlockSize is how many bytes one block of input carries (BlockSize
	// when 0); FirstBlock, when positive and smaller, the size of the
	// first block, so that a small input costs a small block.
	BlockSize, FirstBlock int
	// Blocks is the most blocks made (BlocksInFlight+2 when fewer), plus
	// one for each of Readers: a caller that holds blocks (Hold) needs
	// one for each it holds besides.
	Blocks int
	// OnBlock, when set, is called after each new block.
	OnBlock func()
	// Check, when set, is called after each new block; its error stops
	// the read (a memory budget).
	Check func() error
	// At, when set, is where the input is read from instead of Init's
	// reader: at offsets, Size bytes (a file's size when opened) on
	// Readers goroutines (at least 1), each block's bytes counted by
	// Count when set. Past Size it reads on in order to the end, as a
	// reader would; one goroutine copying from the page cache is slower
	// than the parse on many cores.
	At      io.ReaderAt
	Size    int64
	Readers int
	Count   func(n int)
}

// Init makes s read r in blocks on a goroutine of its own, so that reading
// (and decompression) runs concurrently with parsing; Buf starts empty.
// Close stops the goroutine. It returns s.
func (s *Scanner) Init(r io.Reader, o Options) *Scanner {
	bs := o.BlockSize
	if bs <= 0 {
		bs = BlockSize
	}
	first := o.FirstBlock
	if first <= 0 {
		first = bs
	}
	*s = Scanner{
		src:      newBlockReader(o.Context, r, o, bs, max(bs/16, 16), first),
		maxValue: MaxValueBytes,
		onBlock:  o.OnBlock,
		check:    o.Check,
	}
	return s
}

// InitBytes makes s scan b, whose first byte is at input offset base, and
// nothing more: More returns io.EOF. It returns s.
func (s *Scanner) InitBytes(b []byte, base int64) *Scanner {
	*s = Scanner{Buf: b, base: base}
	return s
}

// Close stops the reading goroutine of Init; it may be called more than
// once.
func (s *Scanner) Close() {
	if s.src != nil {
		s.src.close()
	}
}

// Total returns the bytes of input read, once the input has ended (More
// returned io.EOF) or Close was called.
func (s *Scanner) Total() int64 {
	if s.src == nil {
		return s.base + int64(len(s.Buf))
	}
	return s.src.total
}

// Hold makes the memory Buf lies in the caller's until it calls the
// function returned: More does not reuse it, so that a slice of Buf may be
// read on another goroutine. Each held block is one fewer for the reader
// (see Options.Blocks). The function may be called from any goroutine.
func (s *Scanner) Hold() (release func()) {
	b, src := s.cur, s.src
	s.cur = nil // More copies the tail out, and does not release it
	if b == nil {
		return func() {} // a private copy: the collector's
	}
	return func() { src.release(b) }
}

// Unread puts b back in front of Buf[Pos:], as the text that came right
// before it: Buf becomes a private copy of b followed by Buf[Pos:], Pos 0.
// With an empty b it only makes Buf private, so that the memory it was in
// can be released.
func (s *Scanner) Unread(b []byte) {
	nb := make([]byte, 0, len(b)+len(s.Buf)-s.Pos)
	nb = append(append(nb, b...), s.Buf[s.Pos:]...)
	s.base += int64(s.Pos) - int64(len(b))
	if s.src != nil {
		s.src.release(s.cur)
	}
	s.cur, s.Buf, s.Pos = nil, nb, 0
}

// Hooks returns the functions More calls after each new block
// (Options.OnBlock and Check) and clears them, for a caller that calls
// them itself on the goroutine that owns what they read; SetHooks puts
// them back.
func (s *Scanner) Hooks() (onBlock func(), check func() error) {
	onBlock, check = s.onBlock, s.check
	s.onBlock, s.check = nil, nil
	return onBlock, check
}

// SetHooks sets the functions More calls after each new block.
func (s *Scanner) SetHooks(onBlock func(), check func() error) {
	s.onBlock, s.check = onBlock, check
}

// Offset returns the input offset of Buf[i].
func (s *Scanner) Offset(i int) int64 { return s.base + int64(i) }

// More drops Buf[:keep], appends the next block and sets Pos to 0 (the old
// keep). It returns io.EOF at the end of input, or the reader's error, or
// ErrTooLong when Buf[keep:] already holds MaxValueBytes: a value that long
// is not held (see SkipStream). A tail longer than a block's room is copied
// with at least as many new bytes after it, so that a value growing over
// many blocks is copied and parsed again a bounded number of times.
func (s *Scanner) More(keep int) error {
	tail := s.Buf[keep:]
	if s.src == nil {
		return io.EOF
	}
	if len(tail) >= s.maxValue && s.maxValue > 0 {
		return ErrTooLong
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
		s.Buf = b.mem[at : b.prefix+b.n]
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
		s.Buf = nb
	}
	s.Pos = 0
	if s.onBlock != nil {
		s.onBlock()
	}
	if s.check != nil {
		return s.check()
	}
	return nil
}

// Syntax returns a SyntaxError at Buf position i.
func (s *Scanner) Syntax(i int, format string, args ...any) error {
	return &SyntaxError{Offset: s.base + int64(i), Msg: fmt.Sprintf(format, args...)}
}

// Unexpected describes the byte at i for an error message.
func (s *Scanner) Unexpected(i int, want string) error {
	if i >= len(s.Buf) {
		return ErrShort
	}
	return s.Syntax(i, "expected %s, found %q", want, s.Buf[i])
}

// WS skips JSON whitespace from i. Runs of spaces (Kineto's indentation)
// are passed over eight bytes at a time.
func (s *Scanner) WS(i int) int {
	b := s.Buf
	if i < len(b) && b[i] > ' ' {
		return i
	}
	for {
		if i+8 <= len(b) {
			n := bits.TrailingZeros64(binary.LittleEndian.Uint64(b[i:])^(Lows*' ')) / 8
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

// Str scans the string that starts at i (b[i] == '"'). It returns its raw
// content (escapes left as they are) and the position after the closing
// quote.
func (s *Scanner) Str(i int) (raw []byte, next int, err error) {
	q := ClosingQuote(s.Buf, i+1)
	if q < 0 {
		return nil, 0, ErrShort
	}
	return s.Buf[i+1 : q], q + 1, nil
}

// Literal scans a number, true, false or null at i and returns its text.
// Runs of digits are passed over eight bytes at a time.
func (s *Scanner) Literal(i int) ([]byte, int, error) {
	b := s.Buf
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
		return nil, 0, ErrShort
	}
	if j == i {
		return nil, 0, s.Unexpected(i, "a JSON value")
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

// Skip skips the value at i.
func (s *Scanner) Skip(i int) (int, error) {
	if i >= len(s.Buf) {
		return 0, ErrShort
	}
	switch s.Buf[i] {
	case '"':
		_, next, err := s.Str(i)
		return next, err
	case '{', '[':
		return s.SkipContainer(i)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n', 'N', 'I':
	default:
		return 0, s.Unexpected(i, "a JSON value")
	}
	_, next, err := s.Literal(i)
	return next, err
}

// SkipContainer skips the object or array at i, checking that brackets
// match up to a nesting depth of 64.
func (s *Scanner) SkipContainer(i int) (int, error) {
	b := s.Buf
	var stack uint64 // bit set: object
	depth, deep := 0, false
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			_, next, err := s.Str(i)
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
				return 0, s.Syntax(i, "mismatched %q", c)
			}
			stack >>= 1
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
		i++
	}
	return 0, ErrShort
}

// Retry runs step at Pos, fetching more input as long as it reports
// ErrShort, and moves Pos past what it parsed.
func (s *Scanner) Retry(step func(int) (int, error)) error {
	for {
		next, err := step(s.Pos)
		if err == nil {
			s.Pos = next
			return nil
		}
		if err != ErrShort {
			return err
		}
		if err := s.More(s.Pos); err != nil {
			return s.EOFError(err)
		}
	}
}

// EOFError turns the end of input inside a value into a syntax error, and
// ErrTooLong into an error that says where the long value starts.
func (s *Scanner) EOFError(err error) error {
	switch err {
	case io.EOF:
		err := s.Syntax(len(s.Buf), "unexpected end of input (truncated file?)")
		err.(*SyntaxError).AtEnd = true
		return err
	case ErrTooLong:
		return fmt.Errorf("%w: more than %d MiB at byte offset %d", ErrTooLong, s.maxValue>>20, s.base+int64(s.Pos))
	}
	return err
}
