package ingest

import "encoding/binary"

// Fast paths for events laid out the way Kineto's writer lays them out:
// "ph" and "cat" first, then "name", "pid", "tid", "ts", "dur" and "args".
// A fast path reads the members it expects, in that order, and stops at the
// first member it does not expect, between two members: the general key
// loop of event goes on from there with what was read so far. Whitespace
// between tokens may vary; the key, its colon and one space must be as
// Kineto writes them.

// kinetoXCat is how Kineto's writer starts a complete event.
const kinetoXCat = `"ph": "X", "cat": "`

// kinetoPrefix reads the ph and cat of an event that starts the way
// Kineto writes complete events, at i, without the general key loop: most
// events start so, and most of them are dropped right after. Other events
// are left to the general loop (i is returned unchanged).
func (s *scanner) kinetoPrefix(i int, ev *rawEvent) (next int, done bool, err error) {
	b := s.buf
	if len(b)-i <= len(kinetoXCat) || string(b[i:i+len(kinetoXCat)]) != kinetoXCat {
		return i, false, nil
	}
	j := i + len(kinetoXCat)
	q := closingQuote(b, j)
	if q < 0 {
		return 0, false, errShort
	}
	ev.ph, ev.cat = b[i+7:i+8], b[j:q]
	ev.class = classify(ev.cat)
	if ev.droppable() {
		ev.dropped = true
		next, err = s.skipRest(q + 1)
		return next, true, err
	}
	return s.after(q+1, "an event")
}

// kinetoBody reads the name, pid, tid, ts and dur members at i, as far as
// they come in that order, and drops the event as soon as its name says
// so. It returns the position of the next member (or after the event when
// done).
func (s *scanner) kinetoBody(i int, ev *rawEvent) (next int, done bool, err error) {
	if ev.class == catNone {
		return i, false, nil // metadata: left to the general loop
	}
	var ok bool
	if i, ok, err = s.textMember(i, `"name": `, &ev.name); !ok {
		return i, false, err
	}
	if ev.droppable() {
		ev.dropped = true
		next, err = s.skipRest(i)
		return next, true, err
	}
	for _, m := range [...]struct {
		key string
		dst *[]byte
	}{{`"pid": `, &ev.pid}, {`"tid": `, &ev.tid}, {`"ts": `, &ev.ts}, {`"dur": `, &ev.dur}} {
		if i, done, err = s.after(i, "an event"); done || err != nil {
			return i, done, err
		}
		if i, ok, err = s.textMember(i, m.key, m.dst); !ok {
			return i, false, err
		}
	}
	return s.after(i, "an event")
}

// textMember reads the member at i into dst if its key, with the colon and
// space after it, is key. ok is false, and i is returned unchanged, when
// the key differs or buf ends before it is known.
func (s *scanner) textMember(i int, key string, dst *[]byte) (next int, ok bool, err error) {
	b := s.buf
	j := i + len(key)
	if i+8 > len(b) || !hasKey(b[i:i+8], key) {
		return i, false, nil
	}
	if next, err = s.text(j, dst); err != nil {
		return 0, false, err
	}
	return next, true, nil
}

// hasKey reports whether w, eight bytes, starts with key, at most eight
// bytes, comparing words rather than bytes.
func hasKey(w []byte, key string) bool {
	var k [8]byte
	copy(k[:], key)
	mask := ^uint64(0) >> (64 - 8*len(key))
	return binary.LittleEndian.Uint64(w)&mask == binary.LittleEndian.Uint64(k[:])
}
