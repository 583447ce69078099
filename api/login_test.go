package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"kinetoscope/api"
)

// The login page of a server with a token is styled: every stylesheet
// and script it loads is answered without the token, while the page's
// script and the runs still need it.
func TestLoginPageAssets(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), Token: "s3cret"})
	resp, page := send(t, "GET", s.URL+"/login", "", nil, nil, map[string]string{"Accept": "text/html"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login page: %d", resp.StatusCode)
	}
	assets := regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`).FindAllStringSubmatch(page, -1)
	styled := false
	for _, m := range assets {
		resp, body := send(t, "GET", s.URL+m[1], "", nil, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the login page loads %s, which answers %d without the token", m[1], resp.StatusCode)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") && strings.Contains(body, "{") {
			styled = true
		}
	}
	if !styled {
		t.Errorf("the login page loads no stylesheet: %v", assets)
	}
	for _, p := range []string{"/static/app.js", "/api/v1/runs", "/static/"} {
		if resp, _ := send(t, "GET", s.URL+p, "", nil, nil, nil); resp.StatusCode == http.StatusOK {
			t.Errorf("%s answers 200 without the token", p)
		}
	}
}
