package ingest

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"

	"kinetoscope/ingest/jsonscan"
)

// checkTraceText reads the rest of a JSON text whose first byte, first
// ('{' or '['), was at byte offset off, and checks the shape the reader
// needs, so that a file that cannot be analysed is refused before it is
// kept: the document is complete (every string and bracket closed, nothing
// after it), its brackets match, and it is a trace as the reader takes one
// (document): an object whose traceEvents key, once only, holds an array of
// objects, or a bare array of objects. It does not check scalars (numbers,
// literals, escapes): those few problems are left to the reader, which
// names the file and offset. Errors are *CheckError, worded as the
// reader's; read errors are returned wrapped.
func checkTraceText(name string, first byte, off int64, r io.Reader) error {
	c := newTextCheck(first)
	buf := make([]byte, 64<<10)
	at := off + 1
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if e := c.feed(buf[:n], at); e != nil {
				return contentError("%s: %v", name, e)
			}
			at += int64(n)
		}
		if err == io.EOF {
			if e := c.finish(at); e != nil {
				return contentError("%s: %v", name, e)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: read: %w", name, err)
		}
	}
}

// The states of a textCheck: where in the document the next byte is.
const (
	tsValue      = iota // inside an event or a nested value (inStr: in a string of it)
	tsObjFirst          // after the top-level '{': a key or '}'
	tsKey               // inside a top-level key
	tsColon             // after a top-level key: ':'
	tsTopValue          // after a top-level key's ':': its value
	tsTopString         // inside a top-level string value
	tsScalar            // inside a top-level number or literal
	tsObjSep            // after a top-level value: ',' or '}'
	tsObjKey            // after a top-level ',': a key
	tsEventFirst        // after the events array's '[': an event or ']'
	tsEventWant         // after a ',' between events: an event
	tsEventNext         // after an event: ',' or ']'
	tsDone              // after the document: whitespace only
)

// textCheck follows a JSON trace's text block by block (see checkTraceText).
type textCheck struct {
	state  int
	object bool     // the document is an object, not a bare array
	depth  int      // containers open
	arrays []uint64 // bit d: the container at depth d+1 is an array
	events int      // depth of the events array while it is open, else 0
	seen   bool     // the traceEvents key was read
	inStr  bool     // in tsValue, inside a string
	esc    bool     // inside a string, after a backslash
	key    []byte   // the top-level key being read, up to keyLook bytes
	keyLen int      // its length in bytes so far
}

// keyLook is how much of a top-level key textCheck keeps: enough to tell
// traceEvents.
const keyLook = 16

func newTextCheck(first byte) *textCheck {
	c := &textCheck{key: make([]byte, 0, keyLook)}
	c.push(first)
	if first == '{' {
		c.object, c.state = true, tsObjFirst
	} else {
		c.events, c.state = 1, tsEventFirst
	}
	return c
}

