package api_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send sends a request with an optional bearer token and cookie and
// returns the answer, its body read.
func send(t *testing.T, method, url, bearer string, cookie *http.Cookie, body io.Reader, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	testkit.Must(t, err)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	testkit.Must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	testkit.Must(t, err)
	return resp, string(b)
}

// login posts a token to the login page and returns the session cookie
// it sets (nil for none) and the answer's status.
func login(t *testing.T, base, token string) (*http.Cookie, int) {
	t.Helper()
	form := url.Values{"token": {token}, "next": {"/runs/x"}}
	resp, _ := send(t, "POST", base+"/login", "", nil, strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	for _, c := range resp.Cookies() {
		if c.Name == "kinetoscope_session" {
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || strings.Contains(c.Value, token) {
				t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not the token itself", c)
			}
			if loc := resp.Header.Get("Location"); loc != "/runs/x" {
				t.Errorf("login goes on to %q, want /runs/x", loc)
			}
			return c, resp.StatusCode
		}
	}
	return nil, resp.StatusCode
}

// With a token, every route but /healthz and the login page needs it; the
// read-only token reads but does not write; the login page's cookie
// stands for the token it was given.
func TestEveryRouteNeedsToken(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), Token: "s3cret", ReadToken: "r3ad"})
	f, err := os.Open(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	testkit.Must(t, err)
	defer f.Close()
	resp, body := send(t, "POST", s.URL+"/api/v1/runs", "s3cret", nil, f, map[string]string{"Content-Type": "application/gzip"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload with the token: %d %s", resp.StatusCode, body)
	}
	id := strings.TrimPrefix(resp.Header.Get("Location"), "/api/v1/runs/")
	readCookie, _ := login(t, s.URL, "r3ad")
	writeCookie, _ := login(t, s.URL, "s3cret")
	if c, code := login(t, s.URL, "wrong"); c != nil || code != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: cookie %v, %d, want none and 401", c, code)
	}
	if readCookie == nil || writeCookie == nil {
		t.Fatal("login set no cookie")
	}
	html := map[string]string{"Accept": "text/html"}
	tests := []struct {
		method, path, bearer string
		cookie               *http.Cookie
		header               map[string]string
		want                 int
	}{
		{"GET", "/healthz", "", nil, nil, 200},
		{"GET", "/login", "", nil, nil, 200},
		{"GET", "/api/v1/runs", "", nil, nil, 401},
		{"GET", "/api/v1/runs", "wrong", nil, nil, 401},
		{"GET", "/api/v1/runs", "r3ad", nil, nil, 200},
		{"GET", "/api/v1/runs", "s3cret", nil, nil, 200},
		{"GET", "/api/v1/runs/" + id, "", nil, nil, 401},
		{"GET", "/api/v1/runs/" + id + "/trace", "", nil, nil, 401},
		{"GET", "/api/v1/runs/" + id + "/trace", "r3ad", nil, nil, 200},
		{"GET", "/api/v1/runs/" + id + "/report", "", nil, nil, 401},
		{"GET", "/api/v1/runs/" + id + "/charts/breakdown.svg", "", nil, nil, 401},
		{"GET", "/api/v1/openapi.json", "", nil, nil, 401},
		{"GET", "/api/v1/diff?base=" + id + "&head=" + id, "", nil, nil, 401},
		{"GET", "/metrics", "", nil, nil, 401},
		{"GET", "/metrics", "r3ad", nil, nil, 200},
		{"GET", "/", "", nil, html, 303},
		{"GET", "/runs/" + id, "", nil, html, 303},
		{"GET", "/", "", readCookie, html, 200},
		{"GET", "/static/app.js", "", nil, nil, 401},
		{"GET", "/static/app.js", "", readCookie, nil, 200},
		{"GET", "/static/", "s3cret", nil, nil, 404},
		{"GET", "/api/v1/runs", "", readCookie, nil, 200},
		{"GET", "/api/v1/runs", "", &http.Cookie{Name: "kinetoscope_session", Value: "forged"}, nil, 401},
		{"DELETE", "/api/v1/runs/" + id, "r3ad", nil, nil, 403},
		{"DELETE", "/api/v1/runs/" + id, "", readCookie, nil, 403},
		{"POST", "/api/v1/runs", "r3ad", nil, nil, 403},
		{"DELETE", "/api/v1/runs/" + id, "", nil, nil, 401},
		{"DELETE", "/api/v1/runs/" + id, "", writeCookie, nil, 204},
	}
	for _, tc := range tests {
		resp, body := send(t, tc.method, s.URL+tc.path, tc.bearer, tc.cookie, nil, tc.header)
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s (bearer %q, cookie %v): %d %.200s, want %d", tc.method, tc.path, tc.bearer, tc.cookie != nil, resp.StatusCode, body, tc.want)
		}
		if tc.want == 303 && !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
			t.Errorf("%s %s: redirect to %q, want the login page", tc.method, tc.path, resp.Header.Get("Location"))
		}
	}
}

