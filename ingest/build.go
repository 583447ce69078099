package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"kinetoscope/ingest/jsonscan"
)

// builder turns raw events into a Trace.
type builder struct {
	t          *Trace
	threads    map[string]int32 // pid "\x00" tid -> index in t.Threads
	key        []byte           // the last thread key looked up
	lastThread int32            // its index
	ev         rawEvent
	names      [numCategories]lastName // the last name interned, by category
	cats       [numCategories]int64
	other      map[string]*int64 // counts of categories not in cats
	badTimes   int64             // kept-category events whose ts or dur did not parse
	negDurs    int64             // kept-category events with a negative dur
	long       longValue         // events too long to hold, skipped
	cleaned    int64             // names stored cleaned
	cut        int64             // names cut to maxName
	local      chunkNames        // the chunk being built's names, read ahead
	// inChunks is set while chunks are built on a goroutine of their own
	// (parallelEvents), chunkEnd then the input offset where the last
	// one built ends.
	inChunks bool
	chunkEnd int64
}

// newBuilder returns a builder for the trace read from path.
func newBuilder(path string) *builder {
	t := &Trace{
		Path:         path,
		Rank:         -1,
		RankSource:   "unknown",
		Strings:      NewStrings(),
		ProcessNames: map[string]string{},
	}
	t.Meta.Distributed.Rank = -1
	return &builder{t: t, threads: map[string]int32{}, other: map[string]*int64{}}
}

// add counts the event in ev and keeps what the model needs.
func (p *builder) add(s *scanner, ev *rawEvent) error {
	c := ev.class
	p.countEvents(c, ev.cat, 1)
	if ev.dropped {
		return nil
	}
	if c == catNone {
		if string(ev.ph) == "M" {
			return p.metadataEvent(s, ev)
		}
		return nil
	}
	as, kind := ev.as, ev.opKind
	if as == keptUnread {
		as, kind = keptAsOf(ev)
	}
	if as == keptNothing {
		return nil
	}
	start, dur, ok1, ok2 := ev.times()
	if !ok1 || !ok2 || start > math.MaxInt64-max(dur, 0) {
		p.badTimes++
		return nil
	}
	if dur < 0 {
		p.negDurs++
		return nil
	}
	if err := s.args(ev, &ev.a); err != nil {
		return err
	}
	return p.keep(as, kind, ev, start, dur)
}

// maxCategories bounds the distinct categories counted by name; the events
// of further ones are counted under otherCategories.
const maxCategories = 1024

// otherCategories is the category name that events of categories past
// maxCategories are counted under.
const otherCategories = "(other categories)"

// countEvents counts n events of class c; cat is their category, for
// catOther. It is inlined into add, once an event.
func (p *builder) countEvents(c category, cat []byte, n int64) {
	p.t.Counts.Events += n
	if c == catOther {
		p.countOther(cat, n)
		return
	}
	p.cats[c] += n
}

// countOther counts n events of the category cat, of no known class. It
// is kept out of line so that countEvents is inlined into add.
//
//go:noinline
func (p *builder) countOther(cat []byte, n int64) {
	if k, ok := p.other[string(cat)]; ok { // no allocation for a lookup
		*k += n
		return
	}
	p.newCategory(cat, n)
}

// newCategory counts the first n events of a category not counted yet.
func (p *builder) newCategory(cat []byte, n int64) {
	key := string(cat)
	if len(p.other) >= maxCategories {
		key = otherCategories
		if k, ok := p.other[key]; ok {
			*k += n
			return
		}
		p.warn("more than %d distinct categories: the events of the others are counted under %q", maxCategories, key)
	}
	p.other[key] = new(n)
}

