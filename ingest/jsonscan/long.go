package jsonscan

import (
	"io"
)

// Values longer than Scanner.maxValue (a kernel name of hundreds of MB, a
// huge metadata value) are not held in memory: they are skipped a block at
// a time, and the trace says so in a warning.

// SkipWS skips whitespace from Pos, fetching input as needed, until Pos is
// at a byte that is not whitespace.
func (s *Scanner) SkipWS() error {
	for {
		s.Pos = s.WS(s.Pos)
		if s.Pos < len(s.Buf) {
			return nil
		}
		if err := s.More(s.Pos); err != nil {
			return s.EOFError(err)
		}
	}
}

// SkipStream skips the value at Pos (after any whitespace) without holding
// it in Buf: a large value never needs to fit in memory. It only balances
// brackets outside strings.
func (s *Scanner) SkipStream() error {
	if err := s.SkipWS(); err != nil {
		return err
	}
	switch c := s.Buf[s.Pos]; {
	case c == '"' || c == '{' || c == '[':
		return s.skipNested()
	case literalBytes[c]:
		return s.skipLiteral()
	}
	return s.Unexpected(s.Pos, "a JSON value")
}

// skipNested skips the string, object or array at Pos.
func (s *Scanner) skipNested() error {
	i, depth := s.Pos, 0
	inStr, esc := false, false
	for {
		b := s.Buf
		for ; i < len(b); i++ {
			c := b[i]
			switch {
			case inStr:
				switch {
				case esc:
					esc = false
				case c == '\\':
					esc = true
				case c == '"':
					inStr = false
					if depth == 0 {
						s.Pos = i + 1
						return nil
					}
				default:
					i = quoteOrBackslash(b, i) - 1 // long strings are the point
				}
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					s.Pos = i + 1
					return nil
				}
			}
		}
		if err := s.More(len(b)); err != nil {
			return s.EOFError(err)
		}
		i = 0
	}
}

// quoteOrBackslash returns the position of the first '"' or '\\' in b at or
// after i, or len(b).
func quoteOrBackslash(b []byte, i int) int {
	q := indexByteFrom(b, i, '"')
	return indexByteFrom(b[:q], i, '\\')
}

// skipLiteral skips the number or literal at Pos.
func (s *Scanner) skipLiteral() error {
	for {
		i := s.Pos
		for i < len(s.Buf) && literalBytes[s.Buf[i]] {
			i++
		}
		s.Pos = i
		if i < len(s.Buf) {
			return nil
		}
		if err := s.More(i); err == io.EOF {
			return nil // the caller reports what is missing after it
		} else if err != nil {
			return s.EOFError(err)
		}
	}
}