// Every answer, errors and charts included, carries
// Content-Security-Policy and X-Content-Type-Options: nosniff.
func TestSecurityHeaders(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	c := uploadFile(t, s.URL, testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"), "")
	waitRun(t, s.URL, c.ID)
	for _, tc := range []struct {
		path, policy string
	}{
		{"/healthz", "script-src 'self'"},
		{"/api/v1/runs", "script-src 'self'"},
		{"/api/v1/runs/nope", "script-src 'self'"},
		{"/nope", "script-src 'self'"},
		{"/", "script-src 'self'"},
		{"/runs/" + c.ID, "script-src 'self'"},
		{"/static/style.css", "script-src 'self'"},
		{"/api/v1/runs/" + c.ID + "/charts/breakdown.svg", "style-src 'unsafe-inline'"},
		{"/api/v1/runs/" + c.ID + "/charts/breakdown.png", "script-src 'self'"},
	} {
		resp, _ := send(t, "GET", s.URL+tc.path, "", nil, nil, map[string]string{"Accept": "text/html"})
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", tc.path, got)
		}
		if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, tc.policy) || !strings.Contains(got, "default-src 'none'") {
			t.Errorf("%s: Content-Security-Policy %q, want one with %q", tc.path, got, tc.policy)
		}
	}
}

// A query that does not parse, or a label filter that is not key=value,
// answers 400 naming the parameter instead of dropping the filter.
func TestMalformedLabelFilter(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	for _, tc := range []struct {
		method, path string
	}{
		{"GET", "/api/v1/runs?label=k=v;x"},
		{"GET", "/api/v1/runs?label=k%3Dv;x&limit=5"},
		{"GET", "/api/v1/runs?label=novalue"},
		{"GET", "/api/v1/runs?label==v"},
		{"GET", "/?label=k=v;x"},
		{"GET", "/?label=novalue"},
		{"POST", "/api/v1/runs?label=a=b;c"},
	} {
		resp, body := send(t, tc.method, s.URL+tc.path, "", nil, nil, map[string]string{"Content-Type": "application/json"})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "label") {
			t.Errorf("%s %s: %d %.200s, want 400 naming label", tc.method, tc.path, resp.StatusCode, body)
		}
	}
}

// tarOfFiles is a tar of n tiny trace files.
func tarOfFiles(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		body := []byte(`{"traceEvents": []}`)
		testkit.Must(t, tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("rank%d.json", i), Size: int64(len(body)), Mode: 0o644}))
		tw.Write(body)
	}
	testkit.Must(t, tw.Close())
	return buf.Bytes()
}

// multipartOf is a multipart body of files tiny trace files and fields
// other fields.
func multipartOf(t testing.TB, files, fields int) (string, *bytes.Buffer) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := range fields {
		testkit.Must(t, mw.WriteField(fmt.Sprintf("f%d", i), "x"))
	}
	for i := range files {
		w, err := mw.CreateFormFile("file", fmt.Sprintf("rank%d.json", i))
		testkit.Must(t, err)
		w.Write([]byte(`{"traceEvents": []}`))
	}
	testkit.Must(t, mw.Close())
	return mw.FormDataContentType(), &buf
}

// A run holds at most MaxFiles files (multipart files or archive
// members) and a multipart request at most MaxParts parts: past them the
// upload answers 413 naming the flag.
func TestFilesAndPartsBounded(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), MaxFiles: 3, MaxParts: 5})
	ctOK, ok := multipartOf(t, 3, 2)
	ctFiles, files := multipartOf(t, 4, 0)
	ctParts, parts := multipartOf(t, 1, 5)
	tests := []struct {
		name, ctype string
		body        io.Reader
		want        int
		msg         string
	}{
		{"3 files, 5 parts", ctOK, ok, 202, ""},
		{"4 files", ctFiles, files, 413, "--max-files"},
		{"6 parts", ctParts, parts, 413, "--max-parts"},
		{"tar of 3", "application/x-tar", bytes.NewReader(tarOfFiles(t, 3)), 202, ""},
		{"tar of 4", "application/x-tar", bytes.NewReader(tarOfFiles(t, 4)), 413, "more than 3 files"},
	}
	for _, tc := range tests {
		code, body := do(t, "POST", s.URL+"/api/v1/runs", tc.ctype, tc.body)
		if code != tc.want || !strings.Contains(string(body), tc.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, code, body, tc.want, tc.msg)
		}
	}
}
