package jsonscan

import (
	"context"
	"errors"
	"fmt"
	"io"
)

const (
	// BlockSize is how many bytes of input one block carries unless
	// Options say otherwise. Each block has a sixteenth of that in room
	// before its data, where the Scanner copies the unfinished tail of the
	// previous block, so that a value spanning two blocks is contiguous
	// without copying whole blocks.
	BlockSize = 1 << 20
	// BlocksInFlight bounds the blocks between the reader and the parser:
	// a Scanner holds at most BlocksInFlight+2 blocks.
	BlocksInFlight = 4
)

// ErrTooLarge is wrapped by the error for an input longer than
// Options.Limit.
var ErrTooLarge = errors.New("decompressed size limit exceeded")

// block is one piece of decompressed input.
type block struct {
	mem    []byte // prefix bytes of room, then the data
	prefix int
	n      int // data length
}

// data returns the block's data.
func (b *block) data() []byte { return b.mem[b.prefix : b.prefix+b.n] }

// blockReader reads a stream into blocks on its own goroutine, so that
// decompression runs concurrently with parsing. Blocks go back through free
// for reuse: memory stays at BlocksInFlight blocks whatever the input size.
type blockReader struct {
	full         chan *block
	free         chan *block
	done         chan struct{}
	size, prefix int
	first        int   // size of the first block
	most         int   // the most blocks made
	allocated    int   // blocks made so far, by the reading goroutine
	err          error // set before full is closed
	total        int64 // bytes delivered; read only after full is closed
}

// newBlockReader starts reading r in blocks of size bytes with prefix bytes
// of room before each; the first block has first bytes (at most size), so
// that a small file costs a small block. limit, when positive, bounds the
// bytes read; a done ctx (nil for none) stops the reading with its error.
// At most most blocks are made (at least BlocksInFlight+2). The consumer
// calls close when it is done.
func newBlockReader(ctx context.Context, r io.Reader, limit int64, size, prefix, first, most int) *blockReader {
	most = max(most, BlocksInFlight+2)
	br := &blockReader{
		full:   make(chan *block, BlocksInFlight),
		free:   make(chan *block, most),
		most:   most,
		done:   make(chan struct{}),
		size:   size,
		prefix: prefix,
		first:  min(first, size),
	}
	go br.run(ctx, r, limit)
	return br
}

func (br *blockReader) run(ctx context.Context, r io.Reader, limit int64) {
	defer close(br.full)
	for {
		if ctx != nil && ctx.Err() != nil {
			br.err = ctx.Err()
			return
		}
		b := br.get()
		if b == nil {
			return
		}
		n, err := fill(r, b.mem[b.prefix:])
		b.n = n
		br.total += int64(n)
		if limit > 0 && br.total > limit {
			br.err = fmt.Errorf("%w: more than %d uncompressed bytes", ErrTooLarge, limit)
			return
		}
		if n > 0 {
			select {
			case br.full <- b:
			case <-br.done:
				return
			}
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			br.err = err
			return
		}
	}
}

// get returns a free block, making one while fewer than the most in flight
// exist (a small file needs only one), or nil when the consumer is done.
func (br *blockReader) get() *block {
	select {
	case b := <-br.free:
		return b
	default:
	}
	if br.allocated == 0 && br.first > 0 && br.first < br.size {
		br.allocated++
		prefix := min(br.prefix, max(br.first/16, 16))
		return &block{mem: make([]byte, prefix+br.first), prefix: prefix}
	}
	if br.allocated < br.most {
		br.allocated++
		return &block{mem: make([]byte, br.prefix+br.size), prefix: br.prefix}
	}
	select {
	case b := <-br.free:
		return b
	case <-br.done:
		return nil
	}
}

// next returns the next block, or nil at the end of input or on error
// (see err).
func (br *blockReader) next() *block {
	return <-br.full
}

// release gives a block back for reuse.
func (br *blockReader) release(b *block) {
	if b != nil {
		select {
		case br.free <- b:
		default:
		}
	}
}

// close stops the reading goroutine.
func (br *blockReader) close() {
	select {
	case <-br.done:
	default:
		close(br.done)
	}
	for range br.full { // let the goroutine finish
	}
}

// fill reads into p until it is full or r fails; unlike io.ReadFull it
// passes io.ErrUnexpectedEOF from r through (a truncated gzip stream) and
// returns io.EOF at the end of input.
func fill(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
