package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze/diff"
	"kinetoscope/driver"
)

// diffType returns the content type of a diff format ("" for none).
func diffType(format string) string {
	if !slices.Contains(driver.DiffFormats(), format) {
		return ""
	}
	return driver.ContentType(format)
}

// getDiff handles GET /api/v1/diff?base=&head=&rank=&phase=&format=.
func (s *Server) getDiff(c echo.Context) error {
	format := c.QueryParam("format")
	if format == "" {
		format = "json"
	}
	ctype := diffType(format)
	if ctype == "" {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad format %q: want json, markdown or table", format))
	}
	d, err := s.Diff(c.Request().Context(), c.QueryParams())
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := driver.WriteDiff(&buf, d, format); err != nil {
		return fmt.Errorf("diff as %s: %w", format, err)
	}
	return c.Blob(http.StatusOK, ctype, buf.Bytes())
}

// Diff compares the reports of the runs named by the query's base and
// head, on the rank given by rank (default: all ranks, pooled per step)
// and the steps of phase (default: decode).
func (s *Server) Diff(ctx context.Context, q url.Values) (*diff.Diff, error) {
	baseID, headID := q.Get("base"), q.Get("head")
	if baseID == "" || headID == "" {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "diff needs two runs: ?base=RUN_ID&head=RUN_ID")
	}
	opt, err := diffOptions(q)
	if err != nil {
		return nil, err
	}
	base, err := s.Report(ctx, baseID)
	if err != nil {
		return nil, err
	}
	head, err := s.Report(ctx, headID)
	if err != nil {
		return nil, err
	}
	d, err := driver.Compare(base, head, opt)
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusUnprocessableEntity, err.Error())
	}
	return d, nil
}

// diffOptions parses the rank and phase of a diff query.
func diffOptions(q url.Values) (diff.Options, error) {
	var opt diff.Options
	if v := q.Get("rank"); v != "" && v != "all" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return opt, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad rank %q: want a rank number, or all", v))
		}
		opt.Rank = &n
	}
	opt.Phase = q.Get("phase")
	if opt.Phase != "" && !slices.Contains(diff.Phases(), opt.Phase) {
		return opt, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad phase %q: want one of %s", opt.Phase, strings.Join(diff.Phases(), ", ")))
	}
	return opt, nil
}
