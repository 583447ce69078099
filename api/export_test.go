package api

import (
	"context"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
)

// WebRoute reports whether a route serves the web page (webRoute).
var WebRoute = webRoute

// Echo returns the server's echo instance, for listing its routes.
func (s *Server) Echo() *echo.Echo { return s.echo }

// OpenWithAnalysis opens a server whose analysis of a run is wrap, given
// the real analysis to call (or not).
func OpenWithAnalysis(cfg Config, wrap func(ctx context.Context, path string, real func() (*analyze.Report, error)) (*analyze.Report, error)) (*Server, error) {
	return open(cfg, func(s *Server, ctx context.Context, path string, lp *liveProgress) (*analyze.Report, error) {
		return wrap(ctx, path, func() (*analyze.Report, error) { return s.analyzePath(ctx, path, lp) })
	})
}

// HoldChartWorkers takes every slot of the chart pool until release is
// called, as long chart work would.
func (s *Server) HoldChartWorkers() (release func()) {
	for range cap(s.charts) {
		s.charts <- struct{}{}
	}
	return func() {
		for range cap(s.charts) {
			<-s.charts
		}
	}
}
