package api

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/store"
	"kinetoscope/ingest"
)

// isBodyType reports whether a content type is accepted for a
// single-file upload body.
func isBodyType(ct string) bool {
	switch ct {
	case "application/json", "application/gzip", "application/x-gzip", "application/octet-stream",
		"application/x-tar", "application/x-gtar", "application/zip", "application/x-zip-compressed":
		return true
	}
	return false
}

// createRun handles POST /api/v1/runs.
func (s *Server) createRun(c echo.Context) error {
	req := c.Request()
	release, err := s.admitUpload(c)
	if err != nil {
		return err
	}
	defer release()
	req.Body = http.MaxBytesReader(c.Response(), req.Body, s.cfg.MaxUploadBytes)
	defer s.extendDeadlines(c)()
	ct, params, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if req.Header.Get(echo.HeaderContentType) == "" {
		ct, err = "application/octet-stream", nil
	}
	if err != nil {
		return s.uploadError(unsupportedType(req.Header.Get(echo.HeaderContentType)))
	}
	up := upload{labels: map[string]string{}, ranks: ingest.RankAssignments{}}
	if err := up.setName(c.QueryParam("name")); err != nil {
		return s.uploadError(err)
	}
	if err := up.addLabels(c.QueryParams()["label"]); err != nil {
		return s.uploadError(err)
	}
	if err := up.setLink(c.QueryParam(linkParam)); err != nil {
		return s.uploadError(err)
	}
	if err := up.addRanks(c.QueryParams()[rankParam]); err != nil {
		return s.uploadError(err)
	}
	if err := s.probeStores(req.Context()); err != nil {
		return s.uploadError(err)
	}
	var read func() error
	switch {
	case ct == "multipart/form-data":
		read = func() error { return s.readMultipart(req, params["boundary"], &up) }
	case isBodyType(ct):
		read = func() error { return s.storeFile(req.Context(), req.Body, bodyFileName(c), &up) }
	default:
		return s.uploadError(unsupportedType(ct))
	}
	run, err := s.commit(req.Context(), &up, read)
	if err != nil {
		return s.uploadError(err)
	}
	s.stats.upload(run.Size())
	url := "/api/v1/runs/" + run.ID
	c.Response().Header().Set(echo.HeaderLocation, url)
	return c.JSON(http.StatusAccepted, map[string]any{
		"id": run.ID, "status": run.Status, "status_url": url, "page_url": "/runs/" + run.ID, "run": run,
	})
}

func unsupportedType(ct string) error {
	return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf(
		"unsupported content type %q: send a trace as application/json, application/gzip or application/octet-stream, "+
			"an archive as application/x-tar or application/zip, or several files as multipart/form-data "+
			"(curl: -H 'Content-Type: application/gzip' --data-binary @trace.json.gz, or -F file=@trace.json.gz)", ct))
}

// shutdownMsg answers an upload cut off because the server shuts down.
const shutdownMsg = "the server shut down during the upload: nothing was stored, send it again"

// uploadError turns a storing error into an HTTP error.
func (s *Server) uploadError(err error) error {
	s.stats.rejected()
	var ie *inputError
	var mb *http.MaxBytesError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		return he
	case s.ctx.Err() != nil:
		return echo.NewHTTPError(http.StatusServiceUnavailable, shutdownMsg)
	case diskError(err) != nil:
		return diskError(err)
	case store.Unavailable(err):
		return err // the error handler answers 503 (unavailableAnswer)
	case storeFailed(err):
		s.log.Error("upload: the store failed", "err", err)
		return echo.NewHTTPError(http.StatusInternalServerError, storeFailedMsg)
	case errors.As(err, &ie):
		return echo.NewHTTPError(ie.Code, ie.Msg)
	case errors.As(err, &mb):
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
			fmt.Sprintf("upload larger than %d bytes (the server's --max-upload)", mb.Limit))
	}
	return echo.NewHTTPError(http.StatusBadRequest, "upload failed: "+err.Error())
}

// upload collects what one request sent.
type upload struct {
	name   string
	labels map[string]string
	link   string                 // the run's link setting (linkParam)
	ranks  ingest.RankAssignments // the rank fields (rankParam)
	files  []store.File
	stored []string // hashes of every blob stored, accepted or not
	// id names the upload as the holder of its blobs (see hold).
	id string
}

// holder returns the name the upload holds its blobs by.
func (up *upload) holder() string {
	if up.id == "" {
		up.id = "upload-" + newID()
	}
	return up.id
}

