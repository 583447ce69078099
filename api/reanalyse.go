package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/store"
)

// reanalyseRun handles POST /api/v1/runs/{id}/reanalyse: a done or failed
// run is analysed again from its stored files, by this server's rules
// (the way to apply changed rules to stored runs, or to retry a run that a
// store outage failed). Its report is replaced once the new analysis is
// over; meanwhile it is queued. A run still queued or running answers
// 409.
func (s *Server) reanalyseRun(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	run, err := s.meta.Get(ctx, id)
	if err != nil {
		return notFound(err)
	}
	p := store.Progress{Stage: "queued", TotalBytes: run.Size()}
	err = s.queue.reset(ctx, id, p)
	switch {
	case errors.Is(err, store.ErrUnfinished) || errors.Is(err, errJobFinishing):
		return echo.NewHTTPError(http.StatusConflict, fmt.Sprintf("run %s is %s: its analysis is not over yet", id, run.Status))
	case err != nil:
		return notFound(err)
	}
	// The answer is the run as this request left it, queued: read before
	// the in-process queue may start it.
	run, err = s.Run(ctx, id)
	if err != nil {
		return err
	}
	s.queue.start(id)
	s.images.dropRun(id)
	s.log.Info("run queued for a new analysis", "run", id, "replica", s.replica)
	url := "/api/v1/runs/" + id
	c.Response().Header().Set(echo.HeaderLocation, url)
	return c.JSON(http.StatusAccepted, map[string]any{"id": id, "status": run.Status, "status_url": url, "run": run})
}