// indexStringEnd returns the position of the first '"' or '\\' at or after
// i, or len(b). It reads eight bytes at a time.
func indexStringEnd(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := jsonscan.ZeroBytes(w^jsonscan.Lows*'"') | jsonscan.ZeroBytes(w^jsonscan.Lows*'\\'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b) && b[i] != '"' && b[i] != '\\'; i++ {
	}
	return i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (c *textCheck) push(open byte) {
	d := c.depth
	if d/64 >= len(c.arrays) {
		c.arrays = append(c.arrays, 0)
	}
	if open == '[' {
		c.arrays[d/64] |= 1 << (d % 64)
	} else {
		c.arrays[d/64] &^= 1 << (d % 64)
	}
	c.depth++
}

// pop closes the innermost container with close, failing when it is of
// the other kind, and sets the state for what follows it.
func (c *textCheck) pop(close byte, at int64) error {
	d := c.depth - 1
	isArray := c.arrays[d/64]&(1<<(d%64)) != 0
	if isArray != (close == ']') {
		want := byte('}')
		if isArray {
			want = ']'
		}
		return &SyntaxError{Offset: at, Msg: fmt.Sprintf("expected %q, found %q", want, close)}
	}
	if c.depth == c.events {
		c.events = 0
	}
	c.depth--
	switch {
	case c.depth == 0:
		c.state = tsDone
	case c.depth == c.events:
		c.state = tsEventNext
	case c.object && c.depth == 1:
		c.state = tsObjSep
	default:
		c.state = tsValue
	}
	return nil
}

// feed checks the block b, whose first byte is at offset base.
func (c *textCheck) feed(b []byte, base int64) error {
	for i := 0; i < len(b); {
		switch c.state {
		case tsValue:
			i = c.scanValue(b, i)
			if i == len(b) {
				return nil
			}
			if err := c.value(b[i], base+int64(i)); err != nil {
				return err
			}
			i++
		case tsKey, tsTopString:
			i = c.str(b, i)
		case tsScalar:
			for i < len(b) && !isJSONSpace(b[i]) && b[i] != ',' && b[i] != '}' {
				i++
			}
			if i < len(b) {
				c.state = tsObjSep
			}
		default:
			if isJSONSpace(b[i]) {
				i++
				continue
			}
			if err := c.top(b[i], base+int64(i)); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// value handles a bracket inside a value, outside strings.
func (c *textCheck) value(ch byte, at int64) error {
	if ch == '{' || ch == '[' {
		c.push(ch)
		return nil
	}
	return c.pop(ch, at)
}

// scanValue returns the position of the first bracket outside strings in
// b at or after i, or len(b), following strings (inStr, esc) on the way.
// Eight bytes without a backslash are read as one word: a byte is inside
// a string when the quotes up to it, with the state before the word, are
// odd in number.
func (c *textCheck) scanValue(b []byte, i int) int {
	for i+8 <= len(b) {
		if c.esc { // the byte after a backslash
			c.esc = false
			i++
			continue
		}
		w := binary.LittleEndian.Uint64(b[i:])
		if jsonscan.ZeroBytes(w^jsonscan.Lows*'\\') != 0 {
			if j, found := c.scanBytes(b, i, i+8); found {
				return j
			}
			i += 8
			continue
		}
		q := jsonscan.ZeroBytes(w^jsonscan.Lows*'"') >> 7 // bit 0 of each byte: a quote
		y := w | jsonscan.Lows*0x20                       // '[' and ']' as '{' and '}'
		k := (jsonscan.ZeroBytes(y^jsonscan.Lows*'{') | jsonscan.ZeroBytes(y^jsonscan.Lows*'}')) >> 7
		if k == 0 {
			c.inStr = c.inStr != (bits.OnesCount64(q)&1 == 1)
			i += 8
			continue
		}
		in := q ^ q<<8 // bit 0 of byte j: the parity of the quotes up to it
		in ^= in << 16
		in ^= in << 32
		if c.inStr {
			in ^= jsonscan.Lows
		}
		if out := k &^ in; out != 0 {
			c.inStr = false
			return i + bits.TrailingZeros64(out)/8
		}
		c.inStr = in>>56 == 1
		i += 8
	}
	j, _ := c.scanBytes(b, i, len(b))
	return j
}

// scanBytes is scanValue one byte at a time over b[i:end]: it returns the
// position of the first bracket outside strings and true, or end and
// false.
func (c *textCheck) scanBytes(b []byte, i, end int) (int, bool) {
	for ; i < end; i++ {
		ch := b[i]
		switch {
		case c.esc:
			c.esc = false
		case c.inStr:
			c.esc = ch == '\\'
			c.inStr = ch != '"'
		case ch == '"':
			c.inStr = true
		case ch == '{' || ch == '}' || ch == '[' || ch == ']':
			return i, true
		}
	}
	return end, false
}

// str reads string bytes from b[i:] and returns where it stopped: after
// the closing quote (the state then says what follows), or at len(b).
func (c *textCheck) str(b []byte, i int) int {
	for i < len(b) {
		if c.esc {
			c.esc = false
			c.keyByte(b[i])
			i++
			continue
		}
		j := indexStringEnd(b, i)
		if c.state == tsKey {
			for _, ch := range b[i:j] {
				c.keyByte(ch)
			}
		}
		if j == len(b) {
			return j
		}
		if b[j] == '\\' {
			c.esc = true
			c.keyByte('\\')
			i = j + 1
			continue
		}
		if c.state == tsKey {
			c.state = tsColon
		} else {
			c.state = tsObjSep
		}
		return j + 1
	}
	return i
}

// keyByte adds a byte of a top-level key.
func (c *textCheck) keyByte(ch byte) {
	if c.state != tsKey {
		return
	}
	if len(c.key) < keyLook {
		c.key = append(c.key, ch)
	}
	c.keyLen++
}

// top handles a byte other than whitespace at a place the document's shape
// decides: between the top-level keys and values, and between events.
func (c *textCheck) top(ch byte, at int64) error {
	unexpected := func(want string) error {
		return &SyntaxError{Offset: at, Msg: fmt.Sprintf("expected %s, found %q", want, ch)}
	}
	switch c.state {
	case tsObjFirst, tsObjKey:
		switch {
		case ch == '"':
			c.state, c.key, c.keyLen = tsKey, c.key[:0], 0
		case ch == '}' && c.state == tsObjFirst:
			return c.pop(ch, at)
		default:
			return unexpected("a key in the top-level object")
		}
	case tsColon:
		if ch != ':' {
			return unexpected("':' after a key")
		}
		c.state = tsTopValue
	case tsTopValue:
		return c.topValue(ch, at)
	case tsObjSep:
		switch ch {
		case ',':
			c.state = tsObjKey
		case '}':
			return c.pop(ch, at)
		default:
			return unexpected("',' or '}' in the top-level object")
		}
	case tsEventFirst, tsEventWant:
		switch {
		case ch == '{':
			c.push(ch)
			c.state = tsValue
		case ch == ']' && c.state == tsEventFirst:
			return c.pop(ch, at)
		default:
			return unexpected("an event object")
		}
	case tsEventNext:
		switch ch {
		case ',':
			c.state = tsEventWant
		case ']':
			return c.pop(ch, at)
		default:
			return unexpected("',' or ']' after an event")
		}
	case tsDone:
		return &SyntaxError{Offset: at, Msg: "data after the end of the JSON document"}
	}
	return nil
}

// topValue handles the first byte of a top-level value.
func (c *textCheck) topValue(ch byte, at int64) error {
	if c.keyLen == len("traceEvents") && string(c.key) == "traceEvents" {
		switch {
		case c.seen:
			return &SyntaxError{Offset: at, Msg: "traceEvents appears twice in the top-level object"}
		case ch != '[':
			return fmt.Errorf("%w: traceEvents is not an array (it starts with %q at byte offset %d)", ErrNotTrace, ch, at)
		}
		c.seen = true
		c.push(ch)
		c.events, c.state = c.depth, tsEventFirst
		return nil
	}
	switch ch {
	case '{', '[':
		c.push(ch)
		c.state = tsValue
	case '"':
		c.state = tsTopString
	case ',', '}', ':', ']':
		return &SyntaxError{Offset: at, Msg: fmt.Sprintf("expected a value, found %q", ch)}
	default:
		c.state = tsScalar
	}
	return nil
}

// finish checks the end of the text, at offset end.
func (c *textCheck) finish(end int64) error {
	switch {
	case c.state != tsDone:
		return &SyntaxError{Offset: end, Msg: "unexpected end of input (truncated file?)", AtEnd: true}
	case c.object && !c.seen:
		return fmt.Errorf("%w: no traceEvents key in the top-level object", ErrNotTrace)
	}
	return nil
}
