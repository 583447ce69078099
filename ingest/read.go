package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"kinetoscope/ingest/jsonscan"
)

// ErrNotTrace is wrapped by errors for input that is JSON but not a trace.
var ErrNotTrace = errors.New("not a trace")

// ErrTooLarge is wrapped by the error for a file whose JSON text passes
// Options.MaxUncompressedBytes.
var ErrTooLarge = jsonscan.ErrTooLarge

// SyntaxError is invalid JSON at a byte offset of the uncompressed text
// (the scanner's error).
type SyntaxError = jsonscan.SyntaxError

// blockSize is how many decompressed bytes one block of input carries
// (tests make it small).
const blockSize = jsonscan.BlockSize

// scanner is the JSON scanner the event decoders of this package read
// with: their methods on it sit beside the scanner's own.
type scanner struct {
	jsonscan.Scanner
	// pool, when set, parses the traceEvents array in chunks (see
	// parallelEvents), at most pending at a time.
	pool    *parsePool
	pending int
}

// ReadFile reads one trace file, gzip-compressed or not (told by its magic
// bytes, not its name).
func ReadFile(path string, opt Options) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	t, err := readTrace(f, path, size, opt, blockSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Read reads one trace from r, gzip-compressed or not. name is used in
// errors and as Trace.Path.
func Read(r io.Reader, name string, opt Options) (*Trace, error) {
	t, err := readTrace(r, name, 0, opt, blockSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// countingReader counts the bytes read through it; the count may be read
// from another goroutine.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

// Read implements io.Reader.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// isGzip reports whether b starts with the gzip magic bytes.
func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// readTrace reads one trace; size is the compressed size if known, bs the
// block size (tests make it small). Errors do not name the file: callers do.
func readTrace(r io.Reader, path string, size int64, opt Options, bs int) (*Trace, error) {
	cr := &countingReader{r: r}
	bufSize := 256 << 10
	if size > 0 {
		bufSize = int(min(int64(bufSize), max(size+16, 4096))) // a small file, a small buffer
	}
	br := bufio.NewReaderSize(cr, bufSize)
	head, _ := br.Peek(2)
	var src io.Reader = br
	gz := isGzip(head)
	if gz {
		zr, err := openGzip(r, br, cr, size, opt, opt.filesAtOnce)
		if err != nil {
			return nil, fmt.Errorf("gzip header: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	var pool *parsePool
	switch n := parseWorkers(size, gz, opt, opt.filesAtOnce); {
	case n > 1 && opt.pool != nil:
		pool = opt.pool
	case n > 1:
		pool = newParsePool(n, opt.ParseStats)
		defer pool.close()
	}
	var at io.ReaderAt
	if ra, ok := r.(io.ReaderAt); ok && !gz && pool != nil && size > 0 {
		at = ra // plain text parsed on many cores: read on several too
	}
	t, err := parse(src, at, path, size, cr, opt, bs, firstBlock(size, gz), pool)
	var se *SyntaxError
	switch {
	case err != nil && gz:
		err = gzipError(err, cr.n.Load())
	case errors.As(err, &se): // says where the text ends already
	case errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("input ends early, after %d bytes (truncated archive member?): %w", cr.n.Load(), err)
	}
	return t, err
}

// plainReaders is the goroutines that read a large plain-text trace
// parsed on many cores: enough to copy from the page cache faster than
// the parse.
const plainReaders = 8

// firstBlock returns the size of the first block for an input of size
// bytes (0: unknown), compressed or not: a small file needs a small block.
func firstBlock(size int64, gz bool) int {
	switch {
	case size <= 0 || size > blockSize:
		return blockSize
	case gz:
		return int(max(min(size*32, blockSize), 4096))
	}
	return int(max(size+1, 4096))
}

// gzipError makes decompression errors say what happened.
func gzipError(err error, n int64) error {
	var se *SyntaxError
	switch {
	case errors.As(err, &se), errors.Is(err, ErrTooLarge), errors.Is(err, ErrNotTrace), isBudgetError(err):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("truncated gzip stream after %d compressed bytes: %w", n, err)
	}
	return fmt.Errorf("corrupt gzip stream: %w", err)
}

// parse reads the JSON text of a trace from r on two goroutines: one reads
// (and so decompresses) blocks, this one parses them, or hands them to
// pool's workers when pool is not nil. first is the size of the first
// block. Where at is not nil, the text, size bytes, is read from it
// instead, at offsets, on plainReaders goroutines, counted in cr.
func parse(r io.Reader, at io.ReaderAt, path string, size int64, cr *countingReader, opt Options, bs, first int, pool *parsePool) (*Trace, error) {
	s := &scanner{pool: pool}
	p := newBuilder(path)
	o := jsonscan.Options{Context: opt.Context, Limit: opt.MaxUncompressedBytes, BlockSize: bs, FirstBlock: first}
	if at != nil {
		cr.n.Store(0) // what the first peek read is read again
		o.At, o.Size, o.Readers = at, size, plainReaders
		o.Count = func(n int) { cr.n.Add(int64(n)) }
	}
	if pool != nil {
		s.pending = pool.pendingFor(opt.filesAtOnce)
		o.Blocks = blocksFor(s.pending)
	}
	if opt.Budget != nil {
		o.Check = opt.Budget.meter(p.t)
	}
	if opt.Progress != nil {
		o.OnBlock = func() { // on the goroutine that builds the trace
			read := p.chunkEnd // the chunks built so far, while they are (parallelEvents)
			if !p.inChunks {
				read = s.Offset(len(s.Buf))
			}
			opt.Progress(Progress{Path: path, Bytes: cr.n.Load(), TotalBytes: size,
				UncompressedBytes: read, Events: p.t.Counts.Events})
		}
	}
	s.Init(r, o)
	defer s.Close()
	if err := p.document(s); err != nil {
		return nil, err
	}
	if o.Check != nil { // the last block's events
		if err := o.Check(); err != nil {
			return nil, err
		}
	}
	s.Close()
	p.finish()
	p.t.Counts.Bytes = cr.n.Load()
	p.t.Counts.UncompressedBytes = s.Total()
	if opt.Progress != nil {
		opt.Progress(Progress{Path: path, Bytes: p.t.Counts.Bytes, TotalBytes: size,
			UncompressedBytes: s.Total(), Events: p.t.Counts.Events, Done: true})
	}
	return p.t, nil
}
