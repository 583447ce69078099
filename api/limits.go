package api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"kinetoscope/ingest"
)

// DefaultAnalysisMemory is the memory budget of one analysis when
// --max-analysis-memory is not given: half the machine's memory (or its
// cgroup's limit, when lower), shared by the workers that analyse at
// once.
func DefaultAnalysisMemory(workers int) int64 {
	return analysisShare(machineMemory(), workers)
}

// analysisShare is half of mem shared by workers (at least one).
func analysisShare(mem int64, workers int) int64 {
	return mem / 2 / int64(max(workers, 1))
}

// unknownMemory is taken for the machine's memory when it cannot be read.
const unknownMemory = 8 << 30

// machineMemory returns the memory this process may use: the least of
// /proc/meminfo's MemTotal and the cgroup's limit (v2 memory.max, v1
// memory.limit_in_bytes), or unknownMemory where none can be read.
func machineMemory() int64 {
	mem := int64(0)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = memTotal(b)
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (mem == 0 || n < mem) {
				mem = n // "max" (no limit) does not parse
			}
		}
	}
	if mem <= 0 {
		return unknownMemory
	}
	return mem
}

// memTotal reads MemTotal (in kB) from the text of /proc/meminfo, in
// bytes; 0 when absent.
func memTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// budget returns the memory budget of one analysis (Config.MaxAnalysisMemory).
func (s *Server) budget() *ingest.Budget {
	return &ingest.Budget{Limit: s.cfg.MaxAnalysisMemory, Flag: "the server's --max-analysis-memory"}
}

// returnMemory hands the memory of a finished analysis back to the
// system at once. Left to the runtime, the heap an analysis grew stays
// resident until the next collection, which an idle server does not make
// (1.8 GB after the 10 M-event probe of issue 26). Two collections: the
// first moves what sync.Pools hold (the JSON encoder's buffers) to their
// victim caches, the second (debug.FreeOSMemory, with a scavenge) frees
// them.
func returnMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// admitUpload takes one of the MaxUploads upload slots, or answers 503
// with Retry-After when all are taken, and wraps the request body so that
// the upload is refused below the disk reserve (reserveBody) or below
// MinUploadRate once UploadGrace has passed (rateBody). The caller calls
// release when the upload is over.
func (s *Server) admitUpload(c echo.Context) (release func(), err error) {
	select {
	case s.uploads <- struct{}{}:
	default:
		s.stats.rejected()
		c.Response().Header().Set("Retry-After", strconv.Itoa(uploadRetryAfter))
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf(
			"the server is taking %d uploads already (the server's --max-uploads): send it again in a few seconds", cap(s.uploads)))
	}
	req := c.Request()
	req.Body = &rateBody{ReadCloser: &reserveBody{ReadCloser: req.Body, s: s}, min: s.cfg.MinUploadRate, grace: s.cfg.UploadGrace,
		start: time.Now(), header: c.Response().Header()}
	return func() { <-s.uploads }, nil
}

// uploadRetryAfter is the Retry-After of an upload refused for want of a
// slot, in seconds.
const uploadRetryAfter = 5

// rateBody fails an upload whose average rate since its start is below
// min bytes a second once grace has passed: a body trickled a byte at a
// time holds a connection and a slot for ever otherwise, since each byte
// pushes the stall deadline out.
type rateBody struct {
	io.ReadCloser
	min   int64
	grace time.Duration
	start time.Time
	n     int64
	// header is the answer's: a cut-off upload closes its connection, so
	// that the server does not wait for the rest of the body first.
	header http.Header
}

// Read implements io.Reader.
func (r *rateBody) Read(b []byte) (int, error) {
	n, err := r.ReadCloser.Read(b)
	r.n += int64(n)
	if d := time.Since(r.start); d > r.grace && float64(r.n) < float64(r.min)*d.Seconds() {
		r.header.Set(echo.HeaderConnection, "close")
		return n, &inputError{Code: http.StatusRequestTimeout, Msg: fmt.Sprintf(
			"upload too slow: %d bytes in %.0f s, under the server's --min-upload-rate of %d bytes/s after its first %v: nothing was stored",
			r.n, d.Seconds(), r.min, r.grace)}
	}
	return n, err
}
