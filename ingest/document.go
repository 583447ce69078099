package ingest

import (
	"errors"
	"fmt"
	"io"

	"kinetoscope/ingest/jsonscan"
)

// document parses the whole JSON text: an object with traceEvents and
// metadata keys, or a bare array of events.
func (p *builder) document(s *scanner) error {
	c, err := s.First()
	if err == io.EOF {
		return fmt.Errorf("%w: empty input", ErrNotTrace)
	}
	if err != nil {
		return err
	}
	switch c {
	case '{':
		s.Pos++
		if err := p.object(s); err != nil {
			return err
		}
	case '[':
		if err := p.events(s); err != nil {
			return err
		}
	default:
		if what := fileType(s.Buf[s.Pos:]); what != "" {
			return fmt.Errorf("%w: not JSON: %s", ErrNotTrace, what)
		}
		return fmt.Errorf("%w: not JSON (starts with %q)", ErrNotTrace, c)
	}
	return s.End()
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

// object parses the top-level object after its '{'.
func (p *builder) object(s *scanner) error {
	seen := false
	for first := true; ; first = false {
		key, done, err := s.TopKey(first)
		if err != nil || done {
			if err == nil && !seen {
				err = fmt.Errorf("%w: no traceEvents key in the top-level object", ErrNotTrace)
			}
			return err
		}
		switch {
		case key == "traceEvents" && seen:
			return s.Syntax(s.Pos, "traceEvents appears twice in the top-level object")
		case key == "traceEvents":
			seen = true
			err = p.events(s)
		case s.Buf[s.Pos] == '{' || s.Buf[s.Pos] == '[':
			if key == "deviceProperties" || key == "distributedInfo" || key == "WARNING" || key == "ERROR" {
				err = p.rawTop(s, key)
			} else {
				err = s.SkipStream()
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
	err := s.Retry(func(i int) (int, error) { start = i; return s.Skip(i) })
	if errors.Is(err, jsonscan.ErrTooLong) {
		p.warn("the value of top-level key %q is longer than %d MiB: skipped unread (byte offset %d)",
			key, jsonscan.MaxValueBytes>>20, s.Offset(s.Pos))
		return s.SkipStream()
	}
	if err != nil {
		return err
	}
	return p.topValue(key, s.Buf[start:s.Pos])
}

// events parses the traceEvents array at pos.
func (p *builder) events(s *scanner) error {
	empty := false
	err := s.Retry(func(i int) (int, error) {
		if i >= len(s.Buf) {
			return 0, jsonscan.ErrShort
		}
		if s.Buf[i] != '[' {
			return 0, fmt.Errorf("%w: traceEvents is not an array (it starts with %q at byte offset %d)",
				ErrNotTrace, s.Buf[i], s.Offset(i))
		}
		i = s.WS(i + 1)
		if i >= len(s.Buf) {
			return 0, jsonscan.ErrShort
		}
		empty = s.Buf[i] == ']'
		if empty {
			i++
		}
		return i, nil
	})
	if err != nil || empty {
		return err
	}
	for {
		if s.pool != nil { // in chunks, as far as they go; then one event here
			if done, err := p.parallelEvents(s); err != nil || done {
				return err
			}
		}
		next, done, err := s.eventStep(s.Pos, &p.ev)
		if err == jsonscan.ErrShort {
			err = s.More(s.Pos)
			if err == jsonscan.ErrTooLong {
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
				return s.EOFError(err)
			}
			continue
		}
		if err != nil {
			return err
		}
		s.Pos = next
		if err := p.add(s, &p.ev); err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// eventStep parses one event at i (after whitespace) into ev, and the ','
// or ']' after it; done is true after the ']'.
func (s *scanner) eventStep(i int, ev *rawEvent) (next int, done bool, err error) {
	i, err = s.event(s.ElementStart(i), ev)
	if err != nil {
		return 0, false, err
	}
	i = s.WS(i)
	if i >= len(s.Buf) {
		return 0, false, jsonscan.ErrShort
	}
	switch s.Buf[i] {
	case ',':
		return i + 1, false, nil
	case ']':
		return i + 1, true, nil
	}
	return 0, false, s.Unexpected(i, "',' or ']' after an event")
}
