package ingest

import (
	"bytes"

	"kinetoscope/ingest/jsonscan"
)

// Fast paths for events laid out the way Kineto's writer lays them out:
// "ph" and "cat" first, then "name", "pid", "tid", "ts", "dur" and "args".
// A fast path reads the members it expects, in that order, and stops at the
// first member it does not expect, between two members: the general key
// loop of event goes on from there with what was read so far. The layout is
// a hint: each key is matched as Kineto writes it (`"name": `) or as compact
// JSON writes it (`"name":`), whitespace between tokens may vary, and
// anything else is left to the general loop.

// The ways an event that starts with the phase X and its category is
// written: by Kineto's writer and as compact JSON. The category's value
// follows.
const (
	kinetoXCat  = `"ph": "X", "cat": "`
	compactXCat = `"ph":"X","cat":"`
)

// kinetoPrefix reads the ph and cat of an event that starts the way
// Kineto writes complete events (or the same compactly), at i, without the
// general key loop: most events start so, and most of them are dropped
// right after. Other events are left to the general loop (i is returned
// unchanged).
func (s *scanner) kinetoPrefix(i int, ev *rawEvent) (next int, done bool, err error) {
	b := s.Buf
	j := jsonscan.SkipEither(b, i, kinetoXCat, compactXCat)
	if j < 0 {
		return i, false, nil
	}
	q := jsonscan.ClosingQuote(b, j)
	if q < 0 {
		return 0, false, jsonscan.ErrShort
	}
	ev.ph, ev.cat = phaseX, b[j:q]
	ev.class = classify(ev.cat)
	if ev.class == catPython || ev.class == catCPUOp {
		return s.eventName(q+1, ev)
	}
	if ev.droppable() {
		ev.dropped = true
		next, err = s.SkipRest(q + 1)
		return next, true, err
	}
	return s.After(q+1, "an event")
}

// The ways the name member follows the category, up to the name's first
// byte: by Kineto's writer and as compact JSON.
const (
	kinetoNameSep  = `, "name": "`
	compactNameSep = `,"name":"`
)

// eventName reads the name of a python_function or cpu_op event at i,
// right after its category, when it comes next the way Kineto's writer or
// compact JSON writes it, and drops the event unless keptPythonFunction or
// keptCPUOp keeps it: most events of a trace are of these categories, and
// most of them are dropped by name. Otherwise it returns the position of
// the next member, as kinetoPrefix does.
func (s *scanner) eventName(i int, ev *rawEvent) (next int, done bool, err error) {
	b := s.Buf
	j := jsonscan.SkipEither(b, i, kinetoNameSep, compactNameSep)
	if j < 0 {
		return s.After(i, "an event")
	}
	var q int
	if ev.class == catPython {
		// Python names are long ("FILE(LINE): FUNCTION"): one
		// bytes.IndexByte finds their end.
		if q = bytes.IndexByte(b[j:], '"') + j; q > j && b[q-1] == '\\' {
			q = jsonscan.ClosingQuote(b, j) // an escaped quote: read the string properly
		}
	} else {
		q = jsonscan.ClosingQuote(b, j)
	}
	if q < j {
		return 0, false, jsonscan.ErrShort
	}
	ev.name = b[j:q]
	if ev.droppable() {
		ev.dropped = true
		next, err = s.SkipRest(q + 1)
		return next, true, err
	}
	return s.After(q+1, "an event")
}

// phaseX is the phase of complete events. It is never written.
var phaseX = []byte("X")

