package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/store"
)

// diskDirs returns the local directories of the embedded stores (the
// database's and the blobs'), whose disks need the reserve; none for a
// team deployment's remote stores.
func (s *Server) diskDirs() []string {
	var dirs []string
	if p, ok := strings.CutPrefix(s.cfg.Meta, "sqlite://"); ok {
		dirs = append(dirs, filepath.Dir(p))
	}
	if p, ok := strings.CutPrefix(s.cfg.Blobs, "file://"); ok {
		dirs = append(dirs, p)
	}
	return dirs
}

// freeBytes returns the bytes an unprivileged process may still write on
// the file system of dir.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of the data directory: %w", err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// leastFree returns the least free space over diskDirs (MaxInt64 for
// none).
func (s *Server) leastFree() (int64, error) {
	least := int64(math.MaxInt64)
	for _, d := range s.diskDirs() {
		n, err := freeBytes(d)
		if err != nil {
			return 0, err
		}
		least = min(least, n)
	}
	return least, nil
}

// lowDiskError refuses an upload once the free space is below the
// reserve (Config.MinFreeDisk) that deletes and the database's log need.
type lowDiskError struct{ free, floor int64 }

// Error implements error.
func (e *lowDiskError) Error() string {
	return fmt.Sprintf("the server's disk is nearly full (%d MiB free, below its reserve of %d MiB, the server's --min-free-disk): "+
		"nothing was stored; delete runs or free space, then send it again", e.free>>20, e.floor>>20)
}

// checkRoom returns a *lowDiskError when the free space is below the
// reserve.
func (s *Server) checkRoom() error {
	s.keepBallast()
	free, err := s.leastFree()
	if err != nil {
		return err
	}
	if free < s.cfg.MinFreeDisk {
		return &lowDiskError{free: free, floor: s.cfg.MinFreeDisk}
	}
	return nil
}

// roomCheckEvery is how many bytes of an upload are read between two
// checks of the free space.
const roomCheckEvery = 4 << 20

// reserveBody checks the free space before an upload's body is read and
// again every roomCheckEvery bytes, so that an upload stops at the
// reserve rather than at a full disk.
type reserveBody struct {
	io.ReadCloser
	s    *Server
	left int64
}

// Read implements io.Reader.
func (r *reserveBody) Read(b []byte) (int, error) {
	if r.left <= 0 {
		if err := r.s.checkRoom(); err != nil {
			return 0, err
		}
		r.left = roomCheckEvery
	}
	n, err := r.ReadCloser.Read(b)
	r.left -= int64(n)
	return n, err
}

// isDiskFull reports whether err says the disk is full: ENOSPC or EDQUOT
// from a write, or SQLite's SQLITE_FULL ("database or disk is full").
func isDiskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == sqliteFull
}

// sqliteFull is SQLite's primary result code SQLITE_FULL.
const sqliteFull = 13

// diskFullMsg answers an upload that a full disk stopped: it names no
// path of the server's.
const diskFullMsg = "the server's disk is full: nothing was stored; delete runs or free space, then send it again"

// diskError returns the 507 answer of an upload that the disk stopped,
// or nil when err is something else.
func diskError(err error) error {
	var low *lowDiskError
	switch {
	case errors.As(err, &low):
		return echo.NewHTTPError(http.StatusInsufficientStorage, low.Error())
	case isDiskFull(err):
		return echo.NewHTTPError(http.StatusInsufficientStorage, diskFullMsg)
	}
	return nil
}

// deleteMeta deletes a run's records, making room on a full disk
// (withRoom): a delete is how space is freed, so it must work then.
func (s *Server) deleteMeta(ctx context.Context, id string) ([]string, error) {
	var orphans []string
	err := s.withRoom("delete run "+id, func() (err error) {
		orphans, err = s.meta.Delete(ctx, id)
		return err
	})
	return orphans, err
}

