package ingest

import "kinetoscope/ingest/jsonscan"

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
	// timed is set when ts and dur were parsed ahead (parseTimes, by the
	// worker of a chunk) into start and durNS, and whether they parsed.
	timed          bool
	start, durNS   int64
	startOK, durOK bool
	// Read ahead by a chunk's worker (readAhead.read): as is what the
	// event is kept as and opKind its kind of op with shapes; local is
	// the index of name among the chunk's names and thread of (pid, tid)
	// among its threads (noLocal: none); shaped says inputs holds the
	// inputs of an op with shapes, their types local.
	as     keptAs
	opKind OpKind
	local  int32
	thread int32
	shaped bool
	inputs []OpInput
}

// parseTimes parses ts and dur ahead, for times.
func (ev *rawEvent) parseTimes() {
	ev.start, ev.startOK = jsonscan.ParseMicrosNS(ev.ts)
	ev.durNS, ev.durOK = jsonscan.ParseMicrosNS(ev.dur)
	ev.timed = true
}

// times returns ts and dur in nanoseconds and whether each parsed: as
// parsed ahead where they were, else parsed now.
func (ev *rawEvent) times() (start, dur int64, startOK, durOK bool) {
	if ev.timed {
		return ev.start, ev.durNS, ev.startOK, ev.durOK
	}
	start, startOK = jsonscan.ParseMicrosNS(ev.ts)
	dur, durOK = jsonscan.ParseMicrosNS(ev.dur)
	return start, dur, startOK, durOK
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
	ev.class, ev.dropped, ev.argsParsed, ev.args, ev.argsEnd, ev.timed = catNone, false, false, -1, 0, false
	ev.as, ev.local, ev.thread, ev.shaped, ev.inputs = keptUnread, noLocal, noLocal, false, nil
	i, done, err := s.Open(i, "an event object")
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
		if key, i, err = s.Key(i); err != nil {
			return 0, err
		}
		if i, err = s.eventField(key, i, ev); err != nil {
			return 0, err
		}
		if ev.droppable() {
			ev.dropped = true
			return s.SkipRest(i)
		}
		i, done, err = s.After(i, "an event")
	}
	return i, err
}

// eventField parses the value at i for key into ev.
func (s *scanner) eventField(key []byte, i int, ev *rawEvent) (int, error) {
	switch string(key) {
	case "ph":
		return s.Text(i, &ev.ph)
	case "cat":
		next, err := s.Text(i, &ev.cat)
		ev.class = classify(ev.cat)
		return next, err
	case "name":
		return s.Text(i, &ev.name)
	case "pid":
		return s.Text(i, &ev.pid)
	case "tid":
		return s.Text(i, &ev.tid)
	case "ts":
		return s.Text(i, &ev.ts)
	case "dur":
		return s.Text(i, &ev.dur)
	case "args":
		if s.Buf[i] == '{' && ev.class != catNone {
			// Kept categories: parse args in the same pass.
			next, err := s.parseArgs(i, ev.class, &ev.a)
			ev.args, ev.argsEnd, ev.argsParsed = i, next, err == nil
			return next, err
		}
		if s.Buf[i] == '{' {
			next, err := s.SkipContainer(i)
			ev.args, ev.argsEnd = i, next
			return next, err
		}
	}
	return s.Skip(i)
}