// keep stores an X event kept as as (kind: of an op with shapes).
func (p *builder) keep(as keptAs, kind OpKind, ev *rawEvent, start, dur int64) error {
	a := &ev.a
	switch as {
	case keptGPU:
		p.gpuEvent(ev.class, ev, start, dur)
	case keptLaunch:
		if !a.hasCorr {
			return nil
		}
		kind := LaunchRuntime
		if ev.class == catDriver {
			kind = LaunchDriver
		}
		p.t.Launches.Append(Launch{Start: start, Dur: dur, Correlation: a.correlation,
			ExternalID: a.external, Name: p.name(ev), Thread: p.eventThread(ev), Kind: kind})
	case keptModule:
		p.t.Modules.Append(Annotation{Start: start, Dur: dur, Name: p.name(ev), Thread: p.eventThread(ev)})
	case keptPythonCall:
		p.t.PythonCalls.Append(Annotation{Start: start, Dur: dur, Name: p.name(ev), Thread: p.eventThread(ev)})
	case keptAnnotation:
		p.t.Annotations.Append(Annotation{Start: start, Dur: dur, Name: p.name(ev), Thread: p.eventThread(ev)})
	case keptGPUAnnotation:
		stream := a.stream
		if !a.hasStream {
			stream, _ = jsonscan.ParseInt(ev.tid)
		}
		p.t.Annotations.Append(Annotation{Start: start, Dur: dur, Name: p.name(ev),
			Thread: int32(stream), GPU: true})
	case keptShapedOp:
		op := ShapedOp{Start: start, Dur: dur, ExternalID: a.external, Name: p.name(ev),
			Thread: p.eventThread(ev), Kind: kind}
		if ev.shaped {
			op.Inputs = p.aheadInputs(ev)
			p.t.Shapes.addOp(op)
		} else {
			p.t.Shapes.add(op, a.inputDims, a.inputTypes, a.concrete)
		}
	case keptEmbedding:
		p.t.Embeddings.Append(Embedding{Start: start, Dur: dur, Thread: p.eventThread(ev),
			Tokens: embeddingTokens(a.inputDims)})
	case keptCollectiveOp:
		p.t.CollectiveOps.Append(Annotation{Start: start, Dur: dur, Name: p.name(ev), Thread: p.eventThread(ev)})
	case keptCommOp:
		p.t.CommOps.Append(CommOp{Start: start, Dur: dur, ExternalID: a.external,
			Thread: p.eventThread(ev), Args: p.collective(&a.coll)})
	}
	return nil
}

// gpuEvent stores a kernel, memcpy or memset.
func (p *builder) gpuEvent(c category, ev *rawEvent, start, dur int64) {
	a := &ev.a
	g := GPUEvent{Start: start, Dur: dur, Correlation: a.correlation, ExternalID: a.external,
		Bytes: a.bytes, Name: p.name(ev), Stream: int32(a.stream), Device: int16(a.device),
		Kind: KindKernel, Coll: NoCollective, Grid: a.grid, Block: a.block}
	switch c {
	case catMemcpy:
		g.Kind = KindMemcpy
	case catMemset:
		g.Kind = KindMemset
	}
	if !a.hasDev {
		d, _ := jsonscan.ParseInt(ev.pid)
		g.Device = int16(d)
	}
	if !a.hasStream {
		st, _ := jsonscan.ParseInt(ev.tid)
		g.Stream = int32(st)
	}
	if a.coll.present {
		g.Coll = int32(len(p.t.Collectives))
		p.t.Collectives = append(p.t.Collectives, p.collective(&a.coll))
	}
	p.t.GPU.Append(g)
}

// collective interns the collective args.
func (p *builder) collective(c *rawColl) CollectiveArgs {
	return CollectiveArgs{
		Name: p.intern(c.name), InNelems: c.in, OutNelems: c.out,
		Dtype: p.intern(c.dtype), GroupSize: int32(c.group),
		PGName: p.intern(c.pg), PGRanks: p.intern(c.ranks), SeqNum: c.seq,
	}
}

// metadataEvent handles process_name and thread_name events.
func (p *builder) metadataEvent(s *scanner, ev *rawEvent) error {
	kind := string(ev.name)
	if kind != "process_name" && kind != "thread_name" {
		return nil
	}
	if err := s.args(ev, &ev.a); err != nil {
		return err
	}
	name := p.t.Strings.Get(p.intern(ev.a.name))
	if kind == "process_name" {
		p.t.ProcessNames[string(ev.pid)] = name
	} else {
		p.t.Threads[p.thread(ev.pid, ev.tid)].Name = name
	}
	return nil
}

// lastName is a raw name and its id: consecutive events of a category
// often share their name (cudaLaunchKernel), and a comparison is cheaper
// than a lookup.
type lastName struct {
	raw []byte
	id  StrID
}

