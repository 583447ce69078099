package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"kinetoscope/api"
	"kinetoscope/api/store"
)

// testServer is a server on a real loopback listener.
type testServer struct {
	*api.Server
	URL string
	ts  *httptest.Server
}

// startServer starts a server over dataDir with the real pipeline.
func startServer(t testing.TB, cfg api.Config) *testServer {
	t.Helper()
	if cfg.MaxUncompressedBytes == 0 {
		cfg.MaxUncompressedBytes = 256 << 20
	}
	cfg.Logger = quietLog()
	srv, err := api.Open(withBackend(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	ts := newHTTPServer(srv)
	s := &testServer{Server: srv, URL: ts.URL, ts: ts}
	t.Cleanup(s.stop)
	return s
}

// newHTTPServer serves srv on a loopback listener.
func newHTTPServer(srv *api.Server) *httptest.Server {
	ts := httptest.NewUnstartedServer(nil)
	srv.ConfigureHTTP(ts.Config)
	ts.Start()
	return ts
}

// stop closes the listener and the server; it may be called twice.
func (s *testServer) stop() {
	if s.ts == nil {
		return
	}
	s.ts.Close()
	s.Server.Close()
	s.ts = nil
}

// created is the answer to POST /api/v1/runs.
type created struct {
	ID        string    `json:"id"`
	StatusURL string    `json:"status_url"`
	Run       store.Run `json:"run"`
}

// do sends a request and returns the status and body.
func do(t testing.TB, method, url, ctype string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, url, err)
	}
	return resp.StatusCode, b
}

// uploadFile posts one file as a gzip body and returns the new run.
func uploadFile(t testing.TB, base, path, query string) created {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code, body := do(t, "POST", base+"/api/v1/runs?filename="+filepath.Base(path)+query, "application/gzip", f)
	if code != http.StatusAccepted {
		t.Fatalf("upload %s: %d %s", path, code, body)
	}
	var c created
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("upload answer: %v: %s", err, body)
	}
	return c
}

// waitRun polls a run until it is done or failed.
func waitRun(t testing.TB, base, id string) store.Run {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		code, body := do(t, "GET", base+"/api/v1/runs/"+id, "", nil)
		if code != http.StatusOK {
			t.Fatalf("get run %s: %d %s", id, code, body)
		}
		var r store.Run
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Status == store.StatusDone || r.Status == store.StatusFailed {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("run %s did not finish", id)
	return store.Run{}
}

// getJSON fetches url and decodes a 200 answer into v.
func getJSON(t testing.TB, url string, v any) {
	t.Helper()
	code, body := do(t, "GET", url, "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// quietLog discards the server's log.
func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
