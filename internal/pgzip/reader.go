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
)

// Reader decompresses a gzip file in memory in parallel. It holds the
// output of at most Workers+2 chunks (each at most 64 times ChunkSize).
type Reader struct {
	in      []byte
	starts  []int64 // byte offset of each chunk; starts[0] is member 1's data
	results []chan *chunk
	tokens  chan struct{}
	done    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup

	next     int   // the next chunk to take
	at       int64 // bit offset where the output so far ends
	window   []byte
	seq      *sequential
	finished bool

	produced   int64       // output bytes decoded in order so far
	pending    [][]byte    // output not yet read
	ends       []memberEnd // member ends not yet checked, absolute
	windowEnds []int64     // member ends not yet applied to window
	crc, size  uint32      // of the current member's output read
	out        int64       // bytes read
	err        error       // after pending
	stats      Stats
}

// Stats count how the chunks of a Reader were decoded.
type Stats struct {
	Chunks   int // chunks the file was cut into
	Parallel int // decoded by a worker from the boundary where the one before ended
	InOrder  int // decoded again in order (no boundary found, a false one, too much output)
	Skipped  int // within a block that began in an earlier chunk
}

// Stats returns how the chunks read so far were decoded.
func (r *Reader) Stats() Stats {
	s := r.stats
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
	r := &Reader{in: in, at: int64(n) * 8, done: make(chan struct{}),
		tokens: make(chan struct{}, workers+2), window: make([]byte, 0, 2*windowSize)}
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
			w := newWorker(maxOut, r.done)
			for j := range jobs {
				r.results[j] <- r.decode(w, j, cs)
			}
		})
	}
	return r, nil
}

// dispatch hands out chunks in order, at most cap(tokens) ahead of the
// reading.
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

// stop ends the workers.
func (r *Reader) stop() { r.stopped.Do(func() { close(r.done) }) }

// Close stops the decoding and waits for its goroutines.
func (r *Reader) Close() error {
	r.stop()
	r.wg.Wait()
	return nil
}

// InputOffset returns the compressed bytes decoded in order so far.
func (r *Reader) InputOffset() int64 { return min(r.at/8, int64(len(r.in))) }

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	for {
		if len(r.ends) > 0 && r.ends[0].at == r.out {
			e := r.ends[0]
			r.ends = r.ends[1:]
			if e.crc != r.crc || e.size != r.size {
				r.fail(gzip.ErrChecksum)
				return 0, r.err
			}
			r.crc, r.size = 0, 0
			continue
		}
		if len(r.pending) > 0 && len(r.pending[0]) == 0 {
			r.pending = r.pending[1:]
			continue
		}
		if len(r.pending) > 0 {
			break
		}
		if r.err != nil {
			return 0, r.err
		}
		if r.finished {
			return 0, io.EOF
		}
		r.produce()
	}
	b := r.pending[0]
	n := min(len(p), len(b))
	if len(r.ends) > 0 {
		n = min(n, int(r.ends[0].at-r.out))
	}
	copy(p, b[:n])
	r.pending[0] = b[n:]
	r.crc = crc32.Update(r.crc, crc32.IEEETable, p[:n])
	r.size += uint32(n)
	r.out += int64(n)
	return n, nil
}

// fail ends the reading with err once the output before it is read.
func (r *Reader) fail(err error) {
	r.err = err
	r.pending, r.ends = nil, nil
	r.finished = true
	r.stop()
}

// produce decodes the next output in order: the next chunk, or the next
// piece of an in-order decoding.
func (r *Reader) produce() {
	if r.seq != nil {
		r.step()
		return
	}
	j := r.next
	if j >= len(r.starts) {
		r.err = io.ErrUnexpectedEOF // the last chunk decodes to the end: not reached
		r.finished = true
		return
	}
	r.next++
	c := <-r.results[j]
	<-r.tokens
	stop := r.stopBit(j)
	if stop >= 0 && r.at >= stop {
		r.stats.Skipped++
		return // decoded with the chunk before
	}
	if c.found && c.start == r.at {
		if b, ok := r.resolve(c); ok {
			r.stats.Parallel++
			r.accept(c, b)
			return
		}
	}
	r.stats.InOrder++
	r.seq = r.newSequential(stop)
	r.step()
}

