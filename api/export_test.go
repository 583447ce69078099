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

// Analysis is what OpenWithAnalysis's wrap is told of one analysis: the
// run's id and the names its files are read under.
type Analysis struct {
	Run   string
	Files []string
}

// OpenWithAnalysis opens a server whose analysis of a run is wrap, given
// the real analysis to call (or not).
func OpenWithAnalysis(cfg Config, wrap func(ctx context.Context, a Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error)) (*Server, error) {
	return open(cfg, func(ctx context.Context, run string, files []string, real func() (*analyze.Report, error)) (*analyze.Report, error) {
		return wrap(ctx, Analysis{Run: run, Files: files}, real)
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

// SweepNow sweeps the blobs that no run references and no upload holds,
// older than cfg.SweepAge, as the hourly sweep does, and returns how
// many it removed.
func (s *Server) SweepNow(ctx context.Context) (int, error) { return s.sweepOrphans(ctx) }

// RescueSlack is rescueSlack: how long past the job timeout and the
// margin a dead replica's job may wait for another replica.
const RescueSlack = rescueSlack
