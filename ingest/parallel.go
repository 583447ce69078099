package ingest

import (
	"bytes"
	"sync"
	"sync/atomic"

	"kinetoscope/ingest/jsonscan"
)

// The parallel parse of a large trace: the traceEvents array is cut into
// chunks at event boundaries, each chunk is scanned on a worker of a
// parsePool, and the chunks' events are built into the trace in order by
// the goroutine that reads the document.
//
// A worker does what costs: it scans its chunk's events (the tokenizer,
// the fast paths, the skipping of dropped events), counts the dropped
// ones by category, and keeps the others as rawEvents, slices of the
// chunk. The reading goroutine hands those to builder.add, as the
// sequential parse does, so that interning, threads, names and every
// column come out exactly as they would have: the per-event decoding is
// the same function on both paths.
//
// A boundary is found by text alone ("}" "," "{" with whitespace between
// or not, the last one in the window), so it may be false (in a string,
// or between objects nested in an event). A chunk is trusted only from a
// true event start: the first starts where the sequential parse would
// read its first event, and each later one where the chunk before it
// ended exactly, after an event and its comma. When a chunk stops early
// (its end was not a boundary, the text is not valid there, or the array
// ends in it), the rest of the text from where it stopped is put back in
// the scanner and read sequentially: slower, never different.

// parsePool runs chunk parses on a fixed number of goroutines.
type parsePool struct {
	jobs    chan *chunk
	wg      sync.WaitGroup
	workers int
	stats   *ParseStats
}

// ParseStats counts what the parse over chunks did, for the reads given
// it (Options.ParseStats); the counters may be read while they run.
type ParseStats struct {
	// Chunks counts the chunks built into traces, Bytes their JSON text
	// up to where each ended, Stopped those that ended early (at a false
	// boundary, bad text, the end of the events) and handed the text
	// from there to the parse in order.
	Chunks, Bytes, Stopped atomic.Int64
}

// newParsePool starts n workers, counting in stats (a new ParseStats when
// nil).
func newParsePool(n int, stats *ParseStats) *parsePool {
	if stats == nil {
		stats = &ParseStats{}
	}
	p := &parsePool{jobs: make(chan *chunk, n), workers: n, stats: stats}
	for range n {
		p.wg.Go(func() {
			for c := range p.jobs {
				c.parse()
			}
		})
	}
	return p
}

// close stops the workers once the chunks given them are parsed.
func (p *parsePool) close() {
	close(p.jobs)
	p.wg.Wait()
}

// pendingPerWorker is the most chunks the reads of a pool have handed out
// and not yet built, per worker: enough to keep the workers busy while
// the reading goroutines build, few enough to bound the memory (each
// holds a block).
const pendingPerWorker = 2

// pendingFor returns the most chunks one of files reads sharing the pool
// hands out at once (at least two).
func (p *parsePool) pendingFor(files int) int {
	return max(pendingPerWorker*p.workers/max(files, 1), 2)
}

// blocksFor returns the blocks a scanner needs to hand out pending chunks
// (each holds one) while it reads on.
func blocksFor(pending int) int {
	return pending + jsonscan.BlocksInFlight + 3
}

// chunk is a part of the traceEvents array, starting at an event (or the
// whitespace before it), and what its worker found in it.
type chunk struct {
	buf     []byte
	base    int64  // input offset of buf[0]
	release func() // gives back the memory buf lies in
	done    chan struct{}

	kept    []rawEvent // the events not dropped, in order, slices of buf
	ahead   readAhead  // what the worker read of them ahead of building
	dropped dropCounts
	// end is the position after the last event read and its separator;
	// closed says that separator was the array's ']'; err, why the scan
	// stopped at end before the end of buf (ErrShort: buf ends inside an
	// event).
	end    int
	closed bool
	err    error
}

// dropCounts counts a chunk's dropped events by category, in the order
// the categories of catOther first appear (the builder caps how many it
// counts by name, first come first counted).
type dropCounts struct {
	byClass [numCategories]int64
	other   []otherCount
	otherAt map[string]int
}

// otherCount is the number of dropped events of one category of catOther.
type otherCount struct {
	cat string
	n   int64
}

