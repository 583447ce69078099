package jsonscan

import (
	"encoding/binary"
	"io"
)

// Open checks for an object at i and returns the position of its first
// member, or done and the position after it when it is empty.
func (s *Scanner) Open(i int, what string) (next int, done bool, err error) {
	b := s.Buf
	if i >= len(b) {
		return 0, false, ErrShort
	}
	if b[i] != '{' {
		return 0, false, s.Unexpected(i, what)
	}
	if i+1 < len(b) && b[i+1] == '"' {
		return i + 1, false, nil // compact JSON
	}
	if i+9 <= len(b) {
		switch w := binary.LittleEndian.Uint64(b[i:]); {
		case w&(1<<56-1) == kinetoEventOpen:
			return i + 6, false, nil
		case w == kinetoArgsOpen && b[i+8] == '"':
			return i + 8, false, nil
		}
	}
	i = s.WS(i + 1)
	if i >= len(b) {
		return 0, false, ErrShort
	}
	if b[i] == '}' {
		return i + 1, true, nil
	}
	return i, false, nil
}

// Kineto's writer opens an event with a brace, a line break and four
// spaces, and its args with a brace, a line break and six spaces: these
// are the words of the openings (with the quote after the first) as read
// little-endian.
const (
	kinetoEventOpen = 0x22_20202020_0a7b  // "{\n    \""
	kinetoArgsOpen  = 0x20202020_20200a7b // "{\n      "
)

// Kineto's writer separates the members of an event by a comma, a line
// break and four spaces, and those of its args by a comma and six spaces:
// these are the words of the separators and the quote after them, as read
// little-endian.
const (
	kinetoLineSep = 0x22_20202020_0a2c  // ",\n    \""
	kinetoArgsSep = 0x22202020_2020202c // ",      \""
)

// After reads what follows a member's value at i: a comma, and it returns
// the position of the next member; or the closing brace, and it returns
// done and the position after it.
func (s *Scanner) After(i int, what string) (next int, done bool, err error) {
	b := s.Buf
	if i+2 < len(b) && b[i] == ',' {
		switch {
		case b[i+1] == '"':
			return i + 1, false, nil // compact JSON
		case b[i+1] == ' ' && b[i+2] > ' ':
			return i + 2, false, nil // the usual ", "
		}
	}
	if i+8 <= len(b) {
		switch w := binary.LittleEndian.Uint64(b[i:]); {
		case w&(1<<56-1) == kinetoLineSep:
			return i + 6, false, nil
		case w == kinetoArgsSep:
			return i + 7, false, nil
		}
	}
	i = s.WS(i)
	if i >= len(b) {
		return 0, false, ErrShort
	}
	switch b[i] {
	case ',':
		return s.WS(i + 1), false, nil
	case '}':
		return i + 1, true, nil
	}
	return 0, false, s.Unexpected(i, "',' or '}' in "+what)
}

// Key parses an object key and the colon after it, and returns the raw key
// and the position of the value.
func (s *Scanner) Key(i int) ([]byte, int, error) {
	b := s.Buf
	if i >= len(b) {
		return nil, 0, ErrShort
	}
	if b[i] != '"' {
		return nil, 0, s.Unexpected(i, "an object key")
	}
	q := ClosingQuote(b, i+1)
	if q < 0 {
		return nil, 0, ErrShort
	}
	key := b[i+1 : q]
	if q+3 < len(b) && b[q+1] == ':' {
		switch {
		case b[q+2] > ' ':
			return key, q + 2, nil // compact JSON
		case b[q+2] == ' ' && b[q+3] > ' ':
			return key, q + 3, nil // the usual ": "
		}
	}
	i = s.WS(q + 1)
	if i >= len(b) {
		return nil, 0, ErrShort
	}
	if b[i] != ':' {
		return nil, 0, s.Unexpected(i, "':' after an object key")
	}
	i = s.WS(i + 1)
	if i >= len(b) {
		return nil, 0, ErrShort
	}
	return key, i, nil
}

// Text parses the scalar at i into dst: a string's raw content or a
// literal's text. An object or array is skipped and leaves dst nil.
func (s *Scanner) Text(i int, dst *[]byte) (int, error) {
	b := s.Buf
	if i >= len(b) {
		return 0, ErrShort
	}
	switch b[i] {
	case '"':
		raw, next, err := s.Str(i)
		*dst = raw
		return next, err
	case '{', '[':
		*dst = nil
		return s.SkipContainer(i)
	case 'n': // null
		*dst = nil
		return s.Skip(i)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		raw, next, err := s.Literal(i)
		*dst = raw
		return next, err
	}
	if next, err := s.Skip(i); err != nil {
		return 0, err
	} else {
		*dst = b[i:next]
		return next, nil
	}
}

