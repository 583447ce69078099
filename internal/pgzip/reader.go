// Package pgzip decompresses a gzip file on several cores: the method of
// pugz (Kerbiriou and Chikhi, "Parallel decompression of gzip-compressed
// files and random access to DNA sequences", 2019) and rapidgzip (Knespel
// and Brunst, 2023), for text.
//
// The compressed file, held in memory, is cut into chunks at guessed
// offsets. A worker finds the first deflate block boundary at or past its
// chunk's start by trial decoding (a dynamic block, not the last, whose
// codes are complete and whose first block decodes to text), and decodes
// from there to the first such boundary at or past the next chunk's start,
// with the 32 KiB window before it unknown: its bytes stand as markers,
// resolved in order once the previous chunk is. A chunk whose boundary is
// not the one where the previous chunk stopped (a false candidate, a
// boundary the search cannot see) is decoded again from there with the
// window known: slower, never wrong. Each member's CRC-32 and length are
// checked against its output, as klauspost/compress/gzip checks them, and
// the files the one accepts and refuses are the ones the other does.
package pgzip

import (
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// Options tune a Reader.
type Options struct {
	// Workers is the number of decoding goroutines (at least 1).
	Workers int
	// ChunkSize is the compressed bytes of a chunk; 0 chooses it from
	// the input size and Workers.
	ChunkSize int
}

const (
	minChunk = 64 << 10
	maxChunk = 512 << 10
	// maxRatio bounds a chunk's output at maxRatio times its compressed
	// size (more: decoded in order, in pieces, instead).
	maxRatio = 64
	// piece is the output of one step of an in-order decoding.
	piece = 4 << 20
	// piecesAhead bounds the output pieces decoded in order but not yet
	// read, beyond those of the chunks accepted ahead (resolveAhead).
	piecesAhead = 2
)

// resolveAhead is how many chunks the sequencer takes ahead of the
// reading for workers decoding goroutines: their markers are resolved
// concurrently, each on a goroutine of its own. With one, the resolving
// of each chunk waits for the reading of the one before, and resolving
// is then the slowest step of the whole reader (on a repetitive trace
// the markers last to a chunk's end, and every byte is resolved).
func resolveAhead(workers int) int { return max(workers/2, 1) }

// Reader decompresses a gzip file in memory in parallel. It holds the
// output of at most Workers+2+resolveAhead(Workers) chunks (each at most
// 64 times ChunkSize, three times that while its markers wait for the
// window), and recycles their buffers.
type Reader struct {
	in      []byte
	starts  []int64 // byte offset of each chunk; starts[0] is member 1's data
	results []chan *chunk
	tokens  chan struct{}
	pieces  chan *outPiece
	done    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
	offset  atomic.Int64 // compressed bytes decoded in order
	seq     sequencer
	bufs    *buffers

	// The reading side.
	cur       *outPiece
	ends      []memberEnd // member ends not yet checked, absolute
	crc, size uint32      // of the current member's output read
	out       int64       // bytes read
	err       error
}

// outPiece is a piece of the output in order: its bytes, ready once
// ready is closed (nil: at once), the member ends it holds (offsets in the
// whole output), and the error the reading ends with after it.
type outPiece struct {
	data  []byte
	ready chan struct{}
	ends  []memberEnd
	err   error
	// recycle holds data, to give back once read (nil: not to).
	recycle []byte
}

// sequencer is the state of the goroutine that takes the chunks in order.
type sequencer struct {
	next       int   // the next chunk to take
	at         int64 // bit offset where the output so far ends
	window     []byte
	inOrder    *sequential
	finished   bool
	produced   int64       // output bytes so far
	ends       []memberEnd // member ends of the next piece
	windowEnds []int64     // member ends not yet applied to window
	stats      Stats
}

// Stats count how the chunks of a Reader were decoded.
type Stats struct {
	Chunks   int // chunks the file was cut into
	Parallel int // decoded by a worker from the boundary where the one before ended
	InOrder  int // decoded again in order (no boundary found, a false one, too much output)
	Skipped  int // within a block that began in an earlier chunk
}

// Stats returns how the chunks were decoded; call it once Read has
// returned io.EOF or an error.
func (r *Reader) Stats() Stats {
	s := r.seq.stats
	s.Chunks = len(r.starts)
	return s
}

// NewReader starts decompressing the gzip file in. The Reader must be
// closed. It fails as gzip.NewReader does on a bad first header.
func NewReader(in []byte, opt Options) (*Reader, error) {
	n, err := headerLen(in)
	if err != nil {
		return nil, err
	}
	workers := max(opt.Workers, 1)
	cs := opt.ChunkSize
	if cs <= 0 {
		cs = min(max(len(in)/(4*workers), minChunk), maxChunk)
	}
	ahead := 2*resolveAhead(workers) + piecesAhead // two pieces a chunk
	r := &Reader{in: in, done: make(chan struct{}), tokens: make(chan struct{}, workers+1),
		pieces: make(chan *outPiece, ahead), bufs: newBuffers(workers+1+ahead, min(16*cs, maxRatio*cs))}
	r.seq.at = int64(n) * 8
	r.seq.window = make([]byte, 0, 2*windowSize)
	for s := int64(n); s < int64(len(in)) || len(r.starts) == 0; s += int64(cs) {
		r.starts = append(r.starts, s)
	}
	r.results = make([]chan *chunk, len(r.starts))
	for i := range r.results {
		r.results[i] = make(chan *chunk, 1)
	}
	jobs := make(chan int)
	r.wg.Go(func() { r.dispatch(jobs) })
	maxOut := max(maxRatio*cs, 256<<10)
	for range workers {
		r.wg.Go(func() {
			w := newWorker(maxOut, r.done, r.bufs)
			for j := range jobs {
				r.results[j] <- r.decode(w, j, cs)
			}
		})
	}
	r.wg.Go(r.sequence)
	return r, nil
}

// dispatch hands out chunks in order, at most cap(tokens) ahead of the
// sequencer.
func (r *Reader) dispatch(jobs chan<- int) {
	defer close(jobs)
	for j := range r.starts {
		select {
		case r.tokens <- struct{}{}:
		case <-r.done:
			return
		}
		select {
		case jobs <- j:
		case <-r.done:
			return
		}
	}
}

// stopBit returns where chunk j ends: at the first boundary at or past
// the next chunk's start (-1 for the last).
func (r *Reader) stopBit(j int) int64 {
	if j+1 < len(r.starts) {
		return r.starts[j+1] * 8
	}
	return -1
}

// decode decodes chunk j on w.
func (r *Reader) decode(w *worker, j, cs int) *chunk {
	if w.stopped() {
		return &chunk{}
	}
	hint := min(16*cs, w.maxOut)
	if j == 0 {
		return w.first(r.in, r.starts[0]*8, r.stopBit(0), hint)
	}
	return w.search(r.in, r.starts[j]*8, min(r.starts[j]*8+int64(cs)*8, int64(len(r.in))*8), r.stopBit(j), hint)
}

// stop ends the goroutines.
func (r *Reader) stop() { r.stopped.Do(func() { close(r.done) }) }

// Close stops the decoding and waits for its goroutines.
func (r *Reader) Close() error {
	r.stop()
	r.wg.Wait()
	return nil
}

// InputOffset returns the compressed bytes decoded in order so far.
func (r *Reader) InputOffset() int64 { return r.offset.Load() }

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	for {
		if len(r.ends) > 0 && r.ends[0].at == r.out {
			e := r.ends[0]
			r.ends = r.ends[1:]
			if e.crc != r.crc || e.size != r.size {
				r.err = gzip.ErrChecksum
				r.cur = nil
				r.stop()
				return 0, r.err
			}
			r.crc, r.size = 0, 0
			continue
		}
		if r.err != nil {
			return 0, r.err
		}
		if r.cur != nil && len(r.cur.data) > 0 {
			break
		}
		if r.cur != nil && r.cur.err != nil {
			r.err = r.cur.err
			continue
		}
		if r.cur != nil {
			r.bufs.putBytes(r.cur.recycle)
			r.cur = nil
		}
		next, ok := <-r.pieces
		if !ok {
			r.err = io.EOF
			continue
		}
		if next.ready != nil {
			<-next.ready
		}
		r.cur = next
		r.ends = append(r.ends, next.ends...)
	}
	b := r.cur.data
	n := min(len(p), len(b))
	if len(r.ends) > 0 {
		n = min(n, int(r.ends[0].at-r.out))
	}
	copy(p, b[:n])
	r.cur.data = b[n:]
	r.crc = crc32.Update(r.crc, crc32.IEEETable, p[:n])
	r.size += uint32(n)
	r.out += int64(n)
	return n, nil
}