// commit stores an upload's files with read and records the run, then
// queues its analysis. When anything fails, the blobs it stored that no
// run uses are removed: a failed upload leaves nothing behind.
func (s *Server) commit(ctx context.Context, up *upload, read func() error) (*store.Run, error) {
	run, err := s.storeRun(ctx, up, read)
	s.release(context.WithoutCancel(ctx), up)
	if err != nil {
		s.dropOrphans(context.WithoutCancel(ctx), up.stored)
		return nil, err
	}
	s.queue.start(run.ID)
	return run, nil
}

// storeRun reads the files, then records the run while holding off
// deletes. A blob removed by a delete between the moment its upload
// stored it and the moment that upload held it (see hold) fails the
// upload, which the client may send again.
func (s *Server) storeRun(ctx context.Context, up *upload, read func() error) (*store.Run, error) {
	if err := read(); err != nil {
		return nil, err
	}
	if err := assignRanks(up); err != nil {
		return nil, err
	}
	if err := rankClash(up.files); err != nil {
		return nil, err
	}
	unlock, err := s.lockBlobs(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, f := range up.files {
		ok, err := s.blobs.Has(ctx, f.SHA256)
		if err != nil {
			return nil, fmt.Errorf("check stored file %s: %w", f.Name, err)
		}
		if !ok {
			return nil, &inputError{Code: http.StatusServiceUnavailable, Msg: f.Name +
				": a delete of the same content removed the stored file while the upload was recorded: send it again"}
		}
	}
	return s.newRun(ctx, up)
}

// hold keeps deletes, in every process that shares the store, from
// removing a blob the upload has just stored, until the upload calls
// release (or holdFor has passed, if this process dies first).
func (s *Server) hold(ctx context.Context, up *upload, sha string) error {
	if err := s.meta.Hold(ctx, sha, up.holder(), time.Now().Add(holdFor)); err != nil {
		return fmt.Errorf("store %s: %w", sha, err)
	}
	return nil
}

// holdFor bounds how long an upload holds its blobs: longer than any
// upload takes (one that stalls is dropped after StallTimeout).
const holdFor = 24 * time.Hour

// lockBlobs orders recording a run against deleting the blobs no run
// uses: within this process (blobMu) and, over PostgreSQL, between the
// replicas (an advisory lock), so that no replica deletes a blob that
// another is recording a run with.
func (s *Server) lockBlobs(ctx context.Context) (unlock func(), err error) {
	s.blobMu.Lock()
	release, err := s.queue.lockBlobs(ctx)
	if err != nil {
		s.blobMu.Unlock()
		return nil, fmt.Errorf("blob lock: %w", err)
	}
	return func() {
		release()
		s.blobMu.Unlock()
	}, nil
}

// blobLockKey is the advisory lock key of lockBlobs.
const blobLockKey = 0x6b696e65746f7332 // "kinetos2"

// release ends the holds of an upload on its blobs.
func (s *Server) release(ctx context.Context, up *upload) {
	if up.id == "" {
		return
	}
	if err := s.meta.Release(ctx, up.id); err != nil {
		s.log.Warn("release held blobs (they stay held until they expire)", "upload", up.id, "err", err)
	}
}

// dropOrphans deletes the blobs that no run references and no upload
// holds (Referenced).
func (s *Server) dropOrphans(ctx context.Context, hashes []string) {
	unlock, err := s.lockBlobs(ctx)
	if err != nil {
		s.log.Warn("orphan blobs kept", "err", err)
		return
	}
	defer unlock()
	for _, h := range hashes {
		used, err := s.meta.Referenced(ctx, h)
		if err != nil {
			s.log.Warn("orphan blob check", "sha256", h, "err", err)
			continue
		}
		if !used {
			if err := s.blobs.Delete(ctx, h); err != nil {
				s.log.Warn("delete orphan blob", "sha256", h, "err", err)
			}
		}
	}
}

// Bounds on what a run is called.
const (
	maxNameBytes  = 256 // a run's name
	maxLabelBytes = 256 // one key=value label
	maxLabels     = 32  // labels of one run
)

// setName sets the run's name, refusing one longer than maxNameBytes.
func (u *upload) setName(name string) error {
	name = strings.TrimSpace(name)
	if len(name) > maxNameBytes {
		return badRequest("name is %d bytes long: at most %d", len(name), maxNameBytes)
	}
	u.name = name
	return nil
}

// addLabels parses "key=value" labels (several may be comma-separated),
// each at most maxLabelBytes long, at most maxLabels in all.
func (u *upload) addLabels(vals []string) error {
	for _, v := range vals {
		for _, kv := range strings.Split(v, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, val, ok := strings.Cut(kv, "=")
			switch {
			case len(kv) > maxLabelBytes:
				return badRequest("label %.40q... is %d bytes long: at most %d", kv, len(kv), maxLabelBytes)
			case !ok || strings.TrimSpace(k) == "":
				return badRequest("bad label %q: want key=value", kv)
			}
			u.labels[strings.TrimSpace(k)] = strings.TrimSpace(val)
			if len(u.labels) > maxLabels {
				return badRequest("more than %d labels", maxLabels)
			}
		}
	}
	return nil
}

// badRequest returns a 400 error with a formatted message.
func badRequest(format string, args ...any) error {
	return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// readMultipart stores each file part and reads the name, label, link and
// rank fields.
func (s *Server) readMultipart(req *http.Request, boundary string, up *upload) error {
	if boundary == "" {
		return badInput("multipart body without a boundary")
	}
	mr := multipart.NewReader(req.Body, boundary)
	for parts := 1; ; parts++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return badInput("bad multipart body: %v", err)
		}
		if parts > s.cfg.MaxParts {
			part.Close()
			return &inputError{Code: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf(
				"multipart body has more than %d parts (the server's --max-parts)", s.cfg.MaxParts)}
		}
		if err := s.readPart(req.Context(), part, up); err != nil {
			return err
		}
		if len(up.files) > s.cfg.MaxFiles {
			return &inputError{Code: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf(
				"more than %d files in one run (the server's --max-files)", s.cfg.MaxFiles)}
		}
	}
	if len(up.files) == 0 {
		return badInput("multipart body holds no file: send the trace(s) as file parts (curl -F file=@trace.json.gz)")
	}
	if len(up.files) > 1 {
		for _, f := range up.files {
			if f.Format != ingest.FormatJSON && f.Format != ingest.FormatGzip {
				return badInput("%s: an archive must be uploaded alone, not with other files", f.Name)
			}
		}
	}
	return nil
}

