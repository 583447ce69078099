package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// The login page goes on only to a clean local path: what browsers would
// read as another host ("/<TAB>/host" is "//host") goes to "/".
func TestLoginNextIsLocal(t *testing.T) {
	const token = "login-token-0123"
	s := startServer(t, api.Config{DataDir: t.TempDir(), Token: token})
	for _, tc := range []struct{ next, want string }{
		{"/runs/abc?x=1", "/runs/abc?x=1"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/ /evil.example", "/"},
		{"//evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/\x7f/evil.example", "/"},
	} {
		form := url.Values{"token": {token}, "next": {tc.next}}
		resp, _ := send(t, "POST", s.URL+"/login", "", nil, strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != tc.want {
			t.Errorf("next %q: %d Location %q, want %q", tc.next, resp.StatusCode, loc, tc.want)
		}
	}
}

// After a restart, the runs left unfinished say "queued" until a worker
// takes them: with one worker, one run is running and the rest queued,
// also those a killed process left "running" (it could not hand them
// back). The embedded queue's restart; the shared queue's jobs are
// River's.
func TestRestartSaysQueued(t *testing.T) {
	data := t.TempDir()
	started := make(chan string, 8)
	block := func(ctx context.Context, a api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error) {
		started <- a.Run
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s := startWithAnalysis(t, embedded(api.Config{DataDir: data, Workers: 1}), block)
	var ids []string
	for range 3 {
		ids = append(ids, uploadFile(t, s.URL, testkit.Public(t, traceSmall), "&name=x").ID)
	}
	<-started
	s.stop()
	// What kill -9 during two analyses leaves.
	meta, err := store.OpenSQLite(filepath.Join(data, "runs.db"))
	testkit.Must(t, err)
	for _, id := range ids[:2] {
		testkit.Must(t, meta.SetStatus(context.Background(), id, store.StatusRunning, store.Progress{Stage: "reading"}, ""))
	}
	testkit.Must(t, meta.Close())
	s = startWithAnalysis(t, embedded(api.Config{DataDir: data, Workers: 1}), block)
	<-started
	if got := statusCounts(t, s.URL); got[store.StatusRunning] != 1 || got[store.StatusQueued] != 2 {
		t.Errorf("after a restart with one worker: %v, want 1 running and 2 queued", got)
	}
}

// statusCounts counts the runs the server lists by status.
func statusCounts(t *testing.T, base string) map[store.Status]int {
	t.Helper()
	var list struct{ Runs []store.Run }
	getJSON(t, base+"/api/v1/runs", &list)
	count := map[store.Status]int{}
	for _, r := range list.Runs {
		count[r.Status]++
	}
	return count
}

// The data directory is the user's alone (0700, an existing one made so),
// the database and the stored files 0600.
func TestDataDirPrivate(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	testkit.Must(t, os.MkdirAll(data, 0o755))
	s := startServer(t, embedded(api.Config{DataDir: data}))
	c := uploadFile(t, s.URL, testkit.Public(t, traceSmall), "")
	waitRun(t, s.URL, c.ID)
	checked := 0
	err := filepath.Walk(data, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		mode := info.Mode().Perm()
		switch {
		case p == data && mode != 0o700:
			t.Errorf("data directory %s is %o, want 700", p, mode)
		case strings.HasPrefix(filepath.Base(p), "runs.db") && mode != 0o600:
			t.Errorf("%s is %o, want 600", p, mode)
		case strings.Contains(p, "/sha256/") && !info.IsDir() && mode != 0o600:
			t.Errorf("blob %s is %o, want 600", p, mode)
		case strings.Contains(p, "/blobs") && info.IsDir() && mode != 0o700:
			t.Errorf("blob directory %s is %o, want 700", p, mode)
		}
		checked++
		return nil
	})
	testkit.Must(t, err)
	if checked < 5 {
		t.Errorf("only %d paths under the data directory", checked)
	}
}

// A token of blanks is refused.
func TestBlankTokenRefused(t *testing.T) {
	for _, cfg := range []api.Config{{Token: "   "}, {Token: "a-real-token-0123", ReadToken: "\t"}} {
		cfg.DataDir, cfg.Logger = t.TempDir(), quietLog()
		if srv, err := api.Open(cfg); err == nil {
			srv.Close()
			t.Errorf("token %q, read token %q accepted", cfg.Token, cfg.ReadToken)
		}
	}
}

// HEAD answers every API route a GET answers, with its headers and no
// body; a negative rank or step is a 400; trace downloads honour Range.
func TestHeadRangeAndRank(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	path := testkit.Public(t, traceSmall)
	trace, err := os.ReadFile(path)
	testkit.Must(t, err)
	c := uploadFile(t, s.URL, path, "")
	waitRun(t, s.URL, c.ID)
	run := s.URL + "/api/v1/runs/" + c.ID
	for _, u := range []string{s.URL + "/api/v1/runs", run, run + "/report", run + "/trace", s.URL + "/api/v1/openapi.json", s.URL + "/healthz"} {
		get, _ := send(t, "GET", u, "", nil, nil, nil)
		head, body := send(t, "HEAD", u, "", nil, nil, nil)
		if head.StatusCode != get.StatusCode || head.StatusCode != http.StatusOK || body != "" ||
			head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %d %q %q, GET %d %q", u, head.StatusCode, head.Header.Get("Content-Type"), body, get.StatusCode, get.Header.Get("Content-Type"))
		}
	}
	head, _ := send(t, "HEAD", run+"/trace", "", nil, nil, nil)
	if head.ContentLength != int64(len(trace)) {
		t.Errorf("HEAD trace: Content-Length %d, want %d", head.ContentLength, len(trace))
	}
	for _, q := range []string{"/charts/breakdown.svg?rank=-5", "/charts/timeline.svg?rank=-1", "/charts/timeline.svg?step=-2"} {
		if code, body := do(t, "GET", run+q, "", nil); code != http.StatusBadRequest {
			t.Errorf("%s: %d %.100s, want 400", q, code, body)
		}
	}
	for _, tc := range []struct {
		rng      string
		from, to int // want trace[from:to]
	}{
		{"bytes=10-19", 10, 20},
		{"bytes=-100", len(trace) - 100, len(trace)},
		{"bytes=1000-", 1000, len(trace)},
	} {
		resp, body := send(t, "GET", run+"/trace", "", nil, nil, map[string]string{"Range": tc.rng})
		if resp.StatusCode != http.StatusPartialContent || !bytes.Equal([]byte(body), trace[tc.from:tc.to]) || resp.Header.Get("Content-Range") == "" {
			t.Errorf("Range %s: %d, %d bytes, Content-Range %q; want 206 with bytes %d-%d", tc.rng, resp.StatusCode, len(body), resp.Header.Get("Content-Range"), tc.from, tc.to-1)
		}
	}
	resp, err := http.Get(run + "/trace")
	testkit.Must(t, err)
	full, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	testkit.Must(t, err)
	if !bytes.Equal(full, trace) || resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("whole trace: %d bytes (want %d), Accept-Ranges %q", len(full), len(trace), resp.Header.Get("Accept-Ranges"))
	}
}
