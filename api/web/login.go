package web

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// LoginPage answers with the page that asks for the server's token once;
// the server sets an HttpOnly session cookie when it is right. next is
// where the browser goes afterwards, msg an error to show ("" for none).
func LoginPage(c echo.Context, code int, next, msg string) error {
	t, err := template.New("layout.html").Funcs(funcs()).ParseFS(templateFS, "templates/layout.html", "templates/login.html")
	if err != nil {
		return fmt.Errorf("login page: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, map[string]any{"Title": "Token", "Next": next, "Error": msg}); err != nil {
		return fmt.Errorf("login page: %w", err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.HTMLBlob(code, buf.Bytes())
}

// noListing serves the files of fsys but answers 404 for its directories,
// so that /static/ lists nothing.
func noListing(fsys fs.FS) http.Handler {
	h := http.FileServer(http.FS(fsys))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name == "" {
			name = "."
		}
		if st, err := fs.Stat(fsys, name); err != nil || st.IsDir() {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
