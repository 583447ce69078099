package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/store"
)

// prepareDataDir creates the data directory readable by this user alone
// (0700; an existing one is made so) and the embedded database's files
// 0600, before SQLite opens them (it gives its log files the database
// file's mode): other local users read no trace, token or not.
func prepareDataDir(cfg Config) error {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	db, ok := strings.CutPrefix(cfg.Meta, "sqlite://")
	if !ok {
		return nil
	}
	f, err := os.OpenFile(db, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	f.Close()
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("database: %w", err)
		}
	}
	return nil
}

// checkToken refuses a token of blanks: an operator who meant to set
// one would get a server whose token anyone guesses.
func checkToken(name, tok string) error {
	if tok != "" && strings.TrimSpace(tok) == "" {
		return fmt.Errorf("the %s is blank: give a token of visible characters", name)
	}
	return nil
}

// requeueUnfinished queues again the runs a previous process left
// unfinished, first saying "queued" for those it left "running": none is
// analysed until a worker takes it.
func (s *Server) requeueUnfinished(ctx context.Context, ids []string) {
	for _, id := range ids {
		run, err := s.meta.Get(ctx, id)
		if err == nil && run.Status == store.StatusRunning {
			p := store.Progress{Phase: "queued", TotalBytes: run.Size()}
			err = s.meta.SetStatus(ctx, id, store.StatusQueued, p, "")
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("requeue an unfinished run", "run", id, "err", err)
		}
		s.enqueue(id)
	}
}

// headAsGet routes a HEAD request as the GET of the same path, its body
// dropped (echo routes HEAD only where it is registered, and answered
// 405 elsewhere). The router reads the method of the request itself, so
// that is changed; headKey marks it.
func headAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if req := c.Request(); req.Method == http.MethodHead {
			req.Method = http.MethodGet
			c.Set(headKey, true)
			c.Response().Writer = headWriter{c.Response().Writer}
		}
		return next(c)
	}
}

// headWriter drops the body of the answer to a HEAD request.
type headWriter struct{ http.ResponseWriter }

// Write implements io.Writer: it drops b.
func (w headWriter) Write(b []byte) (int, error) { return len(b), nil }

// Unwrap lets http.ResponseController reach the connection.
func (w headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headKey marks, in its context, a HEAD request routed as a GET.
const headKey = "kinetoscope.head"

// serveBlob answers a stored file with Range support (a trace is large:
// a download cut off resumes where it stopped), If-Modified-Since and
// HEAD, by http.ServeContent.
func serveBlob(c echo.Context, ctype string, modified time.Time, b store.Blob) error {
	c.Response().Header().Set(echo.HeaderContentType, ctype)
	req := c.Request()
	if c.Get(headKey) == true {
		head := *req
		head.Method = http.MethodHead // the blob is not read
		req = &head
	}
	http.ServeContent(c.Response(), req, "", modified, io.NewSectionReader(b, 0, b.Size()))
	return nil
}
