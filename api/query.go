package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// strictQuery answers 400 for a query string that does not parse, naming
// the parameter: Go drops such a pair silently (a ';' in
// "label=k=v;x"), and a filter dropped would answer every run.
func strictQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := checkQuery(c.Request().URL.RawQuery); err != nil {
			return err
		}
		return next(c)
	}
}

// checkQuery returns a 400 error naming the first parameter of raw that
// does not parse.
func checkQuery(raw string) error {
	for _, pair := range strings.Split(raw, "&") {
		if pair == "" {
			continue
		}
		if _, err := url.ParseQuery(pair); err != nil {
			key, _, _ := strings.Cut(pair, "=")
			if k, err := url.QueryUnescape(key); err == nil {
				key = k
			}
			return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf(
				"bad query parameter %q (%.80q): %v; separate several labels with ',' or repeat the parameter", key, pair, err))
		}
	}
	return nil
}
