package api

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
	"kinetoscope/api/store"
	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// listRuns handles GET /api/v1/runs?limit=&offset=&label=k=v.
func (s *Server) listRuns(c echo.Context) error {
	opt, err := listOptions(c.QueryParams())
	if err != nil {
		return err
	}
	runs, total, err := s.ListRuns(c.Request().Context(), opt)
	if err != nil {
		return err
	}
	out := map[string]any{"runs": runs, "total": total, "limit": opt.Limit, "offset": opt.Offset}
	if next := opt.Offset + len(runs); next < total {
		q := c.QueryParams()
		q.Set("offset", strconv.Itoa(next))
		q.Set("limit", strconv.Itoa(opt.Limit))
		out["next"] = "/api/v1/runs?" + q.Encode()
	}
	return c.JSON(http.StatusOK, out)
}

// listOptions parses paging and label filters.
func listOptions(q url.Values) (store.ListOptions, error) {
	opt := store.ListOptions{Limit: 50, Labels: map[string]string{}}
	for _, p := range []struct {
		name string
		dst  *int
		max  int
	}{{"limit", &opt.Limit, 500}, {"offset", &opt.Offset, 1 << 30}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > p.max || (p.name == "limit" && n == 0) {
			return opt, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad %s %q: want a whole number up to %d", p.name, v, p.max))
		}
		*p.dst = n
	}
	up := upload{labels: opt.Labels}
	if err := up.addLabels(q["label"]); err != nil {
		return opt, err
	}
	if v := q.Get("status"); v != "" {
		switch st := store.Status(v); st {
		case store.StatusQueued, store.StatusRunning, store.StatusDone, store.StatusFailed:
			opt.Status = st
		default:
			return opt, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad status %q: want queued, running, done or failed", v))
		}
	}
	opt.Name = q.Get("name")
	return opt, knownParams(q, "limit", "offset", "label", "status", "name")
}

// knownParams answers 400 naming the first query parameter not in names:
// a parameter is never ignored silently.
func knownParams(q url.Values, names ...string) error {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(names, k) {
			return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("unknown query parameter %q: this endpoint takes %s", k, strings.Join(names, ", ")))
		}
	}
	return nil
}

// ListRuns returns a page of runs with the live progress of those being
// analysed.
func (s *Server) ListRuns(ctx context.Context, opt store.ListOptions) ([]*store.Run, int, error) {
	runs, total, err := s.meta.List(ctx, opt)
	if err != nil {
		return nil, 0, err
	}
	for _, r := range runs {
		s.withLive(r)
	}
	if runs == nil {
		runs = []*store.Run{}
	}
	return runs, total, nil
}

func (s *Server) withLive(r *store.Run) {
	if p, ok := s.liveOf(r.ID); ok && r.Status == store.StatusRunning {
		r.Progress = p
	}
	s.noteStalled(r)
}

// Run returns one run with its live progress.
func (s *Server) Run(ctx context.Context, id string) (*store.Run, error) {
	r, err := s.meta.Get(ctx, id)
	if err != nil {
		return nil, notFound(err)
	}
	s.withLive(r)
	return r, nil
}

// Report returns a run's decoded report, held against the run's link
// setting (linkedReport).
func (s *Server) Report(ctx context.Context, id string) (*analyze.Report, error) {
	r, _, err := s.linkedReport(ctx, id, "")
	return r, err
}

// storedReport returns a run and its stored report, or an error saying
// why there is none yet.
func (s *Server) storedReport(ctx context.Context, id string) (*store.Run, []byte, error) {
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	switch run.Status {
	case store.StatusFailed:
		return nil, nil, echo.NewHTTPError(http.StatusUnprocessableEntity, fmt.Sprintf("run %s failed analysis: %s", id, run.Error))
	case store.StatusQueued, store.StatusRunning:
		return nil, nil, echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("run %s is %s (%s): no report yet", id, run.Status, run.Progress.Stage))
	}
	js, err := s.meta.Report(ctx, id)
	return run, js, notFound(err)
}

