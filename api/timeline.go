package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
	"kinetoscope/api/store"
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/render"
)

// timelineKind is the chart kind drawn from the run's stored trace rather
// than from its report.
const timelineKind = "timeline"

// getTimeline handles GET /api/v1/runs/{id}/charts/timeline.{svg|png}
// ?rank=N&step=M: the kernels of one step (default: the slowest of the
// rank's shown phase) on one rank (default: the first).
func (s *Server) getTimeline(c echo.Context, format string) error {
	rank, err := intQuery(c, "rank")
	if err != nil {
		return err
	}
	step, err := intQuery(c, "step")
	if err != nil {
		return err
	}
	ctx, id := c.Request().Context(), c.Param("id")
	img, err := s.Timeline(ctx, id, rank, step, format)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "private, max-age=300")
	return c.Blob(http.StatusOK, chartType(format), img)
}

// intQuery parses an optional whole-number query parameter (0 or more);
// -1 when absent.
func intQuery(c echo.Context, name string) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad %s %q: want a whole number, 0 or more", name, v))
	}
	return n, nil
}

// Timeline draws the timeline of one step of a run (step -1: the slowest
// of the rank's shown phase; rank -1: the first rank). It reads the run's
// stored trace again, on the chart pool (see renderChart), and keeps the
// image in the chart cache.
func (s *Server) Timeline(ctx context.Context, id string, rank, step int, format string) ([]byte, error) {
	rep, hash, err := s.reportWithHash(ctx, id)
	if err != nil {
		return nil, err
	}
	rk, st, err := render.TimelineStep(rep, rank, step)
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("timeline of run %s: %v", id, err))
	}
	run, err := s.Run(ctx, id)
	if err != nil {
		return nil, err
	}
	key := chartKey(id, hash, timelineKind, rk.Rank, st.Index, format)
	return s.renderChart(ctx, key, func(ctx context.Context) ([]byte, error) {
		if img, ok := s.images.get(key); ok { // drawn while this request waited
			return img, nil
		}
		return s.drawTimeline(ctx, run, rep, rk, st.Index, format)
	})
}

// drawTimeline reads the run's files (only the rank's own file when the
// report names it) and draws the timeline.
func (s *Server) drawTimeline(ctx context.Context, run *store.Run, rep *analyze.Report, rk *analyze.Rank, step int, format string) ([]byte, error) {
	files := rankFiles(run.Files, rk.File)
	set, err := driver.Read(s.input(ctx, files, nil),
		driver.Options{Options: ingest.Options{Context: ctx, MaxUncompressedBytes: s.cfg.MaxUncompressedBytes, MaxRatio: s.cfg.MaxRatio,
			Ranks: fileRanks(files)}})
	if err != nil {
		return nil, fmt.Errorf("timeline of run %s: read: %w", run.ID, err)
	}
	img, err := (&driver.Run{Report: rep, Set: set}).Chart(driver.ChartRequest{Kind: timelineKind, Format: render.Format(format), Rank: rk.Rank, Step: step})
	if err != nil {
		return nil, fmt.Errorf("timeline of run %s, rank %d, step %d: %w", run.ID, rk.Rank, step, err)
	}
	return img, nil
}

// rankFiles returns the one file of files that the report names file (see
// layoutNames), else all of them (an archive holds every rank).
func rankFiles(files []store.File, file string) []store.File {
	for i, name := range layoutNames(files) {
		if name == file {
			return files[i : i+1]
		}
	}
	return files
}

// acquireWorker takes one of the cfg.Workers slots that bound the memory
// spent reading traces, or fails when ctx or the server ends first.
func (s *Server) acquireWorker(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return echo.NewHTTPError(http.StatusServiceUnavailable, "every analysis worker stayed busy: try again later")
	case <-s.ctx.Done():
		return echo.NewHTTPError(http.StatusServiceUnavailable, "the server is shutting down")
	}
}

func (s *Server) releaseWorker() { <-s.sem }
