package api

import (
	"strings"

	"github.com/labstack/echo/v4"
)

// pagePolicy is the Content-Security-Policy of every answer: the web page
// loads only its own script, styles and images, and posts only to this
// server.
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// svgPolicy is the Content-Security-Policy of an SVG chart opened on its
// own: no script, and the inline styles the chart library writes.
const svgPolicy = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'"

// securityHeaders sets Content-Security-Policy and X-Content-Type-Options:
// nosniff on every answer, errors included.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res := c.Response()
		res.Header().Set(echo.HeaderXContentTypeOptions, "nosniff")
		res.Header().Set(echo.HeaderContentSecurityPolicy, pagePolicy)
		res.Before(func() {
			if strings.HasPrefix(res.Header().Get(echo.HeaderContentType), "image/svg+xml") {
				res.Header().Set(echo.HeaderContentSecurityPolicy, svgPolicy)
			}
		})
		return next(c)
	}
}
