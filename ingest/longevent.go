package ingest

import "fmt"

// longValue is a value skipped for its length.
type longValue struct {
	n     int64 // how many
	first int64 // byte offset of the first
}

// longSpace skips the whitespace at pos, and reports whether there was any:
// the value after a long run of whitespace may be short.
func (p *builder) longSpace(s *scanner) (bool, error) {
	from := s.Offset(s.Pos)
	err := s.SkipWS()
	return s.Offset(s.Pos) > from, err
}

// longEvent skips, unread, the event at pos (after whitespace) that is too
// long to hold, and the ',' or ']' after it; done is true after the ']'.
// The event is counted, and finish warns about it.
func (p *builder) longEvent(s *scanner) (done bool, err error) {
	if err := s.SkipWS(); err != nil {
		return false, err
	}
	if s.Buf[s.Pos] != '{' {
		return false, s.Unexpected(s.Pos, "an event object")
	}
	p.long.add(s.Offset(s.Pos))
	p.t.Counts.Events++
	if err := s.SkipStream(); err != nil {
		return false, err
	}
	if err := s.SkipWS(); err != nil {
		return false, err
	}
	switch s.Buf[s.Pos] {
	case ',':
		s.Pos++
		return false, nil
	case ']':
		s.Pos++
		return true, nil
	}
	return false, s.Unexpected(s.Pos, "',' or ']' after an event")
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
