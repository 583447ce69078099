package api

import (
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/web"
)

//go:embed openapi.json
var openapiJSON []byte

// routes builds the echo instance: the REST API under /api/v1, the health
// and metrics endpoints, and the web pages.
func (s *Server) routes() (err error) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Pre(headAsGet)
	e.Use(securityHeaders, s.recoverPanics, s.stats.middleware, s.guardRequests, s.trackRequests, s.authenticate, strictQuery)
	if s.openapi, err = openAPIDocument(); err != nil {
		return err
	}
	v1 := e.Group("/api/v1")
	v1.GET("/openapi.json", s.getOpenAPI)
	v1.POST("/runs", s.createRun)
	v1.GET("/runs", s.listRuns)
	v1.GET("/runs/:id", s.getRun)
	v1.DELETE("/runs/:id", s.deleteRun)
	v1.POST("/runs/:id/reanalyse", s.reanalyseRun)
	v1.POST("/runs/:id/link", s.postSetting(linkSetting))
	v1.POST("/runs/:id/gpu_peak", s.postSetting(gpuPeakSetting))
	v1.GET("/runs/:id/report", s.getReport)
	v1.GET("/runs/:id/charts/:chart", s.getChart)
	v1.GET("/runs/:id/trace", s.getTrace)
	v1.GET("/diff", s.getDiff)
	v1.GET("/diff/charts/:chart", s.getDiffChart)
	e.GET("/healthz", s.healthz)
	e.GET("/metrics", s.getMetrics)
	e.GET(loginPath, s.getLogin)
	e.POST(loginPath, s.postLogin)
	pages, err := web.New(s, s.cfg.Token != "")
	if err != nil {
		return err
	}
	pages.Register(e)
	s.echo = e
	return nil
}

// webRoute reports whether an echo route serves the web page rather than
// the API (it is then not in the OpenAPI document).
func webRoute(path string) bool {
	return !strings.HasPrefix(path, "/api/") && path != "/healthz" && path != "/metrics"
}

func (s *Server) getOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.openapi)
}

// healthz handles GET /healthz: both stores answer, and the disk of the
// embedded stores has its reserve (healthDisk). It names the replica
// that answered.
func (s *Server) healthz(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.meta.Counts(ctx); err != nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "store: "+err.Error())
	}
	if _, err := s.blobs.Has(ctx, strings.Repeat("0", 64)); err != nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "blob store: "+err.Error())
	}
	return s.healthDisk(c)
}

// errorHandler answers every error as JSON {"error": message}; errors that
// are not HTTP errors are logged and answered 500.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, err.Error()
	var he *echo.HTTPError
	if ua, ok := s.unavailableAnswer(c, err); ok {
		err = ua
	}
	switch {
	case errors.As(err, &he):
		code = he.Code
		if m, ok := he.Message.(string); ok {
			msg = m
		}
	case errors.Is(err, errBlobMissing):
		code = http.StatusGone
		s.log.Error("stored file missing", "path", c.Request().URL.Path, "err", err)
	default:
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		c.NoContent(code)
		return
	}
	if !strings.HasPrefix(c.Request().URL.Path, "/api/") && web.WantsHTML(c.Request()) {
		web.ErrorPage(c, code, msg)
		return
	}
	c.JSON(code, map[string]any{"error": msg, "code": code})
}

// trackRequests lets Close wait for the requests being answered, and
// answers 503 once the server is closing.
func (s *Server) trackRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.begin() {
			return echo.NewHTTPError(http.StatusServiceUnavailable, "the server is shutting down")
		}
		defer s.wg.Done()
		return next(c)
	}
}

// recoverPanics turns a panic in a handler into a 500 answer.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("handler panic", "path", c.Request().URL.Path, "panic", r)
				err = fmt.Errorf("internal error: %v", r)
			}
		}()
		return next(c)
	}
}
