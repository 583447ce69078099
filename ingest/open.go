package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// Open reads everything at path (FromPath) into one set (OpenInput): a
// trace file, a directory of them, or a tar, tar.gz or zip archive of one.
// A file that cannot be read is recorded in Set.Errors and the others are
// still read; Open itself fails only when path cannot be looked at or
// opt.Context is done.
func Open(path string, opt Options) (*Set, error) {
	return OpenInput(FromPath(path), opt)
}

// collector gathers the traces of one OpenInput.
type collector struct {
	set *Set
	opt Options
	// many is set when reading a directory or archive: there a JSON file
	// that is not a trace (a config, vLLM's truth.json of a synthetic
	// run) is set aside, not an error.
	many bool
	// captures are the names of the sources read as capture traces
	// (Source.Capture).
	captures []string
}

// isTraceName reports whether a file name looks like a trace.
func isTraceName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".json.gz")
}

// isCapture reports whether p lies under a capture_traces directory.
func isCapture(p string) bool {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' || r == '!' }) {
		if part == "capture_traces" {
			return true
		}
	}
	return false
}

// readAll reads the trace files of found several at a time (see
// readFiles) and files everything found in its order, as if read one
// after another; an archive among them is read at its turn.
func (c *collector) readAll(found []dirEntry) {
	c.readFiles(found, min(runtime.GOMAXPROCS(0), maxFilesAtOnce))
	for _, e := range found {
		switch {
		case e.read:
			c.put(e.path, e.trace, e.err)
		case e.err != nil:
			c.fail(e.path, e.err)
		case e.archive:
			c.readArchive(e)
		default:
			c.set.SetAside = append(c.set.SetAside, SetAside{Path: e.path, Reason: e.aside})
		}
	}
}

// dirEntry is one file found in a directory or given as a Source: a trace
// file to read (and, once read, its trace or error), an archive, one that
// could not be looked at, or one set aside.
type dirEntry struct {
	path string
	size int64
	// open opens the file.
	open    func() (SourceReader, error)
	read    bool
	archive bool
	aside   string
	trace   *Trace
	err     error
}

// openEntry opens the file of e.
func (e *dirEntry) openEntry() (SourceReader, error) {
	if e.open == nil {
		return nil, errors.New("no way to open it was given")
	}
	return e.open()
}

// readEntry reads the trace file of e.
func (e *dirEntry) readEntry(opt Options) (*Trace, error) {
	r, err := e.openEntry()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readTrace(r, e.path, e.size, opt, blockSize)
}

// readArchive reads the archive of e (see source).
func (c *collector) readArchive(e dirEntry) {
	r, err := e.openEntry()
	if err != nil {
		c.fail(e.path, err)
		return
	}
	defer r.Close()
	c.source(e.path, r, e.size)
}

// maxFilesAtOnce bounds the files of a directory read at the same time:
// each holds jsonscan.BlocksInFlight+2 blocks (about 6 MiB) besides its
// trace (parsed in chunks, its share of the pool's: two a worker), so
// memory stays bounded whatever the number of ranks. Eight is a TP8
// profile at once, on a machine of 8 or more cores.
const maxFilesAtOnce = 8

// readFiles reads the trace files of found, workers at a time (readAll asks
// for as many as there are processors, at most maxFilesAtOnce): one file's
// decompression and parse keep less than two cores busy, and the next
// file's decompression fills the gaps. Progress calls are made one at a
// time.
func (c *collector) readFiles(found []dirEntry, workers int) {
	opt := c.opt
	opt.filesAtOnce = min(workers, countRead(found))
	pool, stop := sharedPool(opt)
	defer stop()
	opt.pool = pool
	if workers > 1 && opt.Progress != nil {
		var mu sync.Mutex
		progress := opt.Progress
		opt.Progress = func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			progress(p)
		}
	}
	next := make(chan *dirEntry)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for e := range next {
				e.trace, e.err = e.readEntry(opt)
			}
		})
	}
	for i := range found {
		if found[i].read {
			next <- &found[i]
		}
	}
	close(next)
	wg.Wait()
}

// countRead returns the number of entries of found to read.
func countRead(found []dirEntry) int {
	n := 0
	for _, e := range found {
		if e.read {
			n++
		}
	}
	return n
}

// source reads one file, wherever it is: an archive's trace members, or
// the file as a trace. The file's head is read at offset 0 and the rest
// from r's start, so r must not have been read yet.
func (c *collector) source(p string, r SourceReader, size int64) {
	switch kind, inner := sniffArchive(r, size); kind {
	case FormatZip:
		c.zip(p, r, size)
	case FormatTar:
		c.tar(p, r)
	case FormatTarGz:
		c.tar(p, inner)
	default:
		c.add(p, func() (*Trace, error) { return readTrace(r, p, size, c.opt, blockSize) })
	}
}

// sniffArchive tells from its first bytes whether the file of r is a zip,
// tar or tar.gz archive (for a tar.gz, inner reads the tar stream from its
// start), and "" for anything else. It reads r only at offsets.
func sniffArchive(r io.ReaderAt, size int64) (kind string, inner io.Reader) {
	head := make([]byte, 512)
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	switch {
	case isZip(head):
		return FormatZip, nil
	case isTar(head):
		return FormatTar, nil
	case isGzip(head):
		zr, err := gzip.NewReader(io.NewSectionReader(r, 0, size))
		if err == nil {
			br := bufio.NewReaderSize(zr, 64<<10)
			if inner, _ := br.Peek(512); isTar(inner) {
				return FormatTarGz, br
			}
		}
	}
	return "", nil
}

