package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"kinetoscope/api/web"
)

// access is what a request may do.
type access int

const (
	accessNone  access = iota
	accessRead         // the read-only token: GET and HEAD
	accessWrite        // the token: everything
)

// sessionCookie is the cookie the login page sets: a digest of the token
// (never the token itself), HttpOnly and SameSite=Strict.
const sessionCookie = "kinetoscope_session"

// openPath reports whether a path is answered without a token: the health
// check, and the login page that asks for one with its stylesheet.
func openPath(path string) bool {
	return path == "/healthz" || path == loginPath || path == loginStyle
}

// loginStyle is the stylesheet of every page, the login page's included:
// it holds nothing of the runs.
const loginStyle = "/static/style.css"

// needsWrite reports whether a request changes something (uploads,
// deletes) and so needs the token rather than the read-only one.
func needsWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead
}

// authenticate lets a request through when the server has no token, when
// it is for an open path, or when it carries a token (Authorization:
// Bearer, or the session cookie) that allows its method. Other API
// requests get 401; a browser asking for a page is sent to the login page.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if s.cfg.Token == "" || openPath(req.URL.Path) {
			return next(c)
		}
		got := s.accessOf(req)
		switch {
		case got == accessWrite, got == accessRead && !needsWrite(req.Method):
			return next(c)
		case got == accessRead:
			return echo.NewHTTPError(http.StatusForbidden, "the read-only token may not upload or delete: send the server's --token")
		}
		if req.Method == http.MethodGet && !strings.HasPrefix(req.URL.Path, "/api/") && web.WantsHTML(req) {
			return c.Redirect(http.StatusSeeOther, loginPath+"?next="+url.QueryEscape(req.URL.RequestURI()))
		}
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="kinetoscope"`)
		return echo.NewHTTPError(http.StatusUnauthorized, "this server needs a token: send Authorization: Bearer TOKEN (the web page asks for it at "+loginPath+")")
	}
}

// accessOf returns what the request's bearer token or session cookie
// allows.
func (s *Server) accessOf(req *http.Request) access {
	if tok, ok := strings.CutPrefix(req.Header.Get(echo.HeaderAuthorization), "Bearer "); ok {
		return s.tokenAccess(tok)
	}
	if ck, err := req.Cookie(sessionCookie); err == nil {
		return s.sessionAccess(ck.Value)
	}
	return accessNone
}

// tokenAccess compares a token with the server's, in constant time.
func (s *Server) tokenAccess(tok string) access {
	switch {
	case equalSecret(tok, s.cfg.Token):
		return accessWrite
	case s.cfg.ReadToken != "" && equalSecret(tok, s.cfg.ReadToken):
		return accessRead
	}
	return accessNone
}

// sessionAccess compares a session cookie with the digests of the
// server's tokens, in constant time.
func (s *Server) sessionAccess(v string) access {
	switch {
	case equalSecret(v, sessionValue(s.cfg.Token)):
		return accessWrite
	case s.cfg.ReadToken != "" && equalSecret(v, sessionValue(s.cfg.ReadToken)):
		return accessRead
	}
	return accessNone
}

// equalSecret compares two secrets in time that depends only on their
// lengths: it compares their SHA-256 digests.
func equalSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1 && want != ""
}

// sessionValue is the session cookie's value for a token.
func sessionValue(token string) string {
	sum := sha256.Sum256([]byte("kinetoscope-session\x00" + token))
	return hex.EncodeToString(sum[:])
}

// loginPath is the login page: GET shows the form, POST checks the token
// and sets the session cookie.
const loginPath = "/login"

// getLogin handles GET /login.
func (s *Server) getLogin(c echo.Context) error {
	return web.LoginPage(c, http.StatusOK, safeNext(c.QueryParam("next")), "")
}

// postLogin handles POST /login (form fields token and next): a token the
// server knows sets the session cookie and goes on to next.
func (s *Server) postLogin(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	tok := c.FormValue("token")
	if s.cfg.Token == "" {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if s.tokenAccess(tok) == accessNone {
		return web.LoginPage(c, http.StatusUnauthorized, next, "wrong token")
	}
	c.SetCookie(&http.Cookie{
		Name: sessionCookie, Value: sessionValue(tok), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil,
	})
	return c.Redirect(http.StatusSeeOther, next)
}

// safeNext returns next when it is a clean path on this server, else
// "/": the login page never sends a browser elsewhere. Browsers drop tabs
// and newlines from a URL and read a backslash as a slash, so
// "/<TAB>/host" would be "//host": a control character or backslash
// anywhere, or a second slash first, is refused.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsFunc(next, func(r rune) bool {
		return r < 0x20 || r == 0x7f || r == '\\' || unicode.IsSpace(r)
	}) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}
