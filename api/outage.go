package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/store"
)

// A store that fails (PostgreSQL or S3 down, a disk that cannot be read)
// is the server's trouble, not the client's: requests it fails answer 503
// with Retry-After, never 400 or 500, and an upload learns it before it
// sends its body (probeStores), not after the S3 client's retries.

// retryAfterSeconds is the Retry-After of an answer to a store outage.
const retryAfterSeconds = 5

// unavailableAnswer returns the answer to err when a store failed (see
// store.Unavailable): 503, and a message that names the store and what to
// do but not the store's own error text (it is logged).
func (s *Server) unavailableAnswer(c echo.Context, err error) (*echo.HTTPError, bool) {
	if !store.Unavailable(err) {
		return nil, false
	}
	what := "a store"
	var ue *store.UnavailableError
	var re *store.ReadError
	switch {
	case errors.As(err, &ue):
		what = ue.Store
	case errors.As(err, &re):
		what = re.Store
	}
	s.log.Warn("store unavailable", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err, "replica", s.replica)
	c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	msg := what + " is unavailable; try again in a few seconds"
	if c.Request().Method == http.MethodPost && c.Path() == "/api/v1/runs" {
		msg = what + " is unavailable: nothing was stored; send the upload again in a few seconds"
	}
	return echo.NewHTTPError(http.StatusServiceUnavailable, msg), true
}

// probeStores returns an UnavailableError when a store does not answer
// within store.ProbeTimeout: the first contact of an upload with the
// stores, before it reads the body.
func (s *Server) probeStores(ctx context.Context) error {
	for _, st := range []any{s.meta, s.blobs} {
		if p, ok := st.(store.Prober); ok {
			if err := p.Probe(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