// kinetoBody reads the name, pid, tid, ts, dur and args members at i, as
// far as they come in that order, and drops the event as soon as its name
// says so. It returns the position of the next member (or after the event
// when done).
func (s *scanner) kinetoBody(i int, ev *rawEvent) (next int, done bool, err error) {
	if ev.class == catNone {
		return i, false, nil // metadata: left to the general loop
	}
	var ok bool
	if i, ok, err = s.textMember(i, keyName, &ev.name); !ok {
		return i, false, err
	}
	if ev.droppable() {
		ev.dropped = true
		next, err = s.SkipRest(i)
		return next, true, err
	}
	ms := []member{{keyPid, &ev.pid}, {keyTid, &ev.tid}, {keyTs, &ev.ts}, {keyDur, &ev.dur}}
	n := 0
	i, n = s.numberMembers(i, ms)
	if v := jsonscan.MemberStart(s.Buf, i, keyArgs); n == len(ms) && v >= 0 && s.Buf[v] == '{' {
		// The args, next in Kineto's order: parsed as the general loop
		// parses them, without its key parse.
		next, err = s.parseArgs(v, ev.class, &ev.a)
		ev.args, ev.argsEnd, ev.argsParsed = v, next, err == nil
		if err != nil {
			return 0, false, err
		}
		return s.After(next, "an event")
	}
	if i, done, err = s.After(i, "an event"); done || err != nil || n == len(ms) {
		return i, done, err
	}
	i, _, done, err = s.members(i, ms[n:])
	return i, done, err
}

// numberMembers reads the members after the separator at i as far as
// their keys are those of ms, in that order, and their values unsigned
// decimal numbers followed by a comma, the way Kineto's writer and
// compact JSON write an event's pid, tid, ts and dur (see jsonscan.MemberStart and
// jsonscan.UnsignedEnd). It returns the position of the separator after the last
// one read, and how many it read. The general parse reads such members to
// the same values.
func (s *scanner) numberMembers(i int, ms []member) (next, n int) {
	b := s.Buf
	for _, m := range ms {
		v := jsonscan.MemberStart(b, i, m.key)
		if v < 0 {
			break
		}
		e := jsonscan.UnsignedEnd(b, v, true)
		if e < 0 {
			break
		}
		*m.dst, i = b[v:e], e
		n++
	}
	return i, n
}

// kinetoFlow reads an event that starts the way Kineto writes flow events
// (a one-letter phase other than X and M, then id, pid, tid, ts and cat):
// it is never kept, so it is dropped once its category is known. An event
// that starts otherwise is left to the general loop (i is returned
// unchanged); one that goes on otherwise is left to it after its phase.
func (s *scanner) kinetoFlow(i int, ev *rawEvent) (next int, done bool, err error) {
	if next, ok := s.flowEvent(i, ev); ok {
		next, err = s.SkipRest(next)
		return next, true, err
	}
	b := s.Buf
	j := i + keyPh.Len()
	if i+8 > len(b) || !keyPh.At(b[i:]) {
		return i, false, nil
	}
	if b[j] == ' ' {
		j++
	}
	if j+3 > len(b) || b[j] != '"' || b[j+2] != '"' || b[j+1] == 'X' || b[j+1] == 'M' || b[j+1] < ' ' || b[j+1] == '\\' {
		return i, false, nil
	}
	ev.ph = b[j+1 : j+2]
	if i, done, err = s.After(j+3, "an event"); done || err != nil {
		return i, done, err
	}
	if i+8 > len(b) || !keyID.At(b[i:]) {
		return i, false, nil
	}
	if i, err = s.Skip(s.WS(i + keyID.Len())); err != nil {
		return 0, false, err
	}
	if i, done, err = s.After(i, "an event"); done || err != nil {
		return i, done, err
	}
	var n int
	ms := []member{{keyPid, &ev.pid}, {keyTid, &ev.tid}, {keyTs, &ev.ts}, {keyCat, &ev.cat}}
	if i, n, done, err = s.members(i, ms); n < len(ms) || done || err != nil {
		if ev.cat != nil {
			ev.class = classify(ev.cat)
		}
		return i, done, err
	}
	if ev.class = classify(ev.cat); ev.droppable() {
		ev.dropped = true
		next, err = s.SkipRest(i)
		return next, true, err
	}
	return i, false, nil
}

// member is a key and where its value goes.
type member struct {
	key jsonscan.MemberKey
	dst *[]byte
}

// members reads the members at i as far as their keys are those of ms, in
// that order, and the separator after each. It returns the position after
// them, how many it read, and done when the object ended.
func (s *scanner) members(i int, ms []member) (next, n int, done bool, err error) {
	for _, m := range ms {
		var ok bool
		if i, ok, err = s.textMember(i, m.key, m.dst); !ok {
			return i, n, false, err
		}
		n++
		if i, done, err = s.After(i, "an event"); done || err != nil {
			return i, n, done, err
		}
	}
	return i, n, false, nil
}