// sequence takes the chunks in order, checks that each starts where the
// one before ended (else decodes it again from there), and sends their
// output to Read in pieces.
func (r *Reader) sequence() {
	defer close(r.pieces)
	for !r.seq.finished {
		if !r.produce() {
			return
		}
	}
}

// send hands a piece to Read; false once the reader is closed.
func (r *Reader) send(p *outPiece) bool {
	p.ends, r.seq.ends = r.seq.ends, nil
	select {
	case r.pieces <- p:
		return true
	case <-r.done:
		return false
	}
}

// finish ends the output with err (nil: the end of the file).
func (r *Reader) finish(err error) bool {
	r.seq.finished = true
	r.offset.Store(int64(len(r.in)))
	if err == nil {
		return r.send(&outPiece{})
	}
	return r.send(&outPiece{err: err})
}

// produce decodes the next output in order: the next chunk, or the next
// piece of an in-order decoding; false once the reader is closed.
func (r *Reader) produce() bool {
	q := &r.seq
	if q.inOrder != nil {
		return r.step()
	}
	j := q.next
	if j >= len(r.starts) {
		return r.finish(io.ErrUnexpectedEOF) // the last chunk decodes to the end: not reached
	}
	q.next++
	var c *chunk
	select {
	case c = <-r.results[j]:
	case <-r.done:
		return false
	}
	<-r.tokens
	stop := r.stopBit(j)
	if stop >= 0 && q.at >= stop {
		q.stats.Skipped++
		return true // decoded with the chunk before
	}
	if c.found && c.start == q.at {
		if ok, open := r.accept(c); ok || !open {
			return open
		}
	}
	q.stats.InOrder++
	q.inOrder = r.newSequential(stop)
	return r.step()
}