// withRoom runs op, a write to the database; when the disk is full, it
// frees the ballast and the chart cache (drawn again on demand) and runs
// op once more. keepBallast puts the ballast back once there is room.
func (s *Server) withRoom(what string, op func() error) error {
	err := op()
	if err == nil || !isDiskFull(err) {
		return err
	}
	s.log.Warn("the disk is full: freeing the ballast and the chart cache to make room", "for", what, "err", err)
	s.images.dropAll()
	if p := s.ballastPath(); p != "" {
		os.Remove(p)
	}
	return op()
}

// ballastBytes is the size of the ballast: room for SQLite's log to
// record deletes and failures on a disk that filled up all the same (by
// another program, or past the reserve with no reserve set).
const ballastBytes = 4 << 20

// ballastPath is the ballast file, beside the embedded database; "" for
// a database elsewhere.
func (s *Server) ballastPath() string {
	if p, ok := strings.CutPrefix(s.cfg.Meta, "sqlite://"); ok {
		return filepath.Join(filepath.Dir(p), "ballast")
	}
	return ""
}

// keepBallast writes the ballast file when it is missing and the disk has
// room for it beyond the reserve.
func (s *Server) keepBallast() {
	p := s.ballastPath()
	if p == "" {
		return
	}
	s.ballastMu.Lock()
	defer s.ballastMu.Unlock()
	if st, err := os.Stat(p); err == nil && st.Size() == ballastBytes {
		return
	}
	if free, err := freeBytes(filepath.Dir(p)); err != nil || free < ballastBytes+max(s.cfg.MinFreeDisk, 0) {
		return
	}
	if err := os.WriteFile(p, make([]byte, ballastBytes), 0o600); err != nil {
		os.Remove(p)
		s.log.Warn("write the disk ballast", "err", err)
	}
}

// diskHealth is the disk part of /healthz: the least free space and the
// reserve, and whether the free space is below it.
type diskHealth struct {
	FreeBytes    int64 `json:"free_bytes"`
	MinFreeBytes int64 `json:"min_free_bytes"`
	Low          bool  `json:"low"`
}

// disk returns the disk state for /healthz.
func (s *Server) disk() (diskHealth, error) {
	free, err := s.leastFree()
	if err != nil {
		return diskHealth{}, err
	}
	return diskHealth{FreeBytes: free, MinFreeBytes: s.cfg.MinFreeDisk, Low: free < s.cfg.MinFreeDisk}, nil
}

// reportNotStored marks a run failed when its report could not be
// stored for want of space (err, from SetReport), rather than leaving it
// running; it returns the error of that, or err when it is something
// else.
func (s *Server) reportNotStored(ctx context.Context, id string, err error, p store.Progress) error {
	if err == nil || !isDiskFull(err) {
		return err
	}
	s.log.Warn("analysis: the report could not be stored: the disk is full", "run", id, "err", err)
	p.Phase = "failed"
	return s.withRoom("record the failure of run "+id, func() error {
		return s.meta.SetStatus(ctx, id, store.StatusFailed, p,
			"the analysis finished but its report could not be stored: the server's disk is full; free space (delete runs), then upload the trace again")
	})
}

// healthDisk answers /healthz once the stores answered: 200 "ok", or 503
// "degraded" while the free space is below the reserve (uploads are then
// refused), with the disk state either way.
func (s *Server) healthDisk(c echo.Context) error {
	body := map[string]any{"status": "ok", "replica": s.replica}
	if len(s.diskDirs()) == 0 {
		return c.JSON(http.StatusOK, body)
	}
	d, err := s.disk()
	if err != nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "disk: "+err.Error())
	}
	body["disk"] = d
	if d.Low {
		body["status"] = "degraded"
		body["reason"] = "the disk is nearly full: uploads are refused until space is freed (delete runs)"
		return c.JSON(http.StatusServiceUnavailable, body)
	}
	return c.JSON(http.StatusOK, body)
}

// storeFailed reports whether an upload failed on a file of the server's
// own (a *fs.PathError: the store, not the client): its message names
// the server's paths, so it is logged, not answered.
func storeFailed(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}

// storeFailedMsg answers an upload the store failed.
const storeFailedMsg = "the server could not store the upload (its log says why): nothing was stored, send it again later"
