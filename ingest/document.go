package ingest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// document parses the whole JSON text: an object with traceEvents and
// metadata keys, or a bare array of events.
func (p *builder) document(s *scanner) error {
	c, err := s.first()
	if err != nil {
		return err
	}
	switch c {
	case '{':
		s.pos++
		if err := p.object(s); err != nil {
			return err
		}
	case '[':
		if err := p.events(s); err != nil {
			return err
		}
	default:
		if what := fileType(s.buf[s.pos:]); what != "" {
			return fmt.Errorf("%w: not JSON: %s", ErrNotTrace, what)
		}
		return fmt.Errorf("%w: not JSON (starts with %q)", ErrNotTrace, c)
	}
	return s.end()
}

// fileType names a common kind of file that is not a trace from its first
// bytes ("a PNG image"), or "".
func fileType(head []byte) string {
	for _, m := range []struct{ magic, what string }{
		{"\x89PNG\r\n\x1a\n", "a PNG image"},
		{"\xff\xd8\xff", "a JPEG image"},
		{"GIF8", "a GIF image"},
		{"%PDF-", "a PDF document"},
		{"\x7fELF", "an ELF executable"},
		{"SQLite format 3\x00", "an SQLite database"},
		{"<svg", "an SVG image"},
		{"<?xml", "an XML document"},
		{"<!DOCTYPE", "an HTML page"},
		{"<!doctype", "an HTML page"},
		{"<html", "an HTML page"},
		{"\x28\xb5\x2f\xfd", "a zstd-compressed file (decompress it first: zstd -d)"},
		{"BZh", "a bzip2-compressed file (decompress it first: bunzip2)"},
		{"\xfd7zXZ\x00", "an xz-compressed file (decompress it first: unxz)"},
	} {
		if len(head) >= len(m.magic) && string(head[:len(m.magic)]) == m.magic {
			return m.what
		}
	}
	return ""
}

// first skips leading whitespace (and a UTF-8 byte order mark) and returns
// the first byte of the document.
func (s *scanner) first() (byte, error) {
	for {
		s.pos = s.ws(s.pos)
		if s.pos+3 <= len(s.buf) && string(s.buf[s.pos:s.pos+3]) == "\xef\xbb\xbf" {
			s.pos += 3
			continue
		}
		if s.pos < len(s.buf) && (s.pos+3 <= len(s.buf) || s.buf[s.pos] != 0xef) {
			return s.buf[s.pos], nil
		}
		if err := s.more(s.pos); err == io.EOF {
			if s.pos < len(s.buf) {
				return s.buf[s.pos], nil
			}
			return 0, fmt.Errorf("%w: empty input", ErrNotTrace)
		} else if err != nil {
			return 0, err
		}
	}
}

// end checks that only whitespace follows the document.
func (s *scanner) end() error {
	for {
		s.pos = s.ws(s.pos)
		if s.pos < len(s.buf) {
			return s.syntax(s.pos, "data after the end of the JSON document")
		}
		if err := s.more(s.pos); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// object parses the top-level object after its '{'.
func (p *builder) object(s *scanner) error {
	seen := false
	for first := true; ; first = false {
		key, done, err := s.topKey(first)
		if err != nil || done {
			if err == nil && !seen {
				err = fmt.Errorf("%w: no traceEvents key in the top-level object", ErrNotTrace)
			}
			return err
		}
		switch {
		case key == "traceEvents" && seen:
			return s.syntax(s.pos, "traceEvents appears twice in the top-level object")
		case key == "traceEvents":
			seen = true
			err = p.events(s)
		case s.buf[s.pos] == '{' || s.buf[s.pos] == '[':
			if key == "deviceProperties" || key == "distributedInfo" || key == "WARNING" || key == "ERROR" {
				err = p.rawTop(s, key)
			} else {
				err = s.skipStream()
			}
		default:
			err = p.rawTop(s, key)
		}
		if err != nil {
			return err
		}
	}
}

// rawTop reads a whole top-level value and hands it to topValue.
func (p *builder) rawTop(s *scanner, key string) error {
	start := 0
	err := s.retry(func(i int) (int, error) { start = i; return s.skip(i) })
	if errors.Is(err, errTooLong) {
		p.warn("the value of top-level key %q is longer than %d MiB: skipped unread (byte offset %d)",
			key, s.maxValue>>20, s.base+int64(s.pos))
		return s.skipStream()
	}
	if err != nil {
		return err
	}
	return p.topValue(key, s.buf[start:s.pos])
}

// topKey reads the separator before a top-level key, the key and its colon.
// done is true at the closing '}'. On return pos is at the value's first
// byte.
func (s *scanner) topKey(first bool) (key string, done bool, err error) {
	err = s.retry(func(i int) (int, error) {
		i = s.ws(i)
		if i >= len(s.buf) {
			return 0, errShort
		}
		if s.buf[i] == '}' {
			done = true
			return i + 1, nil
		}
		if !first {
			if s.buf[i] != ',' {
				return 0, s.unexpected(i, "',' or '}' in the top-level object")
			}
			i = s.ws(i + 1)
		}
		raw, next, err := s.key(i)
		if err != nil {
			return 0, err
		}
		key = string(raw)
		return next, nil
	})
	return key, done, err
}

// events parses the traceEvents array at pos.
func (p *builder) events(s *scanner) error {
	empty := false
	err := s.retry(func(i int) (int, error) {
		if i >= len(s.buf) {
			return 0, errShort
		}
		if s.buf[i] != '[' {
			return 0, fmt.Errorf("%w: traceEvents is not an array (it starts with %q at byte offset %d)",
				ErrNotTrace, s.buf[i], s.base+int64(i))
		}
		i = s.ws(i + 1)
		if i >= len(s.buf) {
			return 0, errShort
		}
		empty = s.buf[i] == ']'
		if empty {
			i++
		}
		return i, nil
	})
	if err != nil || empty {
		return err
	}
	for {
		next, done, err := p.eventStep(s, s.pos)
		if err == errShort {
			err = s.more(s.pos)
			if err == errTooLong {
				if skipped, err := p.longSpace(s); err != nil || skipped {
					if err != nil {
						return err
					}
					continue
				}
				if done, err = p.longEvent(s); err != nil || done {
					return err
				}
				continue
			}
			if err != nil {
				return s.eofErr(err)
			}
			continue
		}
		if err != nil {
			return err
		}
		s.pos = next
		if err := p.add(s, &p.ev); err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// eventStep parses one event and the ',' or ']' after it.
func (p *builder) eventStep(s *scanner, i int) (int, bool, error) {
	i, err := s.event(s.eventStart(i), &p.ev)
	if err != nil {
		return 0, false, err
	}
	i = s.ws(i)
	if i >= len(s.buf) {
		return 0, false, errShort
	}
	switch s.buf[i] {
	case ',':
		return i + 1, false, nil
	case ']':
		return i + 1, true, nil
	}
	return 0, false, s.unexpected(i, "',' or ']' after an event")
}

// eventStart skips the whitespace before an event at i: the line break and
// two spaces of Kineto's writer and the line break of compact JSON without
// the general loop.
func (s *scanner) eventStart(i int) int {
	b := s.buf
	if i+4 <= len(b) {
		switch {
		case binary.LittleEndian.Uint32(b[i:]) == kinetoEventStart:
			return i + 3
		case b[i] == '\n' && b[i+1] == '{':
			return i + 1
		}
	}
	return s.ws(i)
}

// kinetoEventStart is what comes before an event's brace in Kineto's
// layout, with the brace, as read little-endian: "\n  {".
const kinetoEventStart = 0x7b_2020_0a