// add counts one dropped event.
func (d *dropCounts) add(ev *rawEvent) {
	if ev.class != catOther {
		d.byClass[ev.class]++
		return
	}
	if i, ok := d.otherAt[string(ev.cat)]; ok {
		d.other[i].n++
		return
	}
	if d.otherAt == nil {
		d.otherAt = map[string]int{}
	}
	d.otherAt[string(ev.cat)] = len(d.other)
	d.other = append(d.other, otherCount{string(ev.cat), 1})
}

// reset empties the counts for reuse.
func (d *dropCounts) reset() {
	d.byClass = [numCategories]int64{}
	d.other = d.other[:0]
	clear(d.otherAt)
}

// parse scans the chunk's events (run by a worker).
func (c *chunk) parse() {
	defer close(c.done)
	var s scanner
	s.InitBytes(c.buf, c.base)
	var ev rawEvent
	i := 0
	for i < len(c.buf) {
		next, closed, err := s.eventStep(i, &ev)
		if err != nil {
			c.err = err
			break
		}
		if ev.dropped {
			c.dropped.add(&ev)
		} else {
			c.ahead.read(&s, &ev) // here, not on the goroutine that builds
			c.kept = append(c.kept, ev)
		}
		i = next
		if closed {
			c.closed = true
			break
		}
	}
	c.end = i
}

// build adds the chunk's events to the trace, as the sequential parse
// adds them. It reports whether the chunk ended early: then the text from
// c.end on is to be read sequentially.
func (p *builder) build(pool *parsePool, c *chunk) (stop bool, err error) {
	for k, n := range c.dropped.byClass {
		if n > 0 {
			p.countEvents(category(k), nil, n)
		}
	}
	for _, o := range c.dropped.other {
		p.countEvents(catOther, []byte(o.cat), o.n)
	}
	var s scanner
	s.InitBytes(c.buf, c.base)
	p.local.use(&c.ahead)
	defer p.built(&c.ahead)
	for i := range c.kept {
		if err := p.add(&s, &c.kept[i]); err != nil {
			return true, err
		}
	}
	pool.stats.Chunks.Add(1)
	pool.stats.Bytes.Add(int64(c.end))
	return c.closed || c.err != nil || c.end != len(c.buf), nil
}

// chunks are the chunk structs of one read: at most most of them out
// (handed to the workers and not yet back from the building goroutine),
// the built ones kept for reuse.
type chunks struct {
	pool *parsePool
	most int // the most out
	out  int
	free []*chunk
	kept int // the most events a chunk kept: a new chunk's room
}

// get returns a chunk to fill, or nil when most are out.
func (cs *chunks) get() *chunk {
	if cs.out >= cs.most {
		return nil
	}
	cs.out++
	if n := len(cs.free); n > 0 {
		c := cs.free[n-1]
		cs.free = cs.free[:n-1]
		c.kept = c.kept[:0]
		c.ahead.reset()
		c.dropped.reset()
		return c
	}
	return &chunk{kept: make([]rawEvent, 0, cs.kept)}
}

// give hands c, holding the text buf at input offset base, to a worker.
func (cs *chunks) give(c *chunk, buf []byte, base int64, release func()) {
	c.buf, c.base, c.release, c.done = buf, base, release, make(chan struct{})
	c.end, c.closed, c.err = 0, false, nil
	cs.pool.jobs <- c
}

// recycle releases a chunk's memory, once its worker is done, and keeps
// it for reuse.
func (cs *chunks) recycle(c *chunk) {
	<-c.done
	c.release()
	c.buf, c.release = nil, nil
	cs.kept = max(cs.kept, len(c.kept))
	clear(c.kept) // drop the slices into the released memory
	cs.free = append(cs.free, c)
	cs.out--
}

// buildEnd is how the building of a read's chunks ended: where the chunk
// stop ended early (nil: none did), with err when building failed, and
// rest the chunks after it, not built.
type buildEnd struct {
	stop *chunk
	rest []*chunk
	err  error
}

