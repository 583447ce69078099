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
	// a Scanner holds at most BlocksInFlight+2 blocks (and one more for
	// each reader at offsets, Options.Readers).
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
// of room before each (or o.At, see Options); the first block has first
// bytes (at most size), so that a small file costs a small block.
// o.Limit, when positive, bounds the bytes read; a done o.Context stops
// the reading with its error. At most o.Blocks blocks are made (at least
// BlocksInFlight+2), and one more for each of o.Readers. The consumer
// calls close when it is done.
func newBlockReader(ctx context.Context, r io.Reader, o Options, size, prefix, first int) *blockReader {
	most, ahead := max(o.Blocks, BlocksInFlight+2), BlocksInFlight
	if o.At != nil { // room for each reader's block besides: a read takes a while
		most, ahead = most+max(o.Readers, 1), ahead+max(o.Readers, 1)
	}
	br := &blockReader{
		full:   make(chan *block, ahead),
		free:   make(chan *block, most),
		most:   most,
		done:   make(chan struct{}),
		size:   size,
		prefix: prefix,
		first:  min(first, size),
	}
	if o.At != nil {
		go br.runAt(o)
	} else {
		go br.run(o.Context, r, o.Limit)
	}
	return br
}

func (br *blockReader) run(ctx context.Context, r io.Reader, limit int64) {
	defer close(br.full)
	for {
		if ctx != nil && ctx.Err() != nil {
			br.err = ctx.Err()
			return
		}
		b := br.get(true)
		if b == nil {
			return
		}
		n, err := fill(r, b.mem[b.prefix:])
		if !br.deliver(b, n, limit) {
			return
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

// deliver hands block b, holding n bytes, to the consumer, counting them
// against limit; false when reading is to stop (br.err says why, if
// anything went wrong).
func (br *blockReader) deliver(b *block, n int, limit int64) bool {
	b.n = n
	br.total += int64(n)
	if limit > 0 && br.total > limit {
		br.err = fmt.Errorf("%w: more than %d uncompressed bytes", ErrTooLarge, limit)
		return false
	}
	if n == 0 {
		br.release(b)
		return true
	}
	select {
	case br.full <- b:
		return true
	case <-br.done:
		return false
	}
}

// readAt is one block read at an offset on a goroutine of its own.
type readAt struct {
	b    *block
	n    int
	err  error
	done chan struct{}
}

// runAt reads o.At in blocks at offsets, o.Readers at a time, and hands
// them on in order; past o.Size it reads one block at a time. A block
// read short ends the input there (the file was cut while read), as
// reading it in order would.
func (br *blockReader) runAt(o Options) {
	defer close(br.full)
	var pending []*readAt
	defer func() { // no read may write to a block once the consumer may reuse it
		for _, j := range pending {
			<-j.done
		}
	}()
	readers := max(o.Readers, 1)
	var off int64
	for {
		if o.Context != nil && o.Context.Err() != nil {
			br.err = o.Context.Err()
			return
		}
		for len(pending) == 0 || len(pending) < readers && off < o.Size {
			b := br.get(len(pending) == 0) // waits only when no read is under way
			if b == nil {
				break
			}
			j := &readAt{b: b, done: make(chan struct{})}
			p := b.mem[b.prefix:]
			go func(at int64) {
				defer close(j.done)
				j.n, j.err = o.At.ReadAt(p, at)
			}(off)
			off += int64(len(p))
			pending = append(pending, j)
		}
		if len(pending) == 0 {
			return // the consumer is done
		}
		j := pending[0]
		pending = pending[1:]
		<-j.done
		if o.Count != nil {
			o.Count(j.n)
		}
		if !br.deliver(j.b, j.n, o.Limit) {
			return
		}
		if j.n < len(j.b.mem)-j.b.prefix { // the end of the input
			if j.err != nil && j.err != io.EOF {
				br.err = j.err
			}
			return
		}
	}
}

// get returns a free block, making one while fewer than the most in flight
// exist (a small file needs only one), or nil when the consumer is done
// or, unless wait is set, none is free.
func (br *blockReader) get(wait bool) *block {
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
	if !wait {
		return nil
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
