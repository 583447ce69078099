package api

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// chartType returns the content type of a chart format ("" for none).
func chartType(format string) string {
	switch format {
	case "svg":
		return "image/svg+xml"
	case "png":
		return "image/png"
	}
	return ""
}

// splitChart splits "breakdown.svg" into kind and format.
func splitChart(file string) (kind, format string, err error) {
	kind, format, ok := strings.Cut(file, ".")
	if !ok || chartType(format) == "" {
		return "", "", echo.NewHTTPError(http.StatusNotFound,
			fmt.Sprintf("chart %q: want KIND.svg or KIND.png", file))
	}
	return kind, format, nil
}

// getChart handles GET /api/v1/runs/{id}/charts/{kind}.{svg|png}.
func (s *Server) getChart(c echo.Context) error {
	kind, format, err := splitChart(c.Param("chart"))
	if err != nil {
		return err
	}
	if kind == timelineKind {
		return s.getTimeline(c, format)
	}
	if !slices.Contains(s.pipe.ChartKinds, kind) || s.pipe.Chart == nil {
		return echo.NewHTTPError(http.StatusNotFound,
			fmt.Sprintf("unknown chart kind %q: have %s, %s", kind, strings.Join(s.pipe.ChartKinds, ", "), timelineKind))
	}
	rank, err := intQuery(c, "rank")
	if err != nil {
		return err
	}
	rep, err := s.Report(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	img, err := s.pipe.Chart(rep, kind, format, rank)
	if err != nil {
		return fmt.Errorf("chart %s of run %s: %w", kind, c.Param("id"), err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "private, max-age=60")
	return c.Blob(http.StatusOK, chartType(format), img)
}

// getDiffChart handles GET /api/v1/diff/charts/{kind}.{svg|png}.
func (s *Server) getDiffChart(c echo.Context) error {
	kind, format, err := splitChart(c.Param("chart"))
	if err != nil {
		return err
	}
	if kind != "diff" || s.pipe.DiffChart == nil {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("unknown diff chart %q: have diff.svg, diff.png", kind))
	}
	d, err := s.Diff(c.Request().Context(), c.QueryParams())
	if err != nil {
		return err
	}
	img, err := s.pipe.DiffChart(d, format)
	if err != nil {
		return fmt.Errorf("diff chart: %w", err)
	}
	return c.Blob(http.StatusOK, chartType(format), img)
}
