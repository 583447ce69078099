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
	threads  localThreads // the distinct (pid, tid) of its events kept on a thread
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

// localThreads numbers the distinct (pid, tid) pairs of a chunk: pid and
// tid hold each pair's raw text, slices of the chunk, at its index.
type localThreads struct {
	pid, tid [][]byte
	at       map[string]int32 // by pid, a zero byte, tid
	key      []byte           // the last key looked up
	last     int32            // its index
}

// id returns the index of (pid, tid), adding it.
func (l *localThreads) id(pid, tid []byte) int32 {
	if k := l.key; len(k) == len(pid)+1+len(tid) && len(k) > 0 && k[len(pid)] == 0 &&
		bytes.Equal(k[:len(pid)], pid) && bytes.Equal(k[len(pid)+1:], tid) {
		return l.last
	}
	l.key = append(append(append(l.key[:0], pid...), 0), tid...)
	i, ok := l.at[string(l.key)]
	if !ok {
		if l.at == nil {
			l.at = map[string]int32{}
		}
		i = int32(len(l.pid))
		l.pid, l.tid = append(l.pid, pid), append(l.tid, tid)
		l.at[string(l.key)] = i
	}
	l.last = i
	return i
}

// reset empties the table for the chunk's next use.
func (l *localThreads) reset() {
	clear(l.pid) // drop the slices of the released text
	clear(l.tid)
	l.pid, l.tid, l.key = l.pid[:0], l.tid[:0], l.key[:0]
	clear(l.at)
}

// reset readies r for the chunk's next use.
func (r *readAhead) reset() {
	r.names.reset()
	r.types.reset()
	r.threads.reset()
}

// read reads ahead what the builder would read of ev, a kept event of the
// chunk scanned by s: its times, what it is kept as, its args, name and
// thread and, for an op with shapes, its inputs.
func (r *readAhead) read(s *scanner, ev *rawEvent) {
	ev.parseTimes()
	ev.local, ev.shaped, ev.thread = noLocal, false, noLocal
	if ev.as, ev.opKind = keptAsOf(ev); ev.as == keptNothing {
		return
	}
	if !ev.argsParsed {
		if s.args(ev, &ev.a) != nil {
			return // the builder meets the error again, in order
		}
		ev.argsParsed = true
	}
	ev.local = r.name(ev.name)
	if ev.as.onThread() {
		ev.thread = r.threads.id(ev.pid, ev.tid)
	}
	if ev.as == keptShapedOp {
		a := &ev.a
		ev.inputs = readInputs(&r.inputs, &r.dims, a.inputDims, a.inputTypes, a.concrete, r.typeID)
		ev.shaped = len(r.types.raw) < 1<<16 // else local types did not fit a TypeID: read again
	}
}

// keptAs is what the builder keeps of an event: the column an X event of
// a kept class and name goes to, or nothing.
type keptAs uint8

// What an event is kept as. keptUnread: not worked out yet (the parse in
// order works it out in builder.add, a chunk's worker in read).
const (
	keptUnread        keptAs = iota
	keptNothing              // not an X event of a kept class and name
	keptGPU                  // kernel, memcpy, memset: Trace.GPU
	keptLaunch               // runtime or driver call: Trace.Launches
	keptModule               // python function of a module: Trace.Modules
	keptPythonCall           // the other kept python functions: Trace.PythonCalls
	keptAnnotation           // user annotation: Trace.Annotations
	keptGPUAnnotation        // GPU user annotation: Trace.Annotations
	keptShapedOp             // op with shapes: Trace.Shapes
	keptEmbedding            // embedding lookup: Trace.Embeddings
	keptCollectiveOp         // serving engine's collective op: Trace.CollectiveOps
	keptCommOp               // record_param_comms: Trace.CommOps
)

// onThread says whether an event kept as k keeps its CPU thread.
func (k keptAs) onThread() bool {
	return k != keptNothing && k != keptGPU && k != keptGPUAnnotation
}

// keptAsOf returns what the builder keeps of ev, by its phase, class and
// name, and for an op with shapes its kind: the one decision, builder.add's
// and the reading ahead's.
func keptAsOf(ev *rawEvent) (keptAs, OpKind) {
	if string(ev.ph) != "X" {
		return keptNothing, 0
	}
	switch ev.class {
	case catKernel, catMemcpy, catMemset:
		return keptGPU, 0
	case catRuntime, catDriver:
		return keptLaunch, 0
	case catUserAnnotation:
		return keptAnnotation, 0
	case catGPUAnnotation:
		return keptGPUAnnotation, 0
	case catPython:
		return pythonFunctionKeptAs(ev.name), 0
	case catCPUOp:
		return cpuOpKeptAs(ev.name)
	}
	return keptNothing, 0
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
	ahead   *readAhead
	names   []StrID
	types   []TypeID
	known   []bool  // of types
	threads []int32 // indexes into Trace.Threads, -1 until first used
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
	m.threads = m.threads[:0]
	for range r.threads.pid {
		m.threads = append(m.threads, -1)
	}
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

// eventThread returns the index in Trace.Threads of ev's thread: read
// ahead, it is looked up at its first use in the chunk.
func (p *builder) eventThread(ev *rawEvent) int32 {
	if ev.thread == noLocal {
		return p.thread(ev.pid, ev.tid)
	}
	m := &p.local
	if i := m.threads[ev.thread]; i >= 0 {
		return i
	}
	i := p.thread(m.ahead.threads.pid[ev.thread], m.ahead.threads.tid[ev.thread])
	m.threads[ev.thread] = i
	return i
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
