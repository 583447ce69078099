package ingest

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"kinetoscope/internal/pgzip"
)

const (
	// minParallelGzip is the smallest gzip file decompressed on several
	// cores: below it klauspost's reader is done before the workers
	// would pay for themselves.
	minParallelGzip = 4 << 20
	// maxParallelGzip is the largest: the parallel reader holds the
	// compressed file in memory.
	maxParallelGzip = 1 << 30
)

// gzipWorkers is the one decision of how a gzip file of size compressed
// bytes is decompressed: the number of decoding goroutines of the
// parallel reader, or 1 for klauspost's reader. opt.GzipWorkers decides
// where set; otherwise a large file (size known) on more than two cores
// gets every core but one (the parser's), shared among the files read at
// once (sharing: at least 1).
func gzipWorkers(size int64, opt Options, sharing int) int {
	if opt.GzipWorkers != 0 {
		return max(opt.GzipWorkers, 1)
	}
	cores := runtime.GOMAXPROCS(0) / max(sharing, 1)
	if cores <= 2 || size < minParallelGzip || size > maxParallelGzip {
		return 1
	}
	return cores - 1
}

// minParallelParse is the smallest JSON text, in bytes, parsed in chunks
// on several cores (see parseWorkers); a gzip file counts as
// parseGzipRatio times its size (real traces compress 10 to 20 times).
const (
	minParallelParse = 32 << 20
	parseGzipRatio   = 8
)

// parseWorkers is the one decision of how the JSON text of a file of size
// bytes (compressed when gz) is parsed: the number of goroutines that scan
// chunks of its events (parallelEvents), or 1 for the sequential parse.
// opt.ParseWorkers decides where set; otherwise a large file (size known)
// on more than two cores gets every core but one (the reader's): the
// workers of the pool the files of a set share (opt.pool), or as many of
// its own, the cores shared among the files read at once (sharing: at
// least 1).
func parseWorkers(size int64, gz bool, opt Options, sharing int) int {
	if opt.ParseWorkers != 0 {
		return max(opt.ParseWorkers, 1)
	}
	if gz {
		size *= parseGzipRatio
	}
	cores := runtime.GOMAXPROCS(0) / max(sharing, 1)
	if opt.pool != nil {
		cores = opt.pool.workers + 1
	}
	if cores <= 2 || size < minParallelParse {
		return 1
	}
	return cores - 1
}

// sharedPool returns the pool of parse workers that the files of a set
// read with opt share (opt.pool where set), or nil where none would use
// it (two cores or fewer), and the function that stops the pool it made:
// opt.ParseWorkers workers where set, else every core but one.
func sharedPool(opt Options) (*parsePool, func()) {
	n := opt.ParseWorkers
	if n == 0 && runtime.GOMAXPROCS(0) > 2 {
		n = runtime.GOMAXPROCS(0) - 1
	}
	if opt.pool != nil || n <= 1 {
		return opt.pool, func() {}
	}
	p := newParsePool(n, opt.ParseStats)
	return p, p.close
}

// openGzip returns the decompressed stream of the gzip file read by br
// (over cr, over r): klauspost's reader, or the parallel reader of
// internal/pgzip where gzipWorkers says so and r can be read at offsets.
// The parallel reader reads the whole file into memory first and keeps
// cr's count at the compressed bytes decoded so far.
func openGzip(r io.Reader, br *bufio.Reader, cr *countingReader, size int64, opt Options, sharing int) (io.ReadCloser, error) {
	ra, ok := r.(io.ReaderAt)
	n := gzipWorkers(size, opt, sharing)
	if !ok || n <= 1 || size <= 0 {
		return gzip.NewReader(br)
	}
	in := make([]byte, size)
	if err := readAt(ra, in, n); err != nil {
		return nil, fmt.Errorf("reading %d bytes: %w", size, err)
	}
	zr, err := pgzip.NewReader(in, pgzip.Options{Workers: n})
	if err != nil {
		return nil, err
	}
	cr.n.Store(0)
	return &parallelGzip{r: zr, cr: cr, size: size}, nil
}

// readPiece is the bytes each goroutine of readAt reads at a time.
const readPiece = 8 << 20

// readAt fills b from ra's start on up to workers goroutines, a piece of
// readPiece bytes each at a time: one goroutine copies from the page cache
// at a fraction of the speed of several. A short file is
// io.ErrUnexpectedEOF.
func readAt(ra io.ReaderAt, b []byte, workers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, max(workers, 1))
	for w := range errs {
		wg.Go(func() {
			for {
				at := next.Add(readPiece) - readPiece
				if at >= int64(len(b)) {
					return
				}
				p := b[at:min(at+readPiece, int64(len(b)))]
				if k, err := ra.ReadAt(p, at); k < len(p) {
					if err == nil || err == io.EOF {
						err = io.ErrUnexpectedEOF
					}
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// parallelGzip reads a pgzip.Reader, counting the compressed bytes
// decoded in cr as klauspost's reader over cr would.
type parallelGzip struct {
	r    *pgzip.Reader
	cr   *countingReader
	size int64
}

// Read implements io.Reader.
func (p *parallelGzip) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil { // klauspost's reader has read the file to its end too
		p.cr.n.Store(p.size)
	} else {
		p.cr.n.Store(p.r.InputOffset())
	}
	return n, err
}

// Close stops the decoding goroutines.
func (p *parallelGzip) Close() error { return p.r.Close() }