// textMember reads the member at i into dst if its key, with the colon
// after it, is key. ok is false, and i is returned unchanged, when the key
// differs or buf ends before it is known.
func (s *scanner) textMember(i int, key jsonscan.MemberKey, dst *[]byte) (next int, ok bool, err error) {
	b := s.Buf
	if i+8 > len(b) || !key.At(b[i:]) {
		return i, false, nil
	}
	j := i + key.Len()
	if j+1 < len(b) && b[j] == ' ' && b[j+1] > ' ' {
		j++ // Kineto's one space
	} else {
		j = s.WS(j)
	}
	if next, err = s.Text(j, dst); err != nil {
		return 0, false, err
	}
	return next, true, nil
}

// The keys of the members the fast paths read. They are never written
// after initialization.
var (
	keyPh   = jsonscan.NewMemberKey(`"ph":`)
	keyID   = jsonscan.NewMemberKey(`"id":`)
	keyName = jsonscan.NewMemberKey(`"name":`)
	keyPid  = jsonscan.NewMemberKey(`"pid":`)
	keyTid  = jsonscan.NewMemberKey(`"tid":`)
	keyTs   = jsonscan.NewMemberKey(`"ts":`)
	keyDur  = jsonscan.NewMemberKey(`"dur":`)
	keyCat  = jsonscan.NewMemberKey(`"cat":`)
	keyArgs = jsonscan.NewMemberKey(`"args":`)
)

// flowEvent reads, in one pass, the start of a flow event laid out the way
// Kineto writes it or as compact JSON: a one-letter phase other than X and
// M, then id, pid, tid and ts with unsigned numbers (ts with a fraction or
// not), then cat. When the category says the event is dropped, it sets
// ev's phase, category and class, marks it dropped and returns the
// position after the category (ok). Anything else, and an end of buf
// before the category's end, leaves ev as it was and returns false: the
// general parse of kinetoFlow reads the event from i, and reads such text
// to the same result.
func (s *scanner) flowEvent(i int, ev *rawEvent) (next int, ok bool) {
	b := s.Buf
	j := i + keyPh.Len()
	if j+4 > len(b) || !keyPh.At(b[i:]) {
		return 0, false
	}
	if b[j] == ' ' {
		j++
	}
	at, ph := j+1, b[j+1]
	if b[j] != '"' || b[j+2] != '"' || ph == 'X' || ph == 'M' || ph < ' ' || ph == '\\' || ph == '"' {
		return 0, false
	}
	j += 3
	if j = jsonscan.IntEnd(b, jsonscan.MemberStart(b, j, keyID)); j < 0 {
		return 0, false
	}
	if j = jsonscan.IntEnd(b, jsonscan.MemberStart(b, j, keyPid)); j < 0 {
		return 0, false
	}
	if j = jsonscan.IntEnd(b, jsonscan.MemberStart(b, j, keyTid)); j < 0 {
		return 0, false
	}
	if j = jsonscan.MemberStart(b, j, keyTs); j < 0 {
		return 0, false
	}
	if j = jsonscan.UnsignedEnd(b, j, true); j < 0 {
		return 0, false
	}
	if j = jsonscan.MemberStart(b, j, keyCat); j < 0 || j >= len(b) || b[j] != '"' {
		return 0, false
	}
	q := jsonscan.IndexQuote(b, j+1)
	if q < 0 || b[q-1] == '\\' {
		return 0, false
	}
	cat := b[j+1 : q]
	c := classify(cat)
	switch c {
	case catAC2G, catFwdBwd, catAsyncCPUToGPU, catCPUInstant, catOverhead, catTrace, catOther:
	default: // kept, or no category: left to the general parse
		return 0, false
	}
	if q+1 >= len(b) || b[q+1] != ',' {
		return 0, false // the general parse checks what follows
	}
	ev.ph, ev.cat, ev.class, ev.dropped = b[at:at+1], cat, c, true
	return q + 1, true
}