// resolve returns chunk c's marked output with the markers replaced by
// the window's bytes; false where one refers before the member's start.
func (r *Reader) resolve(c *chunk) ([]byte, bool) {
	b := make([]byte, len(c.marked))
	missing := windowSize - len(r.window)
	for i, v := range c.marked {
		if v < markerBase {
			b[i] = byte(v)
			continue
		}
		k := int(v-markerBase) - missing
		if k < 0 {
			return nil, false
		}
		b[i] = r.window[k]
	}
	return b, true
}

// accept takes chunk c's output (its marked part resolved as b) as the
// next.
func (r *Reader) accept(c *chunk, b []byte) {
	for _, e := range c.ends {
		r.addEnd(memberEnd{at: r.produced + e.at, crc: e.crc, size: e.size})
	}
	r.emit(b)
	r.emit(c.plain)
	r.at = c.end
	if c.ev == evEOF {
		r.finished = true
		r.stop()
	}
}

// addEnd records a member end of the output.
func (r *Reader) addEnd(e memberEnd) {
	r.ends = append(r.ends, e)
	r.windowEnds = append(r.windowEnds, e.at)
}

// emit appends b to the output, keeping the window: the last windowSize
// bytes of the current member.
func (r *Reader) emit(b []byte) {
	if len(b) == 0 && len(r.windowEnds) == 0 {
		return
	}
	r.pending = append(r.pending, b)
	start := r.produced
	for len(r.windowEnds) > 0 && r.windowEnds[0] <= start+int64(len(b)) {
		k := int(r.windowEnds[0] - start)
		r.remember(b[:k])
		r.window = r.window[:0]
		b, start = b[k:], r.windowEnds[0]
		r.windowEnds = r.windowEnds[1:]
	}
	r.remember(b)
	r.produced = start + int64(len(b))
}

// remember appends b to the window.
func (r *Reader) remember(b []byte) {
	if len(b) >= windowSize {
		r.window = append(r.window[:0], b[len(b)-windowSize:]...)
		return
	}
	if n := len(r.window) + len(b); n > windowSize {
		k := copy(r.window, r.window[n-windowSize:])
		r.window = r.window[:k]
	}
	r.window = append(r.window, b...)
}

// sequential is a decoding in order, in pieces, from a known boundary with
// the window known.
type sequential struct {
	f   inflater
	d   decoding
	buf []byte // window, then output
	o   int
}

// newSequential starts an in-order decoding at r.at, to stop.
func (r *Reader) newSequential(stop int64) *sequential {
	s := &sequential{d: decoding{stopBit: stop}}
	s.f.reset(r.in, r.at)
	s.buf = make([]byte, windowSize+min(piece, max(64<<10, 16*len(r.in))))
	s.o = copy(s.buf, r.window)
	s.d.base = r.produced - int64(s.o)
	return s
}

// step decodes the next piece of r.seq.
func (r *Reader) step() {
	s := r.seq
	start := s.o
	o, ev, err := run(&s.f, &s.d, s.buf, s.o)
	for _, e := range s.d.ends {
		r.addEnd(e)
	}
	s.d.ends = s.d.ends[:0]
	r.emit(s.buf[start:o])
	switch {
	case err != nil:
		r.seq = nil
		r.err = decodeError(err, &s.f)
		r.finished = true
		r.stop()
	case ev == evFull:
		keep := min(o-s.d.hist, windowSize)
		buf := make([]byte, len(s.buf))
		copy(buf, s.buf[o-keep:o])
		s.d.base += int64(o - keep)
		s.d.hist = 0
		s.buf, s.o = buf, keep
	case ev == evStop:
		r.at = s.f.bitPos()
		r.seq = nil
	default:
		r.seq = nil
		r.finished = true
		r.stop()
	}
}

// decodeError is the error klauspost's reader gives for what err says.
func decodeError(err error, f *inflater) error {
	if err == errCorrupt {
		return flate.CorruptInputError(min(f.bytePos(), len(f.in)))
	}
	return err
}