func (s *Server) readPart(ctx context.Context, part *multipart.Part, up *upload) error {
	defer part.Close()
	if part.FileName() != "" {
		return s.storeFile(ctx, part, part.FileName(), up)
	}
	val, err := io.ReadAll(io.LimitReader(part, 4097))
	if err != nil {
		return badInput("bad multipart field %q: %v", part.FormName(), err)
	}
	if len(val) > 4096 {
		return badInput("multipart field %q is too long", part.FormName())
	}
	switch part.FormName() {
	case "name":
		return up.setName(string(val))
	case "labels", "label":
		return up.addLabels([]string{string(val)})
	case linkParam:
		return up.setLink(string(val))
	case rankParam:
		return up.addRanks([]string{string(val)})
	}
	return nil
}

// storeFile streams one file to the blob store while validating it, and
// adds it to up. The blob appears only if the whole file arrived; one that
// fails the checks is left in up.stored for commit to drop.
func (s *Server) storeFile(ctx context.Context, r io.Reader, name string, up *upload) error {
	name = cleanName(name)
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(512)
	if len(head) == 0 {
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: read: %w", displayName(name), err)
		}
		return badInput("%s: empty body: nothing to analyse", displayName(name))
	}
	kind := ingest.Sniff(head)
	lim := s.limits()
	pr, pw := io.Pipe()
	type result struct {
		kind string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		k, err := lim.Check(displayName(name), kind, pr)
		err = checkFailure(err)
		if err != nil {
			pr.CloseWithError(err)
		} else {
			io.Copy(io.Discard, pr)
		}
		done <- result{k, err}
	}()
	sha, size, perr := s.blobs.Put(ctx, io.TeeReader(br, pw))
	pw.CloseWithError(perr)
	res := <-done
	if perr != nil { // the validator's error when it stopped first
		return fmt.Errorf("store %s: %w", displayName(name), perr)
	}
	up.stored = append(up.stored, sha)
	if err := s.hold(ctx, up, sha); err != nil {
		return err
	}
	if res.err != nil {
		return res.err
	}
	f := store.File{Name: name, SHA256: sha, Size: size, Format: res.kind}
	if f.Name == "" {
		f.Name = "upload" + ingest.FormatExt(f.Format)
	}
	if kind == ingest.FormatZip {
		b, err := s.blobs.Open(ctx, sha)
		if err != nil {
			return fmt.Errorf("store %s: %w", displayName(name), err)
		}
		err = lim.CheckZip(f.Name, b, b.Size())
		b.Close()
		if err != nil {
			return checkFailure(err)
		}
	}
	up.files = append(up.files, f)
	return nil
}

func (s *Server) limits() ingest.Limits {
	return ingest.Limits{MaxUncompressedBytes: s.cfg.MaxUncompressedBytes, MaxRatio: s.cfg.MaxRatio, MaxMembers: s.cfg.MaxFiles}
}