// errBlobMissing marks a run's stored file that is no longer in the blob
// store: the error handler answers 410 Gone.
var errBlobMissing = errors.New("missing from the blob store")

// blobError explains why a run's stored file f cannot be read.
func blobError(f store.File, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("stored file %s (sha256 %s) is %w", f.Name, f.SHA256, errBlobMissing)
	}
	return fmt.Errorf("stored file %s: %w", f.Name, err)
}

// notFound turns store.ErrNotFound into a 404.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return echo.NewHTTPError(http.StatusNotFound, err.Error())
	}
	return err
}

// getRun handles GET /api/v1/runs/{id}.
func (s *Server) getRun(c echo.Context) error {
	r, err := s.Run(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// predictParam is the report request's workload to estimate the step at
// (analyze.ParseWorkload: batch=64,context=4096), for that request only.
const predictParam = "predict"

// predicted returns rep with each cost model's prediction at the workload
// the request named; rep itself when it named none.
func predicted(rep *analyze.Report, workload string) (*analyze.Report, error) {
	if workload == "" {
		return rep, nil
	}
	w, err := analyze.ParseWorkload(workload)
	if err != nil {
		return nil, badRequest("?%s=: %v", predictParam, err)
	}
	return analyze.WithPrediction(rep, w), nil
}

// getReport handles GET /api/v1/runs/{id}/report?format=: the stored
// JSON, or the report in another of the driver's formats.
func (s *Server) getReport(c echo.Context) error {
	if err := knownParams(c.QueryParams(), "format", linkParam, predictParam); err != nil {
		return err
	}
	format := c.QueryParam("format")
	if format != "" && format != "json" && !slices.Contains(driver.ReportFormats(), format) {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad format %q: want one of %s", format, strings.Join(driver.ReportFormats(), ", ")))
	}
	rep, _, err := s.linkedReport(c.Request().Context(), c.Param("id"), c.QueryParam(linkParam))
	if err != nil {
		return err
	}
	if rep, err = predicted(rep, c.QueryParam(predictParam)); err != nil {
		return err
	}
	if format == "" || format == "json" {
		js, err := driver.EncodeReport(rep)
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, js)
	}
	var buf bytes.Buffer
	if err := driver.WriteReport(&buf, rep, format); err != nil {
		return fmt.Errorf("report as %s: %w", format, err)
	}
	return c.Blob(http.StatusOK, driver.ContentType(format), buf.Bytes())
}

// getTrace handles GET /api/v1/runs/{id}/trace: the uploaded file itself
// when there is one (Perfetto opens it), else a tar of the files.
func (s *Server) getTrace(c echo.Context) error {
	ctx := c.Request().Context()
	run, err := s.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	defer s.extendDeadlines(c)()
	w := c.Response()
	if name := c.QueryParam("file"); name != "" {
		return s.getTraceFile(c, run, name)
	}
	if len(run.Files) == 1 {
		f := run.Files[0]
		rc, err := s.blobs.Open(ctx, f.SHA256)
		if err != nil {
			return fmt.Errorf("run %s: %w", run.ID, blobError(f, err))
		}
		defer rc.Close()
		w.Header().Set(echo.HeaderContentDisposition, attachment(f.Name))
		return serveBlob(c, contentType(f.Format), run.Created, rc)
	}
	w.Header().Set(echo.HeaderContentDisposition, attachment(run.ID+".tar"))
	w.Header().Set(echo.HeaderContentType, "application/x-tar")
	w.WriteHeader(http.StatusOK)
	return s.writeTar(ctx, w, run)
}

// contentType returns the content type of a stored file's kind.
func contentType(kind string) string {
	switch kind {
	case ingest.FormatJSON:
		return "application/json"
	case ingest.FormatGzip, ingest.FormatTarGz:
		return "application/gzip"
	case ingest.FormatTar:
		return "application/x-tar"
	case ingest.FormatZip:
		return "application/zip"
	}
	return "application/octet-stream"
}

// attachment returns a Content-Disposition that downloads as name.

func attachment(name string) string {
	return `attachment; filename="` + strings.ReplaceAll(name, `"`, "_") + `"`
}

// writeTar writes a run's files as a tar stream.
func (s *Server) writeTar(ctx context.Context, w io.Writer, run *store.Run) error {
	tw := tar.NewWriter(w)
	for _, f := range run.Files {
		if err := tw.WriteHeader(&tar.Header{Name: f.Name, Mode: 0o644, Size: f.Size, ModTime: run.Created}); err != nil {
			return fmt.Errorf("tar of run %s: %w", run.ID, err)
		}
		rc, err := s.blobs.Open(ctx, f.SHA256)
		if err != nil {
			return fmt.Errorf("run %s: %w", run.ID, blobError(f, err))
		}
		_, err = io.Copy(tw, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("tar of run %s: %s: %w", run.ID, f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("tar of run %s: %w", run.ID, err)
	}
	return nil
}

// deleteRun handles DELETE /api/v1/runs/{id}.
func (s *Server) deleteRun(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	unlock, err := s.lockBlobs(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	orphans, err := s.deleteMeta(ctx, id)
	if err != nil {
		return notFound(err)
	}
	s.stopAnalysis(id)
	s.images.dropRun(id)
	s.queue.announceDelete(ctx, id)
	for _, sha := range orphans { // neither used by a run nor held by an upload
		if err := s.blobs.Delete(ctx, sha); err != nil {
			s.log.Warn("delete blob", "run", id, "sha256", sha, "err", err)
		}
	}
	s.keepBallast()
	return c.NoContent(http.StatusNoContent)
}

// getTraceFile answers one file of a run, as the report names a rank's
// file: a stored file, or "ARCHIVE!MEMBER" for a member of a stored tar,
// tar.gz or zip, so that each rank's trace opens in Perfetto on its own.
func (s *Server) getTraceFile(c echo.Context, run *store.Run, name string) error {
	ctx := c.Request().Context()
	archive, member, inArchive := strings.Cut(name, "!")
	for _, f := range run.Files {
		if f.Name != archive {
			continue
		}
		if !inArchive {
			rc, err := s.blobs.Open(ctx, f.SHA256)
			if err != nil {
				return fmt.Errorf("run %s: %w", run.ID, blobError(f, err))
			}
			defer rc.Close()
			c.Response().Header().Set(echo.HeaderContentDisposition, attachment(path.Base(f.Name)))
			return serveBlob(c, contentType(f.Format), run.Created, rc)
		}
		rc, err := s.archiveMember(ctx, f, member)
		if err != nil {
			return err
		}
		defer rc.Close()
		c.Response().Header().Set(echo.HeaderContentDisposition, attachment(path.Base(member)))
		return c.Stream(http.StatusOK, memberType(member), rc)
	}
	return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("run %s has no file %q", run.ID, name))
}

// archiveMember opens the member of a stored archive (ingest.OpenMember).
func (s *Server) archiveMember(ctx context.Context, f store.File, member string) (io.ReadCloser, error) {
	b, err := s.blobs.Open(ctx, f.SHA256)
	if err != nil {
		return nil, blobError(f, err)
	}
	rc, err := ingest.OpenMember(f.Format, b, b.Size(), member)
	if err != nil {
		b.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("%s holds no member %q", f.Name, member))
		}
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return memberReader{rc, []io.Closer{rc, b}}, nil
}

// memberReader reads an archive member and closes what it was read
// through.
type memberReader struct {
	io.Reader
	closers []io.Closer
}

// Close closes every closer, and returns the first error.
func (m memberReader) Close() error {
	var first error
	for _, c := range m.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// memberType is the content type of an archive member by its name.
func memberType(name string) string {
	if strings.HasSuffix(name, ".gz") {
		return "application/gzip"
	}
	return "application/json"
}