// accept takes chunk c's output as the next, its markers resolved on
// another goroutine where the window is whole (every marker has its
// byte); ok is false where a marker refers before the member's start (c
// is not taken), open false once the reader is closed.
func (r *Reader) accept(c *chunk) (ok, open bool) {
	q := &r.seq
	if len(q.window) < windowSize && !resolvable(c.marked, q.window) {
		return false, true
	}
	window := q.window
	q.window = chunkWindow(c, window, make([]byte, 0, windowSize))
	marked := &outPiece{}
	switch {
	case len(c.marked) == 0:
		r.bufs.putMarked(c.markedBuf)
	case len(window) == windowSize:
		marked.ready = make(chan struct{})
		r.wg.Go(func() {
			marked.data = resolve(r.bufs.getBytes(len(c.marked)), c.marked, window) // read after ready is closed
			marked.recycle = marked.data
			r.bufs.putMarked(c.markedBuf)
			close(marked.ready)
		})
	default:
		marked.data = resolve(r.bufs.getBytes(len(c.marked)), c.marked, window)
		marked.recycle = marked.data
		r.bufs.putMarked(c.markedBuf)
	}
	q.stats.Parallel++
	for _, e := range c.ends {
		q.ends = append(q.ends, memberEnd{at: q.produced + e.at, crc: e.crc, size: e.size})
	}
	q.produced += c.len()
	q.at = c.end
	r.offset.Store(q.at / 8)
	if !r.send(marked) || !r.send(&outPiece{data: c.plain, recycle: c.plain}) {
		return true, false
	}
	if c.ev == evEOF {
		return true, r.finish(nil)
	}
	return true, true
}

// resolvable reports whether every marker of marked has its byte in
// window (the current member's last bytes, fewer than windowSize near its
// start).
func resolvable(marked []uint16, window []byte) bool {
	missing := windowSize - len(window)
	for _, v := range marked {
		if v >= markerBase && int(v-markerBase) < missing {
			return false
		}
	}
	return true
}

// resolve returns marked with each marker replaced by its byte of window
// (see resolvable), in dst's memory.
func resolve(dst []byte, marked []uint16, window []byte) []byte {
	var table [1 << 16]byte // what each symbol stands for
	for i := range 256 {
		table[i] = byte(i)
	}
	copy(table[markerBase+windowSize-len(window):], window)
	b := dst[:len(marked)]
	i := 0
	for ; i+4 <= len(marked); i += 4 {
		m := marked[i : i+4 : i+4]
		t := b[i : i+4 : i+4]
		if (m[0]|m[1]|m[2]|m[3])&0xff00 == 0 { // four literals, the common case
			t[0], t[1], t[2], t[3] = byte(m[0]), byte(m[1]), byte(m[2]), byte(m[3])
			continue
		}
		t[0], t[1], t[2], t[3] = table[m[0]], table[m[1]], table[m[2]], table[m[3]]
	}
	for ; i < len(marked); i++ {
		b[i] = table[marked[i]]
	}
	return b
}