// name interns the event's name.
func (p *builder) name(ev *rawEvent) StrID {
	if ev.local != noLocal {
		return p.localName(ev)
	}
	last := &p.names[ev.class]
	if last.raw != nil && bytes.Equal(last.raw, ev.name) {
		return last.id
	}
	last.id = p.intern(ev.name)
	last.raw = append(last.raw[:0], ev.name...)
	return last.id
}

// maxName bounds the length of a name kept (raw JSON text): real kernel
// names run to some thousands of bytes.
const maxName = 64 << 10

// intern interns a raw JSON string, decoding escapes when it has any. A
// new string with control characters or invalid UTF-8 is stored cleaned
// (see clean); a string longer than maxName is cut.
func (p *builder) intern(raw []byte) StrID {
	st := p.t.Strings
	if len(raw) > maxName {
		raw = raw[:maxName]
		p.cut++
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		return st.Intern(p.clean(unescape(raw)))
	}
	if id, ok := st.ids[string(raw)]; ok { // no allocation for a lookup
		return id
	}
	return st.Intern(p.clean(string(raw)))
}

// clean replaces in str what would garble a terminal or a JSON reply:
// invalid UTF-8 and control characters become U+FFFD, tabs and line breaks
// spaces. It returns str itself when there is nothing to replace.
func (p *builder) clean(str string) string {
	if !needsCleaning(str) {
		return str
	}
	p.cleaned++
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0:
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(str, string(utf8.RuneError)))
}

// needsCleaning reports whether str holds invalid UTF-8 or a control
// character.
func needsCleaning(str string) bool {
	for _, r := range str {
		if r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// unescape decodes the escapes of a raw JSON string; on a bad escape it
// returns the raw text. Raw control characters, which JSON does not allow
// in strings, are read as U+FFFD.
func unescape(raw []byte) string {
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	for _, c := range raw {
		if c < ' ' {
			q = append(q, `\ufffd`...)
		} else {
			q = append(q, c)
		}
	}
	q = append(q, '"')
	var str string
	if err := json.Unmarshal(q, &str); err != nil {
		return string(raw)
	}
	return str
}

// thread returns the index of the (pid, tid) row in t.Threads, adding it.
func (p *builder) thread(pid, tid []byte) int32 {
	k := p.key // the last key looked up: consecutive events mostly share it
	if len(k) == len(pid)+1+len(tid) && len(k) > 0 && k[len(pid)] == 0 &&
		bytes.Equal(k[:len(pid)], pid) && bytes.Equal(k[len(pid)+1:], tid) {
		return p.lastThread
	}
	p.key = append(append(append(p.key[:0], pid...), 0), tid...)
	if i, ok := p.threads[string(p.key)]; ok {
		p.lastThread = i
		return i
	}
	i := int32(len(p.t.Threads))
	p.t.Threads = append(p.t.Threads, Thread{PID: string(pid), TID: string(tid)})
	p.threads[string(p.key)] = i
	p.lastThread = i
	return i
}

// finish fills the counts and warnings once all events are read.
func (p *builder) finish() {
	c := &p.t.Counts
	c.ByCategory = make(map[string]int64, len(p.other)+8)
	for k, n := range p.other {
		c.ByCategory[k] += *n
	}
	for i, n := range p.cats {
		if n > 0 {
			c.ByCategory[categoryNames[i]] += n
		}
	}
	c.UnreadableTimes, c.NegativeDurs = p.badTimes, p.negDurs
	c.PythonFunctions = p.cats[catPython]
	p.setRank()
	if w := p.long.warning(jsonscan.MaxValueBytes); w != "" {
		p.warn("%s", w)
	}
	if p.badTimes > 0 {
		p.warn("%d events of kept categories had an unreadable ts or dur (or an end past the int64 nanosecond range) and were dropped", p.badTimes)
	}
	if p.cut > 0 {
		p.warn("%d names longer than %d KiB were cut to that length", p.cut, maxName>>10)
	}
	if p.cleaned > 0 {
		p.warn("%d names held control characters or invalid UTF-8, shown as U+FFFD", p.cleaned)
	}
	if p.negDurs > 0 {
		p.warn("%d events of kept categories had a negative dur and were dropped", p.negDurs)
	}
}

// warn adds a warning to the trace.
func (p *builder) warn(format string, args ...any) {
	p.t.Warnings = append(p.t.Warnings, fmt.Sprintf(format, args...))
}
