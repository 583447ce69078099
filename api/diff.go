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

	"kinetoscope/analyze"
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
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad format %q: want one of %s", format, strings.Join(driver.DiffFormats(), ", ")))
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
	in, err := s.diffInputs(ctx, q)
	if err != nil {
		return nil, err
	}
	return in.compare()
}

// diffInput is what a diff is made of: the two runs' reports with digests
// of their stored JSON (chart cache keys), and the options.
type diffInput struct {
	baseID, headID     string
	base, head         *analyze.Report
	baseHash, headHash string
	opt                diff.Options
}

// diffInputs reads the reports and options a diff query names.
func (s *Server) diffInputs(ctx context.Context, q url.Values) (*diffInput, error) {
	in := &diffInput{baseID: q.Get("base"), headID: q.Get("head")}
	if in.baseID == "" || in.headID == "" {
		return nil, echo.NewHTTPError(http.StatusBadRequest, "diff needs two runs: ?base=RUN_ID&head=RUN_ID")
	}
	var err error
	if in.opt, err = diffOptions(q); err != nil {
		return nil, err
	}
	if in.base, in.baseHash, err = s.reportWithHash(ctx, in.baseID); err != nil {
		return nil, err
	}
	if in.head, in.headHash, err = s.reportWithHash(ctx, in.headID); err != nil {
		return nil, err
	}
	return in, nil
}

// compare makes the diff; reports that cannot be compared answer 422.
func (in *diffInput) compare() (*diff.Diff, error) {
	d, err := driver.Compare(in.base, in.head, in.opt)
	if err != nil {
		return nil, echo.NewHTTPError(http.StatusUnprocessableEntity, err.Error())
	}
	return d, nil
}

// chartKey is the cache key of the diff's chart: under the base run (its
// delete drops it), both reports' digests, the options and the format.
func (in *diffInput) chartKey(kind, format string) string {
	rank := "all"
	if in.opt.Rank != nil {
		rank = strconv.Itoa(*in.opt.Rank)
	}
	return fmt.Sprintf("%s/%s-%s-%s-%s-r%s-p%s.%s", in.baseID, in.baseHash, kind, in.headID, in.headHash, rank, in.opt.Phase, format)
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
