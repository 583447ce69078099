package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/driver"
	"kinetoscope/render"
)

// chartType returns the content type of a chart format ("" for none).
func chartType(format string) string {
	for _, f := range driver.ImageFormats() {
		if string(f.Format) == format {
			return f.ContentType
		}
	}
	return ""
}

// chartFiles names the files of the chart kinds: "a.svg, a.png, b.svg, ...".
func chartFiles(kinds []string) string {
	var out []string
	for _, k := range kinds {
		for _, f := range driver.ImageFormats() {
			out = append(out, k+"."+string(f.Format))
		}
	}
	return strings.Join(out, ", ")
}

// splitChart splits "breakdown.svg" into kind and format.
func splitChart(file string) (kind, format string, err error) {
	kind, format, ok := strings.Cut(file, ".")
	if !ok || chartType(format) == "" {
		return "", "", echo.NewHTTPError(http.StatusNotFound,
			fmt.Sprintf("chart %q: want KIND.%s", file, strings.Join(imageExts(), " or KIND.")))
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
	if !driver.IsChartKind(kind) {
		return echo.NewHTTPError(http.StatusNotFound,
			fmt.Sprintf("unknown chart kind %q: have %s", kind, strings.Join(driver.RunChartKinds(), ", ")))
	}
	rank, err := intQuery(c, "rank")
	if err != nil {
		return err
	}
	ctx, id := c.Request().Context(), c.Param("id")
	rep, hash, err := s.linkedReport(ctx, id, c.QueryParam(linkParam), c.QueryParam(gpuPeakParam))
	if err != nil {
		return err
	}
	img, err := s.renderChart(ctx, chartKey(id, hash, kind, rank, -1, format), func(context.Context) ([]byte, error) {
		return (&driver.Run{Report: rep}).Chart(driver.ChartRequest{Kind: kind, Format: render.Format(format), Rank: rank, Step: -1})
	})
	if err != nil {
		return fmt.Errorf("chart %s of run %s: %w", kind, id, err)
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
	if !slices.Contains(driver.DiffChartKinds(), kind) {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("unknown diff chart %q: have %s", kind, chartFiles(driver.DiffChartKinds())))
	}
	ctx := c.Request().Context()
	in, err := s.diffInputs(ctx, c.QueryParams())
	if err != nil {
		return err
	}
	img, err := s.renderChart(ctx, in.chartKey(kind, format), func(context.Context) ([]byte, error) {
		d, err := in.compare()
		if err != nil {
			return nil, err
		}
		return driver.DiffChart(d, kind, render.Format(format))
	})
	if err != nil {
		return fmt.Errorf("diff chart: %w", err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "private, max-age=60")
	return c.Blob(http.StatusOK, chartType(format), img)
}

// imageExts returns the chart image formats' names: svg, png.
func imageExts() []string {
	var out []string
	for _, f := range driver.ImageFormats() {
		out = append(out, string(f.Format))
	}
	return out
}
