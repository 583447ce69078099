package pgzip

// buffers recycles a Reader's large buffers: a chunk's marked symbols once
// resolved, and output bytes once read. Zeroing and collecting buffers of
// several MB per chunk costs as much as decoding them.
type buffers struct {
	marked chan []uint16
	bytes  chan []byte
	size   int // the least room of a buffer: a chunk's usual output
}

// newBuffers keeps up to n buffers of each kind, of room for at least
// size symbols (so that any serves for any chunk of usual size).
func newBuffers(n, size int) *buffers {
	return &buffers{marked: make(chan []uint16, n), bytes: make(chan []byte, n), size: size}
}

// getMarked returns a buffer of windowSize markers and room for at least
// n symbols after them.
func (b *buffers) getMarked(n int) []uint16 {
	select {
	case m := <-b.marked:
		if cap(m) >= windowSize+n {
			return m[:cap(m)]
		}
	default:
	}
	return markedBuffer(max(n, b.size))
}

// putMarked gives back a buffer of getMarked (its markers intact).
func (b *buffers) putMarked(m []uint16) {
	if m == nil {
		return
	}
	select {
	case b.marked <- m:
	default:
	}
}

// getBytes returns an empty buffer of capacity at least n.
func (b *buffers) getBytes(n int) []byte {
	select {
	case p := <-b.bytes:
		if cap(p) >= n {
			return p[:0]
		}
	default:
	}
	return make([]byte, 0, max(n, b.size))
}

// putBytes gives back a buffer no longer used.
func (b *buffers) putBytes(p []byte) {
	if p == nil {
		return
	}
	select {
	case b.bytes <- p:
	default:
	}
}

// markedBuffer returns a new buffer of windowSize markers and room for n
// symbols after them.
func markedBuffer(n int) []uint16 {
	m := make([]uint16, windowSize+max(n, 2*markedStep))
	for i := range windowSize {
		m[i] = markerBase + uint16(i)
	}
	return m
}