// Value scans any value at i: a string's raw content, or the text of a
// literal, array or object.
func (s *Scanner) Value(i int, raw *[]byte) (int, error) {
	if i < len(s.Buf) {
		switch s.Buf[i] {
		case '"':
			r, next, err := s.Str(i)
			*raw = r
			return next, err
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			r, next, err := s.Literal(i)
			*raw = r
			return next, err
		}
	}
	next, err := s.Skip(i)
	if err != nil {
		return 0, err
	}
	*raw = s.Buf[i:next]
	return next, nil
}

// Digits returns the value of the unsigned integer at i, and the
// position after it, when the general parse would read it as a whole
// literal: at most 18 digits (no overflow), followed by a byte that no
// literal holds. Otherwise it returns -1 for the position.
func (s *Scanner) Digits(i int) (v int64, next int) {
	b := s.Buf
	e := DigitsEnd(b, i)
	if e <= i || e-i > 18 || literalBytes[b[e]] {
		return 0, -1
	}
	for _, c := range b[i:e] {
		v = v*10 + int64(c-'0')
	}
	return v, e
}

// NumberEnd returns the position after the unsigned decimal number at i,
// digits with a fraction or not, when the general parse would read it as a
// whole literal (a byte that no literal holds follows it), or -1.
func (s *Scanner) NumberEnd(i int) int {
	b := s.Buf
	e := DigitsEnd(b, i)
	if e <= i {
		return -1
	}
	if b[e] == '.' {
		if e = DigitsEnd(b, e+1); e < 0 {
			return -1
		}
	}
	if literalBytes[b[e]] {
		return -1
	}
	return e
}

// First skips leading whitespace (and a UTF-8 byte order mark) from Pos,
// fetching input as needed, and returns the first byte of the document,
// at Pos; io.EOF when there is none.
func (s *Scanner) First() (byte, error) {
	for {
		s.Pos = s.WS(s.Pos)
		if s.Pos+3 <= len(s.Buf) && string(s.Buf[s.Pos:s.Pos+3]) == "\xef\xbb\xbf" {
			s.Pos += 3
			continue
		}
		if s.Pos < len(s.Buf) && (s.Pos+3 <= len(s.Buf) || s.Buf[s.Pos] != 0xef) {
			return s.Buf[s.Pos], nil
		}
		if err := s.More(s.Pos); err == io.EOF {
			if s.Pos < len(s.Buf) {
				return s.Buf[s.Pos], nil
			}
			return 0, io.EOF
		} else if err != nil {
			return 0, err
		}
	}
}

// End checks that only whitespace follows Pos, to the end of the input.
func (s *Scanner) End() error {
	for {
		s.Pos = s.WS(s.Pos)
		if s.Pos < len(s.Buf) {
			return s.Syntax(s.Pos, "data after the end of the JSON document")
		}
		if err := s.More(s.Pos); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// TopKey reads, from Pos, the separator before a key of the top-level
// object (none before the first), the key and its colon, fetching input as
// needed. done is true at the object's closing '}'. On return Pos is at
// the value's first byte.
func (s *Scanner) TopKey(first bool) (key string, done bool, err error) {
	err = s.Retry(func(i int) (int, error) {
		i = s.WS(i)
		if i >= len(s.Buf) {
			return 0, ErrShort
		}
		if s.Buf[i] == '}' {
			done = true
			return i + 1, nil
		}
		if !first {
			if s.Buf[i] != ',' {
				return 0, s.Unexpected(i, "',' or '}' in the top-level object")
			}
			i = s.WS(i + 1)
		}
		raw, next, err := s.Key(i)
		if err != nil {
			return 0, err
		}
		key = string(raw)
		return next, nil
	})
	return key, done, err
}

// ElementStart skips the whitespace before an element of an array of
// objects at i (an event of traceEvents): the line break and two spaces of
// Kineto's writer and the line break of compact JSON without the general
// loop.
func (s *Scanner) ElementStart(i int) int {
	b := s.Buf
	if i+4 <= len(b) {
		switch {
		case binary.LittleEndian.Uint32(b[i:]) == kinetoEventStart:
			return i + 3
		case b[i] == '\n' && b[i+1] == '{':
			return i + 1
		}
	}
	return s.WS(i)
}

// kinetoEventStart is what comes before an event's brace in Kineto's
// layout, with the brace, as read little-endian: "\n  {".
const kinetoEventStart = 0x7b_2020_0a
