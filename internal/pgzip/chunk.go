package pgzip

import "encoding/binary"

// Decoding one chunk on a worker: find the first block boundary at or past
// the chunk's start by trial decoding, decode with markers for the unknown
// window until the window is free of them, then in bytes, up to the first
// boundary at or past the next chunk's start.

// chunk is what a worker decoded of one chunk.
type chunk struct {
	found      bool  // a boundary was found and decoded from without error
	start, end int64 // bit offsets of the first block decoded and where it stopped
	ev         event // evStop or evEOF
	// marked is the output up to the point where the window held no
	// markers (their bytes are known once the previous chunk's window
	// is); plain is the output after it.
	marked []uint16
	plain  []byte
	ends   []memberEnd // offsets in the chunk's output
	// markedBuf holds marked, to give back once it is resolved.
	markedBuf []uint16
}

// len returns the chunk's output length.
func (c *chunk) len() int64 { return int64(len(c.marked) + len(c.plain)) }

// worker holds a decoding goroutine's buffers, reused from chunk to chunk.
type worker struct {
	f      inflater
	marked []uint16 // windowSize markers, then output
	maxOut int      // the most output a chunk may have (beyond: not found)
	done   <-chan struct{}
	bufs   *buffers
}

// markedStep is how much output is decoded with markers between checks
// for a window free of markers.
const markedStep = 64 << 10

// newWorker returns a worker whose chunks decode to at most maxOut bytes.
func newWorker(maxOut int, done <-chan struct{}, bufs *buffers) *worker {
	return &worker{maxOut: maxOut, done: done, bufs: bufs}
}

// first decodes the first chunk, which starts at a known boundary with
// an empty window.
func (w *worker) first(in []byte, start, stopBit int64, sizeHint int) *chunk {
	w.f.reset(in, start)
	d := &decoding{stopBit: stopBit}
	c := &chunk{found: true, start: start}
	if w.plain(d, c, w.bufs.getBytes(sizeHint)) != decoded {
		return &chunk{}
	}
	return c
}

// outcome is how a decoding from a candidate boundary ended.
type outcome int

const (
	decoded outcome = iota
	failed          // an invalid stream: not a boundary
	tooBig          // more output than maxOut, or the reader closed: give up the chunk
)

// search decodes a chunk whose first block boundary is to be found in
// [from, to) bits.
func (w *worker) search(in []byte, from, to, stopBit int64, sizeHint int) *chunk {
	for p := from; p < to; p++ {
		if p&4095 == 0 && w.stopped() {
			break
		}
		var ok bool
		if i := int(p >> 3); i+9 <= len(in) {
			// The offsets of one byte from one load: most fail the
			// first test.
			v := binary.LittleEndian.Uint64(in[i:])
			s := uint(p & 7)
			for ; s < 8; s++ {
				if x := v >> s; x&7 == headerDynamic && (x>>3)&31 <= 29 && (x>>8)&31 <= 29 {
					break
				}
			}
			if p += int64(s) - int64(p&7); s == 8 || p >= to {
				p-- // the loop's p++ goes to the next byte
				continue
			}
			ok = completeLengthCode(in, p, v>>s)
		} else {
			ok = quickCandidate(in, p)
		}
		if !ok {
			continue
		}
		c, more := w.try(in, p, stopBit, sizeHint)
		if c != nil {
			return c
		}
		if !more {
			break
		}
	}
	return &chunk{}
}

// completeLengthCode reports whether the code length code of the dynamic
// block header at bit p is complete; v holds at least 57 bits from p.
func completeLengthCode(in []byte, p int64, v uint64) bool {
	nclen := int(v>>13)&15 + 4
	kraft := 0 // in units of 2^-7
	x := v >> 17
	for k := range nclen {
		if k == 13 { // past the 57 bits of v
			q := p + 17 + 39
			j := int(q >> 3)
			if j+8 > len(in) {
				return quickCandidate(in, p)
			}
			x = binary.LittleEndian.Uint64(in[j:]) >> uint(q&7)
		}
		if l := x & 7; l > 0 {
			kraft += 128 >> l
			if kraft > 128 {
				return false
			}
		}
		x >>= 3
	}
	return kraft == 128
}