// chunkWindow returns the window after chunk c, where window is the one
// before it: the last windowSize bytes of the current member, in w's
// memory.
func chunkWindow(c *chunk, window, w []byte) []byte {
	total := int(c.len())
	from := 0
	if n := len(c.ends); n > 0 {
		from = int(c.ends[n-1].at)
	}
	from = max(from, total-windowSize)
	w = w[:0]
	if len(c.ends) == 0 && total < windowSize {
		w = append(w, window[max(len(window)-(windowSize-total), 0):]...)
	}
	missing := windowSize - len(window)
	for x := from; x < total; x++ {
		if x >= len(c.marked) {
			w = append(w, c.plain[x-len(c.marked):]...)
			break
		}
		v := c.marked[x]
		if v < markerBase {
			w = append(w, byte(v))
		} else {
			w = append(w, window[int(v-markerBase)-missing])
		}
	}
	return w
}

// emit sends b, decoded in order, as the next output, keeping the window
// (see remember); false once the reader is closed.
func (r *Reader) emit(b []byte) bool {
	q := &r.seq
	start := q.produced
	rest := b
	for len(q.windowEnds) > 0 && q.windowEnds[0] <= start+int64(len(rest)) {
		k := int(q.windowEnds[0] - start)
		q.remember(rest[:k])
		q.window = q.window[:0]
		rest, start = rest[k:], q.windowEnds[0]
		q.windowEnds = q.windowEnds[1:]
	}
	q.remember(rest)
	q.produced += int64(len(b))
	return r.send(&outPiece{data: b})
}

// remember appends b to the window.
func (q *sequencer) remember(b []byte) {
	if len(b) >= windowSize {
		q.window = append(q.window[:0], b[len(b)-windowSize:]...)
		return
	}
	if n := len(q.window) + len(b); n > windowSize {
		k := copy(q.window, q.window[n-windowSize:])
		q.window = q.window[:k]
	}
	q.window = append(q.window, b...)
}

// sequential is a decoding in order, in pieces, from a known boundary with
// the window known.
type sequential struct {
	f   inflater
	d   decoding
	buf []byte // window, then output
	o   int
}

// newSequential starts an in-order decoding where the output so far
// ends, to stop.
func (r *Reader) newSequential(stop int64) *sequential {
	q := &r.seq
	s := &sequential{d: decoding{stopBit: stop}}
	s.f.reset(r.in, q.at)
	s.buf = make([]byte, windowSize+min(piece, max(64<<10, 16*len(r.in))))
	s.o = copy(s.buf, q.window)
	s.d.base = q.produced - int64(s.o)
	return s
}

// step decodes and sends the next piece of the in-order decoding; false
// once the reader is closed.
func (r *Reader) step() bool {
	q := &r.seq
	s := q.inOrder
	start := s.o
	o, ev, err := run(&s.f, &s.d, s.buf, s.o)
	for _, e := range s.d.ends {
		q.ends = append(q.ends, e)
		q.windowEnds = append(q.windowEnds, e.at)
	}
	s.d.ends = s.d.ends[:0]
	if !r.emit(s.buf[start:o]) {
		return false
	}
	switch {
	case err != nil:
		q.inOrder = nil
		return r.finish(decodeError(err, &s.f))
	case ev == evFull:
		keep := min(o-s.d.hist, windowSize)
		buf := make([]byte, len(s.buf))
		copy(buf, s.buf[o-keep:o])
		s.d.base += int64(o - keep)
		s.d.hist = 0
		s.buf, s.o = buf, keep
		r.offset.Store(min(s.f.bitPos()/8, int64(len(r.in))))
	case ev == evStop:
		q.at = s.f.bitPos()
		r.offset.Store(q.at / 8)
		q.inOrder = nil
	default:
		q.inOrder = nil
		return r.finish(nil)
	}
	return true
}

// decodeError is the error klauspost's reader gives for what err says.
func decodeError(err error, f *inflater) error {
	if err == errCorrupt {
		return flate.CorruptInputError(min(f.bytePos(), len(f.in)))
	}
	return err
}
