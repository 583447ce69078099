package ingest

import (
	"fmt"
	"io"
)

// Values longer than scanner.maxValue (a kernel name of hundreds of MB, a
// huge metadata value) are not held in memory: they are skipped a block at
// a time, and the trace says so in a warning.

// skipWS skips whitespace from pos, fetching input as needed, until pos is
// at a byte that is not whitespace.
func (s *scanner) skipWS() error {
	for {
		s.pos = s.ws(s.pos)
		if s.pos < len(s.buf) {
			return nil
		}
		if err := s.more(s.pos); err != nil {
			return s.eofErr(err)
		}
	}
}

// skipStream skips the value at pos (after any whitespace) without holding
// it in buf: a large value never needs to fit in memory. It only balances
// brackets outside strings.
func (s *scanner) skipStream() error {
	if err := s.skipWS(); err != nil {
		return err
	}
	switch c := s.buf[s.pos]; {
	case c == '"' || c == '{' || c == '[':
		return s.skipNested()
	case literalBytes[c]:
		return s.skipLiteral()
	}
	return s.unexpected(s.pos, "a JSON value")
}

// skipNested skips the string, object or array at pos.
func (s *scanner) skipNested() error {
	i, depth := s.pos, 0
	inStr, esc := false, false
	for {
		b := s.buf
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
						s.pos = i + 1
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
					s.pos = i + 1
					return nil
				}
			}
		}
		if err := s.more(len(b)); err != nil {
			return s.eofErr(err)
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

// skipLiteral skips the number or literal at pos.
func (s *scanner) skipLiteral() error {
	for {
		i := s.pos
		for i < len(s.buf) && literalBytes[s.buf[i]] {
			i++
		}
		s.pos = i
		if i < len(s.buf) {
			return nil
		}
		if err := s.more(i); err == io.EOF {
			return nil // the caller reports what is missing after it
		} else if err != nil {
			return s.eofErr(err)
		}
	}
}

// longValue is a value skipped for its length.
type longValue struct {
	n     int64 // how many
	first int64 // byte offset of the first
}

// longSpace skips the whitespace at pos, and reports whether there was any:
// the value after a long run of whitespace may be short.
func (p *builder) longSpace(s *scanner) (bool, error) {
	from := s.base + int64(s.pos)
	err := s.skipWS()
	return s.base+int64(s.pos) > from, err
}

// longEvent skips, unread, the event at pos (after whitespace) that is too
// long to hold, and the ',' or ']' after it; done is true after the ']'.
// The event is counted, and finish warns about it.
func (p *builder) longEvent(s *scanner) (done bool, err error) {
	if err := s.skipWS(); err != nil {
		return false, err
	}
	if s.buf[s.pos] != '{' {
		return false, s.unexpected(s.pos, "an event object")
	}
	p.long.add(s.base + int64(s.pos))
	p.t.Counts.Events++
	if err := s.skipStream(); err != nil {
		return false, err
	}
	if err := s.skipWS(); err != nil {
		return false, err
	}
	switch s.buf[s.pos] {
	case ',':
		s.pos++
		return false, nil
	case ']':
		s.pos++
		return true, nil
	}
	return false, s.unexpected(s.pos, "',' or ']' after an event")
}

// add records one long value at byte offset off.
func (l *longValue) add(off int64) {
	if l.n == 0 {
		l.first = off
	}
	l.n++
}

// warning describes the long events skipped, or returns "".
func (l *longValue) warning(limit int) string {
	if l.n == 0 {
		return ""
	}
	return fmt.Sprintf("%d events longer than %d MiB were skipped unread (the first at byte offset %d)",
		l.n, limit>>20, l.first)
}