// buildChunks builds the chunks of queue in order, as its worker finishes
// each, and sends each built one to built; after each it calls the
// scanner's hooks (progress, the memory budget), which read the trace.
// At a chunk that ended early, or an error, it closes stopped and takes
// what is left of queue into the end, unbuilt.
func (p *builder) buildChunks(pool *parsePool, queue <-chan *chunk, built chan<- *chunk, stopped chan<- struct{},
	onBlock func(), check func() error) (end buildEnd) {
	for c := range queue {
		<-c.done
		stop, err := p.build(pool, c)
		p.chunkEnd = c.base + int64(c.end)
		if err == nil && !stop {
			if onBlock != nil {
				onBlock()
			}
			if check != nil {
				err = check()
			}
			if err == nil {
				built <- c
				continue
			}
		}
		end = buildEnd{stop: c, err: err}
		close(stopped)
		for r := range queue {
			end.rest = append(end.rest, r)
		}
		return end
	}
	return end
}

// parallelEvents reads the traceEvents array from its first event (at
// s.Pos) in chunks on s.pool's workers, for as long as the chunks end at
// event boundaries: this goroutine cuts the text into chunks and hands
// them out, another builds them into the trace in order (buildChunks).
// done is true once the array has ended; otherwise s.Pos is at the start
// of an event (or of what the sequential parse is to read next), with the
// scanner's window holding the text from there.
func (p *builder) parallelEvents(s *scanner) (done bool, err error) {
	onBlock, check := s.Hooks() // they read the trace: the building goroutine calls them
	defer s.SetHooks(onBlock, check)
	cs := &chunks{pool: s.pool, most: s.pending}
	queue, built := make(chan *chunk, cs.most), make(chan *chunk, cs.most)
	stopped, finished := make(chan struct{}), make(chan struct{})
	var end buildEnd
	p.inChunks = true
	defer func() { p.inChunks = false }() // after finished: the builder is done
	go func() {
		defer close(finished)
		end = p.buildChunks(cs.pool, queue, built, stopped, onBlock, check)
	}()
cutting:
	for {
		select {
		case <-stopped:
			break cutting
		default:
		}
		cut := lastBoundary(s.Buf, s.Pos)
		if cut < 0 {
			// No boundary in the window: the end of the input, an event
			// longer than the window, or an error: the sequential parse
			// fetches the input again and meets it as it would have.
			if err := s.More(s.Pos); err != nil {
				break
			}
			continue
		}
		c := cs.get()
		for c == nil { // most are out: wait for one built
			select {
			case b := <-built:
				cs.recycle(b)
				c = cs.get()
			case <-stopped:
				break cutting
			}
		}
		cs.give(c, s.Buf[s.Pos:cut], s.Offset(s.Pos), s.Hold())
		queue <- c // never blocks: at most most are out
		s.Pos = cut
		err := s.More(s.Pos) // the window leaves the held memory unless err
		for drained := false; !drained; {
			select {
			case b := <-built:
				cs.recycle(b)
			default:
				drained = true
			}
		}
		if err != nil {
			break
		}
	}
	s.Unread(nil) // the window may lie in a chunk's memory
	close(queue)
	<-finished
	close(built)
	for b := range built {
		cs.recycle(b)
	}
	if end.stop == nil {
		return false, nil
	}
	cs.pool.stats.Stopped.Add(1)
	defer func() {
		for _, c := range append(end.rest, end.stop) {
			cs.recycle(c)
		}
	}()
	if end.err != nil {
		return false, end.err
	}
	rest := end.stop.buf[end.stop.end:]
	if len(end.rest) > 0 {
		rest = append([]byte(nil), rest...)
		for _, c := range end.rest {
			rest = append(rest, c.buf...)
		}
	}
	s.Unread(rest)
	return end.stop.closed, nil
}

// lastBoundary returns the position right after the comma of the last
// "}," "{" in b[from:] (whitespace around the comma or not) whose '{' is
// in b, or -1: where the last event of the window may start.
func lastBoundary(b []byte, from int) int {
	for j := len(b); j > from; {
		k := bytes.LastIndexByte(b[from:j], ',')
		if k < 0 {
			return -1
		}
		k += from
		a, z := k+1, k-1
		for a < len(b) && isSpace(b[a]) {
			a++
		}
		for z > from && isSpace(b[z]) {
			z--
		}
		if a < len(b) && b[a] == '{' && z > from && b[z] == '}' {
			return k + 1
		}
		j = k
	}
	return -1
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }
