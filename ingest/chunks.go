package ingest

import "iter"

// chunkSize is the number of records per chunk. Chunks are allocated once and
// never copied, so a growing column never reallocates what it already holds.
const chunkSize = 4096

// Chunks is an append-only column of plain records stored in fixed-size
// chunks. Appending never moves records already stored, so pointers returned
// by At stay valid, and memory grows by one chunk at a time.
type Chunks[T any] struct {
	chunks [][]T
	n      int
}

// Append adds v at the end.
func (c *Chunks[T]) Append(v T) {
	if c.n%chunkSize == 0 {
		c.chunks = append(c.chunks, make([]T, 0, chunkSize))
	}
	last := len(c.chunks) - 1
	c.chunks[last] = append(c.chunks[last], v)
	c.n++
}

// Len returns the number of records.
func (c *Chunks[T]) Len() int { return c.n }

// At returns a pointer to record i; it panics if i is out of range, like a
// slice index.
func (c *Chunks[T]) At(i int) *T {
	return &c.chunks[i/chunkSize][i%chunkSize]
}

// All iterates over the records in order, yielding the index and a pointer.
func (c *Chunks[T]) All() iter.Seq2[int, *T] {
	return func(yield func(int, *T) bool) {
		i := 0
		for _, ch := range c.chunks {
			for j := range ch {
				if !yield(i, &ch[j]) {
					return
				}
				i++
			}
		}
	}
}

// Reset empties the column and keeps its first chunk for reuse.
func (c *Chunks[T]) Reset() {
	if len(c.chunks) > 0 {
		c.chunks = c.chunks[:1]
		c.chunks[0] = c.chunks[0][:0]
	}
	c.n = 0
}

// RetainedBytes estimates the memory the column holds, given the size of one
// record in bytes.
func (c *Chunks[T]) RetainedBytes(recordSize int) int64 {
	return int64(len(c.chunks)) * chunkSize * int64(recordSize)
}
