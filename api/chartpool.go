package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
	"kinetoscope/render"
)

// chartKey is the cache key of a rendered chart: the run, a digest of its
// report (a report recorded again gets new images), the kind, the
// parameters and the format.
func chartKey(id, reportHash, kind string, rank, step int, format string) string {
	return fmt.Sprintf("%s/%s-%s-r%d-s%d.%s", id, reportHash, kind, rank, step, format)
}

// reportWithHash returns a run's decoded report, held against the run's
// link setting, and a digest of both (linkedReport).
func (s *Server) reportWithHash(ctx context.Context, id string) (*analyze.Report, string, error) {
	return s.linkedReport(ctx, id, "", "")
}

// renderChart returns the image cached under key, or draws it on the
// chart pool (cfg.ChartWorkers at once, never an analysis worker) within
// cfg.ChartTimeout, waiting for a slot included, and caches it. A chart
// that takes too long answers 503; its drawing is told to stop (ctx) and
// keeps its slot until it does.
func (s *Server) renderChart(ctx context.Context, key string, draw func(context.Context) ([]byte, error)) ([]byte, error) {
	if img, ok := s.images.get(key); ok {
		return img, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ChartTimeout)
	defer cancel()
	if err := s.acquireChart(ctx); err != nil {
		return nil, err
	}
	if !s.begin() {
		s.releaseChart()
		return nil, echo.NewHTTPError(http.StatusServiceUnavailable, "the server is shutting down")
	}
	type result struct {
		img []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer s.wg.Done()
		defer s.releaseChart()
		img, err := drawSafely(ctx, key, draw)
		if err == nil {
			s.images.put(key, img)
		}
		done <- result{img, err}
	}()
	select {
	case r := <-done:
		if errors.Is(r.err, render.ErrNoData) {
			// A chart of something the run does not have (no collectives,
			// no kernels in the step) is not there, not a failure.
			return nil, echo.NewHTTPError(http.StatusNotFound, r.err.Error())
		}
		return r.img, r.err
	case <-ctx.Done():
		return nil, s.chartTimeout(ctx)
	}
}

// drawSafely draws and turns a panic into an error.
func drawSafely(ctx context.Context, key string, draw func(context.Context) ([]byte, error)) (img []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chart %s: drawing crashed: %v", key, r)
		}
	}()
	return draw(ctx)
}

// acquireChart takes a slot of the chart pool, or fails when ctx or the
// server ends first.
func (s *Server) acquireChart(ctx context.Context) error {
	select {
	case s.charts <- struct{}{}:
		return nil
	case <-ctx.Done():
		return s.chartTimeout(ctx)
	case <-s.ctx.Done():
		return echo.NewHTTPError(http.StatusServiceUnavailable, "the server is shutting down")
	}
}

func (s *Server) releaseChart() { <-s.charts }

// chartTimeout explains a chart request that ran out of time (503) or
// whose client went away.
func (s *Server) chartTimeout(ctx context.Context) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ctx.Err()
	}
	return echo.NewHTTPError(http.StatusServiceUnavailable, fmt.Sprintf(
		"chart not drawn within %s (the server's --chart-timeout): the chart workers are busy or the trace is large; try again later", s.cfg.ChartTimeout))
}