// tar reads the trace members of a tar stream. With a limit on
// uncompressed bytes, the bytes of the other members (which tar.Reader
// reads to pass them) are bounded by it too: a gzip bomb there would
// otherwise be decompressed in full.
func (c *collector) tar(p string, r io.Reader) {
	c.many = true
	skip := &skipBudget{r: r, left: c.opt.MaxUncompressedBytes}
	if skip.left > 0 {
		r = skip
	}
	err := WalkArchive(FormatTar, r, 0, func(m Member) error {
		if m.Kind != MemberFile || !isTraceName(m.Name) {
			return nil
		}
		name := p + "!" + m.Name
		skip.reading = true
		c.add(name, func() (*Trace, error) { return c.readMember(name, m) })
		skip.reading = false
		return nil
	})
	if err != nil {
		c.fail(p, err)
	}
}

// skipBudget reads r and fails once more than left bytes were read while
// reading is false.
type skipBudget struct {
	r       io.Reader
	left    int64
	reading bool
}

// Read implements io.Reader.
func (b *skipBudget) Read(p []byte) (int, error) {
	if !b.reading && b.left < 0 {
		return 0, fmt.Errorf("%w: members that are not traces hold more bytes than the limit", ErrTooLarge)
	}
	n, err := b.r.Read(p)
	if !b.reading {
		b.left -= int64(n)
	}
	return n, err
}

// zip reads the trace members of a zip archive.
func (c *collector) zip(p string, r SourceReader, size int64) {
	c.many = true
	err := WalkArchive(FormatZip, r, size, func(m Member) error {
		if m.Kind != MemberFile || !isTraceName(m.Name) {
			return nil
		}
		name := p + "!" + m.Name
		c.add(name, func() (*Trace, error) { return c.readMember(name, m) })
		return nil
	})
	if err != nil {
		c.fail(p, err)
	}
}

// readMember reads the trace of an archive member, named name; a member
// whose compressed size is known (a zip's) is bounded by the ratio limit
// (memberLimit).
func (c *collector) readMember(name string, m Member) (*Trace, error) {
	rc, err := m.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	r := io.Reader(rc)
	if m.Compressed > 0 {
		r = c.memberLimit(name, rc, m.Compressed)
	}
	return readTrace(r, name, int64(m.Size), c.opt, blockSize)
}

// fail records a file that could not be read.
func (c *collector) fail(p string, err error) {
	c.set.Errors = append(c.set.Errors, &FileError{Path: p, Err: err})
}

// add reads one trace and files it (see put).
func (c *collector) add(p string, read func() (*Trace, error)) {
	t, err := read()
	c.put(p, t, err)
}

// put files what reading the trace at p gave: an execution trace, a
// capture trace, a file set aside, or an error.
func (c *collector) put(p string, t *Trace, err error) {
	if err != nil && c.many && errors.Is(err, ErrNotTrace) {
		c.set.SetAside = append(c.set.SetAside, SetAside{Path: p, Reason: err.Error()})
		return
	}
	if err != nil {
		c.fail(p, err)
		return
	}
	if isCapture(p) || slices.Contains(c.captures, p) {
		t.Capture = true
		c.set.Captures = append(c.set.Captures, t)
		return
	}
	if t.GPU.Len() == 0 {
		c.set.SetAside = append(c.set.SetAside, SetAside{Path: p,
			Reason: fmt.Sprintf("no GPU events (%d events, CPU only)", t.Counts.Events), Trace: t})
		return
	}
	c.set.Traces = append(c.set.Traces, t)
}

// finish sorts the traces by rank and turns duplicate ranks, and ranks
// assigned to no single trace, into errors.
func (c *collector) finish() {
	c.set.Errors = append(c.set.Errors, c.opt.Ranks.apply(append(append([]*Trace(nil), c.set.Traces...), c.set.Captures...))...)
	c.set.Traces = c.dedupe(c.set.Traces)
	c.set.Captures = c.dedupe(c.set.Captures)
}

// dedupe sorts ts by rank (unknown last) and path, and reports each trace
// whose known rank an earlier one already has.
func (c *collector) dedupe(ts []*Trace) []*Trace {
	sort.SliceStable(ts, func(i, j int) bool {
		ri, rj := ts[i].Rank, ts[j].Rank
		if (ri < 0) != (rj < 0) {
			return rj < 0
		}
		if ri != rj {
			return ri < rj
		}
		return ts[i].Path < ts[j].Path
	})
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && t.Rank >= 0 && out[n-1].Rank == t.Rank {
			c.set.Errors = append(c.set.Errors, &FileError{Path: t.Path, Trace: t,
				Err: &DuplicateRankError{Rank: t.Rank, First: out[n-1].Path, Second: t.Path}})
			continue
		}
		out = append(out, t)
	}
	return out
}

// DuplicateRankError is the error for a trace whose rank another trace of
// the same set already has.
type DuplicateRankError struct {
	Rank          int
	First, Second string // paths: the one kept and the one not used
}

// Error implements error.
func (e *DuplicateRankError) Error() string {
	return fmt.Sprintf("duplicate rank %d: both %s and %s claim it", e.Rank, e.First, e.Second)
}
