package api_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// startWithAnalysis starts a server whose analyses go through wrap.
func startWithAnalysis(t testing.TB, cfg api.Config, wrap func(ctx context.Context, a api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error)) *testServer {
	t.Helper()
	cfg.Logger = quietLog()
	srv, err := api.OpenWithAnalysis(withBackend(t, cfg), wrap)
	testkit.Must(t, err)
	ts := newHTTPServer(srv)
	s := &testServer{Server: srv, URL: ts.URL, ts: ts}
	t.Cleanup(s.stop)
	return s
}

// Charts and analyses have separate workers: a timeline is drawn while
// every analysis worker is busy, an upload is analysed while every chart
// worker is busy, and a chart that waits past ChartTimeout answers 503.
func TestChartsAndAnalysesApart(t *testing.T) {
	block := make(chan struct{})
	s := startWithAnalysis(t, api.Config{DataDir: t.TempDir(), Workers: 1, ChartTimeout: 500 * time.Millisecond},
		func(ctx context.Context, a api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error) {
			if strings.Contains(strings.Join(a.Files, " "), "blocked") {
				select {
				case <-block:
				case <-ctx.Done():
				}
			}
			return real()
		})
	defer close(block)
	trace := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	done := uploadFile(t, s.URL, trace, "")
	waitRun(t, s.URL, done.ID)
	blocked := filepath.Join(t.TempDir(), "blocked.json.gz")
	b, err := os.ReadFile(trace)
	testkit.Must(t, err)
	testkit.Must(t, os.WriteFile(blocked, b, 0o644))
	uploadFile(t, s.URL, blocked, "") // holds the one analysis worker

	timeline := s.URL + "/api/v1/runs/" + done.ID + "/charts/timeline.svg"
	if code, body := do(t, "GET", timeline, "", nil); code != http.StatusOK {
		t.Errorf("timeline while the analysis worker is busy: %d %s", code, body)
	}
	release := s.HoldChartWorkers()
	defer release()
	if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+done.ID+"/charts/timeline.png", "", nil); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "--chart-timeout") {
		t.Errorf("timeline while every chart worker is busy: %d %s, want 503 naming --chart-timeout", code, body)
	}
	if code, _ := do(t, "GET", timeline, "", nil); code != http.StatusOK {
		t.Errorf("cached timeline while every chart worker is busy: %d, want 200 from the cache", code)
	}
	block <- struct{}{}
	next := uploadFile(t, s.URL, trace, "&name=next")
	if r := waitRun(t, s.URL, next.ID); r.Status != store.StatusDone {
		t.Errorf("upload while every chart worker is busy: %s %s", r.Status, r.Error)
	}
}

// Rendered charts survive a restart: the second server answers from the
// cache on disk, without reading the trace again (its blob is gone).
func TestChartCacheSurvivesRestart(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	c := uploadFile(t, s.URL, testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"), "")
	waitRun(t, s.URL, c.ID)
	paths := []string{"/charts/timeline.svg", "/charts/breakdown.svg", "/charts/ranks.png"}
	first := map[string]string{}
	for _, p := range paths {
		code, body := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+p, "", nil)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", p, code, body)
		}
		first[p] = string(body)
	}
	s.stop()
	for _, f := range c.Run.Files {
		removeBlob(t, data, f.SHA256)
	}
	again := startServer(t, api.Config{DataDir: data})
	for _, p := range paths {
		code, body := do(t, "GET", again.URL+"/api/v1/runs/"+c.ID+p, "", nil)
		if code != http.StatusOK || string(body) != first[p] {
			t.Errorf("%s after a restart: %d, same image %v", p, code, string(body) == first[p])
		}
	}
	if code, _ := do(t, "DELETE", again.URL+"/api/v1/runs/"+c.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "charts", c.ID)); len(entries) != 0 {
		t.Errorf("%d cached charts left after the run was deleted", len(entries))
	}
}