// stopped reports whether the reader was closed.
func (w *worker) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// quickCandidate checks the header at bit p as far as it can without
// decoding: a dynamic block that is not the last, with at most 286
// literal/length and 30 distance codes, whose code length code is
// complete.
func quickCandidate(in []byte, p int64) bool {
	i := int(p >> 3)
	if i+3 > len(in) {
		return false
	}
	v := (uint32(in[i]) | uint32(in[i+1])<<8 | uint32(in[i+2])<<16) >> uint(p&7)
	if v&7 != headerDynamic || (v>>3)&31 > 29 || (v>>8)&31 > 29 {
		return false
	}
	nclen := int(v>>13)&15 + 4
	kraft := 0 // in units of 2^-7
	for k := range nclen {
		q := p + 17 + int64(3*k)
		j := int(q >> 3)
		if j+2 > len(in) {
			return false
		}
		if l := (uint32(in[j]) | uint32(in[j+1])<<8) >> uint(q&7) & 7; l > 0 {
			kraft += 128 >> l
		}
	}
	return kraft == 128
}

// try decodes from bit p as from a block boundary: the first block must
// have a complete code and decode to text; nil if anything fails, and
// more false where the search should stop (see tooBig).
func (w *worker) try(in []byte, p, stopBit int64, sizeHint int) (c *chunk, more bool) {
	f := &w.f
	f.reset(in, p)
	if f.blockHeader(true) != nil {
		return nil, true
	}
	if w.marked == nil {
		w.marked = w.bufs.getMarked(sizeHint)
	}
	m := w.marked
	o := windowSize
	for f.inBlock {
		var err error
		if o, err = decodeBlock(f, m, o, 0, true); err != nil {
			return nil, true
		}
		if f.inBlock {
			if m = w.grow(o); m == nil {
				return nil, false
			}
		}
	}
	d := &decoding{stopBit: stopBit}
	c = &chunk{found: true, start: p}
	for {
		if clean(m[max(o-windowSize, 0):o]) {
			break
		}
		if len(m)-o < markedStep {
			if m = w.grow(o); m == nil {
				return nil, false
			}
		}
		var ev event
		var err error
		o, ev, err = run(f, d, m[:o+markedStep], o)
		if err != nil {
			return nil, true
		}
		if ev != evFull {
			c.marked, c.markedBuf = m[windowSize:o], m
			w.marked = nil // c has it
			c.ends, c.ev, c.end = shift(d.ends, -windowSize), ev, f.bitPos()
			return c, false
		}
	}
	// The window holds bytes only: go on in bytes.
	keep := o - 2*windowSize
	plain := w.bufs.getBytes(max(sizeHint, 2*windowSize))[:windowSize]
	for i, v := range m[o-windowSize : o] {
		plain[i] = byte(v)
	}
	c.marked, c.markedBuf = m[windowSize:windowSize+keep], m
	w.marked = nil
	d.hist = max(d.hist-(o-windowSize), 0)
	d.ends = shift(d.ends, -windowSize)
	d.base = int64(keep)
	switch w.plain(d, c, plain) {
	case failed:
		return nil, true
	case tooBig:
		return nil, false
	}
	return c, false
}

// shift adds by to the offsets of ends.
func shift(ends []memberEnd, by int) []memberEnd {
	for i := range ends {
		ends[i].at += int64(by)
	}
	return ends
}

// clean reports whether s holds no marker.
func clean(s []uint16) bool {
	for _, v := range s {
		if v >= markerBase {
			return false
		}
	}
	return true
}

// grow doubles the marked buffer holding o entries, or returns nil past
// maxOut or once the reader is closed.
func (w *worker) grow(o int) []uint16 {
	if o-windowSize >= w.maxOut || w.stopped() {
		return nil
	}
	m := make([]uint16, 2*len(w.marked)-windowSize)
	copy(m, w.marked[:o])
	w.marked = m
	return m
}

// plain decodes on in bytes into out (whose length is its output so far,
// at offset d.base of the chunk) to the chunk's end, filling c's plain
// output, end and member ends.
func (w *worker) plain(d *decoding, c *chunk, out []byte) outcome {
	f := &w.f
	o := len(out)
	out = out[:cap(out)]
	for {
		if len(out)-o < maxMatch+1 {
			if o >= w.maxOut || w.stopped() {
				return tooBig
			}
			out = append(out[:o], make([]byte, max(len(out), 64<<10))...)
			out = out[:cap(out)]
		}
		var ev event
		var err error
		o, ev, err = run(f, d, out, o)
		if err != nil {
			return failed
		}
		if ev != evFull {
			c.plain, c.ends, c.ev, c.end = out[:o], d.ends, ev, f.bitPos()
			return decoded
		}
	}
}
