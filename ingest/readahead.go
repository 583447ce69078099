package ingest

import "bytes"

// What a chunk's worker reads of its kept events ahead of building, so
// that the one goroutine that builds the trace does as little per event
// as it can: the times (rawEvent.parseTimes), the args, the inputs of ops
// with shapes, and each name as an index into the chunk's distinct names.
// The builder then interns each distinct name and input type once a chunk
// (at its first use there, so that ids come out in the order the
// sequential parse gives them) and stores the inputs as read. Everything
// read ahead is a pure function of the event's text; where reading fails
// (bad args) nothing is kept and the builder reads the event as the
// sequential parse does, meeting the same error at the same event.

// readAhead is a chunk's state for reading ahead, reused from one use of
// the chunk to the next.
type readAhead struct {
	// inputs and dims hold the inputs of the chunk's ops with shapes:
	// the trace keeps them, so their memory is never reused; inputsAt and
	// dimsAt are the arena chunks made up to the last build (see built).
	inputs   arena[OpInput]
	dims     arena[int64]
	inputsAt int
	dimsAt   int
	names    localStrings // the chunk's distinct names, in order of first use
	types    localStrings // the distinct input types of its ops, likewise
}

// localStrings numbers the distinct strings of a chunk: raw holds each,
// as a slice of the chunk's text, at its index.
type localStrings struct {
	raw [][]byte
	at  map[string]int32
}

// noLocal is the local index of a name the builder interns each time it
// meets it (see readAhead.name).
const noLocal = -1

// id returns the index of b, adding it.
func (l *localStrings) id(b []byte) int32 {
	if i, ok := l.at[string(b)]; ok { // no allocation for a lookup
		return i
	}
	if l.at == nil {
		l.at = map[string]int32{}
	}
	i := int32(len(l.raw))
	l.raw = append(l.raw, b)
	l.at[string(b)] = i
	return i
}

// reset empties the table for the chunk's next use.
func (l *localStrings) reset() {
	clear(l.raw) // drop the slices of the released text
	l.raw = l.raw[:0]
	clear(l.at)
}

// reset readies r for the chunk's next use.
func (r *readAhead) reset() {
	r.names.reset()
	r.types.reset()
}

// read reads ahead what the builder would read of ev, a kept event of the
// chunk scanned by s: its times, args, name and, for an op with shapes, its
// inputs.
func (r *readAhead) read(s *scanner, ev *rawEvent) {
	ev.parseTimes()
	ev.local, ev.shaped = noLocal, false
	if string(ev.ph) != "X" || !keptClass(ev) {
		return
	}
	if !ev.argsParsed {
		if s.args(ev, &ev.a) != nil {
			return // the builder meets the error again, in order
		}
		ev.argsParsed = true
	}
	ev.local = r.name(ev.name)
	if ev.class == catCPUOp && shapedOpKind(ev.name) != 0 {
		a := &ev.a
		ev.inputs = readInputs(&r.inputs, &r.dims, a.inputDims, a.inputTypes, a.concrete, r.typeID)
		ev.shaped = len(r.types.raw) < 1<<16 // else local types did not fit a TypeID: read again
	}
}

// keptClass reports whether the builder keeps an X event of ev's class
// and name: the one test, builder.add's and the reading ahead's.
func keptClass(ev *rawEvent) bool {
	switch ev.class {
	case catKernel, catMemcpy, catMemset, catRuntime, catDriver,
		catUserAnnotation, catGPUAnnotation:
		return true
	case catCPUOp:
		return keptCPUOp(ev.name)
	case catPython:
		return keptPythonFunction(ev.name)
	}
	return false
}

// name returns the local index of an event name, or noLocal for a name
// the builder must intern at each use because interning it counts
// something (builder.intern: an escaped, overlong or unclean name).
func (r *readAhead) name(raw []byte) int32 {
	if len(raw) > maxName || bytes.IndexByte(raw, '\\') >= 0 {
		return noLocal
	}
	if i, ok := r.names.at[string(raw)]; ok {
		return i
	}
	if needsCleaning(string(raw)) {
		return noLocal
	}
	return r.names.id(raw)
}

// typeID returns the local index of an input type plus one, as a TypeID
// until the builder interns it (aheadInputs); 0 stays the empty type of
// an input no type was read for.
func (r *readAhead) typeID(raw []byte) TypeID {
	return TypeID(r.types.id(raw) + 1)
}

// chunkNames is the builder's map from a chunk's local names and types to
// the trace's ids, filled at each one's first use.
type chunkNames struct {
	ahead *readAhead
	names []StrID
	types []TypeID
	known []bool // of types
}

// unresolved marks a local name not interned yet.
const unresolved = ^StrID(0)

// use readies m for building chunk r.
func (m *chunkNames) use(r *readAhead) {
	m.ahead = r
	m.names = m.names[:0]
	for range r.names.raw {
		m.names = append(m.names, unresolved)
	}
	m.types = append(m.types[:0], make([]TypeID, len(r.types.raw))...)
	m.known = append(m.known[:0], make([]bool, len(r.types.raw))...)
}

// localName returns the trace's id of ev's name, read ahead, interning it
// at its first use in the chunk.
func (p *builder) localName(ev *rawEvent) StrID {
	m := &p.local
	if id := m.names[ev.local]; id != unresolved {
		return id
	}
	id := p.intern(m.ahead.names.raw[ev.local])
	m.names[ev.local] = id
	return id
}

// aheadInputs returns the inputs of ev, an op with shapes read ahead, with
// their types interned in the trace.
func (p *builder) aheadInputs(ev *rawEvent) []OpInput {
	m := &p.local
	sh := &p.t.Shapes
	if sh.Types == nil {
		sh.Types = NewStrings()
	}
	for i := range ev.inputs {
		in := &ev.inputs[i]
		if in.Type == 0 {
			continue
		}
		l := in.Type - 1
		if !m.known[l] {
			m.types[l], m.known[l] = sh.typeID(m.ahead.types.raw[l]), true
		}
		in.Type = m.types[l]
	}
	return ev.inputs
}

// built adds the arena chunks a chunk's reading ahead made since the last
// build to the trace's shapes, for their size.
func (p *builder) built(r *readAhead) {
	p.t.Shapes.inputs.chunks += r.inputs.chunks - r.inputsAt
	p.t.Shapes.dims.chunks += r.dims.chunks - r.dimsAt
	r.inputsAt, r.dimsAt = r.inputs.chunks, r.dims.chunks
	p.local.ahead = nil
}
