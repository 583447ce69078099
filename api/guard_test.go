package api_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// multipartTrace returns a multipart body holding the small public trace
// as one file part, and its content type: what a page's no-cors form post
// sends.
func multipartTrace(t *testing.T) (*bytes.Buffer, string) {
	t.Helper()
	b, err := os.ReadFile(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	testkit.Must(t, err)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("file", "decode.json.gz")
	testkit.Must(t, err)
	part.Write(b)
	testkit.Must(t, mw.Close())
	return &body, mw.FormDataContentType()
}

// runCount returns the number of runs the server lists.
func runCount(t *testing.T, base, bearer string) int {
	t.Helper()
	resp, body := send(t, "GET", base+"/api/v1/runs", bearer, nil, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list runs: %d %s", resp.StatusCode, body)
	}
	return strings.Count(body, `"id":`)
}

// Uploads, deletes and logins that a page of another origin sends are
// refused, in the no-token mode and with the login cookie alike; the
// same requests from the server's own page, curl or the CLI (no Origin,
// no Sec-Fetch-Site) pass.
func TestCrossOriginWritesRefused(t *testing.T) {
	for _, token := range []string{"", "s3cret-token"} {
		s := startServer(t, api.Config{DataDir: t.TempDir(), Token: token})
		u, err := url.Parse(s.URL)
		testkit.Must(t, err)
		otherPort := "http://" + u.Hostname() + ":1"
		var cookie *http.Cookie
		if token != "" {
			cookie, _ = login(t, s.URL, token)
			if cookie == nil {
				t.Fatal("no session cookie")
			}
		}
		forged := []struct {
			name   string
			header map[string]string
		}{
			{"page of another site", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}},
			{"page on another port", map[string]string{"Origin": otherPort, "Sec-Fetch-Site": "same-site"}},
			{"Origin only", map[string]string{"Origin": otherPort}},
			{"opaque origin", map[string]string{"Origin": "null"}},
			{"Sec-Fetch-Site only", map[string]string{"Sec-Fetch-Site": "cross-site"}},
		}
		for _, f := range forged {
			body, ctype := multipartTrace(t)
			f.header["Content-Type"] = ctype
			resp, out := send(t, "POST", s.URL+"/api/v1/runs", "", cookie, body, f.header)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(out, "cross-origin") {
				t.Errorf("token %q, %s: upload answered %d %s, want 403 cross-origin", token, f.name, resp.StatusCode, out)
			}
			resp, _ = send(t, "POST", s.URL+"/login", "", nil, strings.NewReader("token="+token),
				map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": f.header["Origin"], "Sec-Fetch-Site": f.header["Sec-Fetch-Site"]})
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("token %q, %s: login answered %d, want 403", token, f.name, resp.StatusCode)
			}
		}
		bearer := token
		if n := runCount(t, s.URL, bearer); n != 0 {
			t.Fatalf("token %q: %d runs stored by forged uploads", token, n)
		}
		own := []struct {
			name   string
			header map[string]string
		}{
			{"the server's own page", map[string]string{"Origin": s.URL, "Sec-Fetch-Site": "same-origin"}},
			{"curl or the CLI", map[string]string{}},
		}
		var id string
		for _, o := range own {
			body, ctype := multipartTrace(t)
			o.header["Content-Type"] = ctype
			resp, out := send(t, "POST", s.URL+"/api/v1/runs", "", cookie, body, o.header)
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("token %q, %s: upload answered %d %s, want 202", token, o.name, resp.StatusCode, out)
			}
			id = strings.TrimPrefix(resp.Header.Get("Location"), "/api/v1/runs/")
		}
		resp, _ := send(t, "DELETE", s.URL+"/api/v1/runs/"+id, "", cookie, nil, forged[1].header)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("token %q: forged delete answered %d, want 403", token, resp.StatusCode)
		}
		if n := runCount(t, s.URL, bearer); n != len(own) {
			t.Errorf("token %q: %d runs, want %d", token, n, len(own))
		}
		resp, _ = send(t, "DELETE", s.URL+"/api/v1/runs/"+id, "", cookie, nil, own[0].header)
		if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
			t.Errorf("token %q: own page's delete answered %d", token, resp.StatusCode)
		}
	}
}

// A request whose Host header names another server (a DNS-rebinding page
// whose name now resolves to this machine) is refused, reads included;
// the loopback names, and the names of --allowed-hosts, are served.
func TestHostHeaderChecked(t *testing.T) {
	cases := []struct {
		allowed []string
		host    string
		served  bool
	}{
		{nil, "evil.example", false},
		{nil, "evil.example:8080", false},
		{nil, "127.0.0.1.evil.example", false},
		{nil, "localhost:8080", true},
		{nil, "LOCALHOST", true},
		{nil, "[::1]:8080", true},
		{[]string{"traces.example.com"}, "traces.example.com", true},
		{[]string{"traces.example.com"}, "localhost", false},
		{[]string{".example.com"}, "a.b.example.com:443", true},
		{[]string{".example.com"}, "example.com.evil.example", false},
		{[]string{"*"}, "anything.example", true},
	}
	for _, tc := range cases {
		s := startServer(t, api.Config{DataDir: t.TempDir(), AllowedHosts: tc.allowed})
		for _, path := range []string{"/api/v1/runs", "/"} {
			req, err := http.NewRequest("GET", s.URL+path, nil)
			testkit.Must(t, err)
			req.Host = tc.host
			resp, err := noRedirects.Do(req)
			testkit.Must(t, err)
			resp.Body.Close()
			if got := resp.StatusCode != http.StatusForbidden; got != tc.served {
				t.Errorf("allowed %q, Host %q, GET %s: answered %d, want served %v", tc.allowed, tc.host, path, resp.StatusCode, tc.served)
			}
		}
		req, err := http.NewRequest("GET", s.URL+"/healthz", nil)
		testkit.Must(t, err)
		req.Host = "10.0.0.7:8080"
		resp, err := http.DefaultClient.Do(req)
		testkit.Must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("allowed %q: /healthz by address answered %d", tc.allowed, resp.StatusCode)
		}
	}
}

// The default served names are the loopback names and the listen
// address's host; an address of every interface adds the machine's
// addresses.
func TestDefaultAllowedHosts(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want []string
	}{
		{"127.0.0.1:8080", []string{"localhost", "127.0.0.1", "::1"}},
		{"traces.example.com:8080", []string{"localhost", "traces.example.com"}},
		{"10.1.2.3:80", []string{"10.1.2.3", "::1"}},
		{":8080", []string{"localhost", "127.0.0.1"}},
		{"0.0.0.0:8080", []string{"localhost", "127.0.0.1"}},
	} {
		got := api.DefaultAllowedHosts(tc.addr)
		for _, w := range tc.want {
			if !strings.Contains(","+strings.Join(got, ",")+",", ","+w+",") {
				t.Errorf("DefaultAllowedHosts(%q) = %q, want %q among them", tc.addr, got, w)
			}
		}
		if strings.Contains(strings.Join(got, ","), "0.0.0.0") {
			t.Errorf("DefaultAllowedHosts(%q) = %q: the unspecified address is no host name", tc.addr, got)
		}
	}
}