// cleanName keeps an uploaded file's name and the relative directories
// above it (a profile directory's capture_traces/ matters), each component
// without odd characters, "." or "..".
func cleanName(name string) string {
	var parts []string
	for _, part := range strings.Split(strings.ReplaceAll(name, "\\", "/"), "/") {
		if part = cleanComponent(part); part != "" {
			parts = append(parts, part)
		}
	}
	if len(parts) > 8 {
		parts = parts[len(parts)-8:]
	}
	return strings.Join(parts, "/")
}

// cleanComponent sanitises one path component.
func cleanComponent(part string) string {
	b := []byte(part)
	for i, c := range b {
		if !(c == '.' || c == '-' || c == '_' || c == '#' || c == '+' ||
			c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[len(b)-200:]
	}
	return strings.TrimLeft(string(b), ".")
}

func displayName(name string) string {
	if name == "" {
		return "upload"
	}
	return name
}

// newRun records a complete upload as a queued run.
func (s *Server) newRun(ctx context.Context, up *upload) (*store.Run, error) {
	now := time.Now().UTC()
	run := &store.Run{
		ID: newID(), Name: up.name, Labels: up.labels, Status: store.StatusQueued,
		Files: up.files, Link: up.link, Created: now, Updated: now,
	}
	if run.Name == "" {
		run.Name = up.files[0].Name
		if len(up.files) > 1 {
			run.Name += fmt.Sprintf(" (+%d files)", len(up.files)-1)
		}
	}
	run.Progress = store.Progress{Stage: "queued", TotalBytes: run.Size()}
	if err := s.queue.create(ctx, run); err != nil {
		return nil, fmt.Errorf("record run: %w", err)
	}
	return run, nil
}

// newID returns a new run id: 16 random hex digits.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// extendDeadlines lets a long upload or download run past the server's
// read and write timeouts while data keeps flowing: every read of the
// request body and every write of the response pushes the deadlines
// StallTimeout ahead, so only a stalled transfer is cut off. When the
// server closes, the transfer is cut off at once. The caller must call
// release before its handler returns.
func (s *Server) extendDeadlines(c echo.Context) (release func()) {
	p := &pusher{
		rc:    http.NewResponseController(c.Response().Writer),
		stall: s.cfg.StallTimeout,
		every: min(time.Second, s.cfg.StallTimeout/4),
	}
	p.touch()
	stop := context.AfterFunc(s.ctx, p.cutOff)
	req := c.Request()
	req.Body = &deadlineBody{ReadCloser: req.Body, p: p}
	c.Response().Writer = &deadlineWriter{ResponseWriter: c.Response().Writer, p: p}
	return func() {
		stop()
		p.finish()
	}
}

// pusher sets a connection's deadlines StallTimeout ahead, at most once
// every period, until it is cut off or finished.
type pusher struct {
	rc    *http.ResponseController
	stall time.Duration
	every time.Duration

	mu       sync.Mutex
	last     time.Time
	cut      bool // the server is closing: deadlines stay in the past
	finished bool // the handler returned: rc must not be used
}

func (p *pusher) touch() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); !p.cut && !p.finished && now.Sub(p.last) > p.every {
		p.last = now
		p.set(now.Add(p.stall))
	}
}

// cutOff ends the transfer: pending and later reads fail at once, and
// writes within answerGrace, time enough for an upload's 503 answer.
func (p *pusher) cutOff() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.finished {
		p.cut = true
		now := time.Now()
		p.rc.SetReadDeadline(now)
		p.rc.SetWriteDeadline(now.Add(answerGrace))
	}
}

// answerGrace is how long a transfer cut off by shutdown may still write:
// an upload answers 503, a download stops soon after.
const answerGrace = 2 * time.Second

func (p *pusher) finish() {
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
}

func (p *pusher) set(t time.Time) {
	p.rc.SetReadDeadline(t)
	p.rc.SetWriteDeadline(t)
}

// deadlineBody pushes the deadlines as the request body is read.
type deadlineBody struct {
	io.ReadCloser
	p *pusher
}

// Read pushes the deadlines and reads the body.
func (d *deadlineBody) Read(b []byte) (int, error) {
	d.p.touch()
	return d.ReadCloser.Read(b)
}

// deadlineWriter pushes the deadlines as the response is written.
type deadlineWriter struct {
	http.ResponseWriter
	p *pusher
}

// Write pushes the deadlines and writes the response.
func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.p.touch()
	return d.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// bodyFileName is the file name of a raw-body upload: ?filename=, else the
// Content-Disposition header's filename (curl -H 'Content-Disposition:
// attachment; filename="rank0.pt.trace.json.gz"'), else "" (the server
// names it after its content).
func bodyFileName(c echo.Context) string {
	if n := c.QueryParam("filename"); n != "" {
		return n
	}
	if _, params, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentDisposition)); err == nil {
		return params["filename"]
	}
	return ""
}
