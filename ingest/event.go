package ingest

import "encoding/binary"

// rawEvent is one trace event as found in the input: slices into the
// scanner's buffer, valid until the next block is fetched. Strings are raw
// (escapes not decoded), numbers are their text.
type rawEvent struct {
	ph, cat, name, pid, tid, ts, dur []byte
	class                            category // of cat, once cat is read
	dropped                          bool     // the body was skipped: only cat is known
	argsParsed                       bool     // args were parsed into a during the scan
	a                                argVals
	args, argsEnd                    int // position of the args object in buf; args is -1 if none
}

// droppable reports whether what is known of ev already says the reader
// keeps nothing of it but its category.
func (ev *rawEvent) droppable() bool {
	switch ev.class {
	case catPython:
		return ev.name != nil && !keptPythonFunction(ev.name)
	case catAC2G, catFwdBwd, catAsyncCPUToGPU, catCPUInstant, catOverhead, catTrace, catOther:
		return true
	case catCPUOp:
		return ev.name != nil && !keptCPUOp(ev.name)
	}
	return false
}

// event parses the event object at i into ev.
func (s *scanner) event(i int, ev *rawEvent) (int, error) {
	ev.ph, ev.cat, ev.name, ev.pid, ev.tid, ev.ts, ev.dur = nil, nil, nil, nil, nil, nil, nil
	ev.class, ev.dropped, ev.argsParsed, ev.args, ev.argsEnd = catNone, false, false, -1, 0
	i, done, err := s.open(i, "an event object")
	if err == nil && !done {
		i, done, err = s.kinetoPrefix(i, ev)
		if ev.dropped {
			return i, err
		}
	}
	if err == nil && !done && ev.ph == nil {
		i, done, err = s.kinetoFlow(i, ev)
		if ev.dropped {
			return i, err
		}
	}
	if err == nil && !done {
		i, done, err = s.kinetoBody(i, ev)
		if ev.dropped {
			return i, err
		}
	}
	for !done && err == nil {
		var key []byte
		if key, i, err = s.key(i); err != nil {
			return 0, err
		}
		if i, err = s.eventField(key, i, ev); err != nil {
			return 0, err
		}
		if ev.droppable() {
			ev.dropped = true
			return s.skipRest(i)
		}
		i, done, err = s.after(i, "an event")
	}
	return i, err
}

// open checks for an object at i and returns the position of its first
// member, or done and the position after it when it is empty.
func (s *scanner) open(i int, what string) (next int, done bool, err error) {
	b := s.buf
	if i >= len(b) {
		return 0, false, errShort
	}
	if b[i] != '{' {
		return 0, false, s.unexpected(i, what)
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
	i = s.ws(i + 1)
	if i >= len(b) {
		return 0, false, errShort
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

// after reads what follows a member's value at i: a comma, and it returns
// the position of the next member; or the closing brace, and it returns
// done and the position after it.
func (s *scanner) after(i int, what string) (next int, done bool, err error) {
	b := s.buf
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
	i = s.ws(i)
	if i >= len(b) {
		return 0, false, errShort
	}
	switch b[i] {
	case ',':
		return s.ws(i + 1), false, nil
	case '}':
		return i + 1, true, nil
	}
	return 0, false, s.unexpected(i, "',' or '}' in "+what)
}

// key parses an object key and the colon after it, and returns the raw key
// and the position of the value.
func (s *scanner) key(i int) ([]byte, int, error) {
	b := s.buf
	if i >= len(b) {
		return nil, 0, errShort
	}
	if b[i] != '"' {
		return nil, 0, s.unexpected(i, "an object key")
	}
	q := closingQuote(b, i+1)
	if q < 0 {
		return nil, 0, errShort
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
	i = s.ws(q + 1)
	if i >= len(b) {
		return nil, 0, errShort
	}
	if b[i] != ':' {
		return nil, 0, s.unexpected(i, "':' after an object key")
	}
	i = s.ws(i + 1)
	if i >= len(b) {
		return nil, 0, errShort
	}
	return key, i, nil
}

// eventField parses the value at i for key into ev.
func (s *scanner) eventField(key []byte, i int, ev *rawEvent) (int, error) {
	switch string(key) {
	case "ph":
		return s.text(i, &ev.ph)
	case "cat":
		next, err := s.text(i, &ev.cat)
		ev.class = classify(ev.cat)
		return next, err
	case "name":
		return s.text(i, &ev.name)
	case "pid":
		return s.text(i, &ev.pid)
	case "tid":
		return s.text(i, &ev.tid)
	case "ts":
		return s.text(i, &ev.ts)
	case "dur":
		return s.text(i, &ev.dur)
	case "args":
		if s.buf[i] == '{' && ev.class != catNone {
			// Kept categories: parse args in the same pass.
			next, err := s.parseArgs(i, ev.class, &ev.a)
			ev.args, ev.argsEnd, ev.argsParsed = i, next, err == nil
			return next, err
		}
		if s.buf[i] == '{' {
			next, err := s.skipContainer(i)
			ev.args, ev.argsEnd = i, next
			return next, err
		}
	}
	return s.skip(i)
}

// text parses the scalar at i into dst: a string's raw content or a
// literal's text. An object or array is skipped and leaves dst nil.
func (s *scanner) text(i int, dst *[]byte) (int, error) {
	b := s.buf
	if i >= len(b) {
		return 0, errShort
	}
	switch b[i] {
	case '"':
		raw, next, err := s.str(i)
		*dst = raw
		return next, err
	case '{', '[':
		*dst = nil
		return s.skipContainer(i)
	case 'n': // null
		*dst = nil
		return s.skip(i)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		raw, next, err := s.literal(i)
		*dst = raw
		return next, err
	}
	if next, err := s.skip(i); err != nil {
		return 0, err
	} else {
		*dst = b[i:next]
		return next, nil
	}
}
