package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

func TestParseServeFlags(t *testing.T) {
	t.Setenv("KINETOSCOPE_TOKEN", "from-env-0123456789")
	tests := []struct {
		args  []string
		token string
		addr  string
		max   int64
	}{
		{nil, "from-env-0123456789", "127.0.0.1:8080", 8 << 30},
		{[]string{"--token", "flag-token-0123456", "--addr", "127.0.0.1:0", "--max-upload", "1024"}, "flag-token-0123456", "127.0.0.1:0", 1024},
	}
	for _, tc := range tests {
		f, err := parseServeFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if f.token != tc.token || f.addr != tc.addr || f.maxUpload != tc.max || f.data != "kinetoscope-data" {
			t.Errorf("%v: got %+v", tc.args, f)
		}
	}
	if _, err := parseServeFlags([]string{"extra"}, io.Discard); err == nil {
		t.Error("extra argument accepted")
	}
}

// Without a token, serve listens only on loopback unless told
// --insecure-no-token, and the refusal names that flag.
func TestServeRefusesExposureWithoutToken(t *testing.T) {
	t.Setenv("KINETOSCOPE_TOKEN", "")
	tests := []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--addr", "localhost:8080"}, true},
		{[]string{"--addr", "[::1]:8080"}, true},
		{[]string{"--addr", ":8080"}, false},
		{[]string{"--addr", "0.0.0.0:8080"}, false},
		{[]string{"--addr", "10.1.2.3:8080"}, false},
		{[]string{"--addr", ":8080", "--token", "a-token-of-16-chars"}, true},
		{[]string{"--addr", ":8080", "--insecure-no-token"}, true},
	}
	for _, tc := range tests {
		_, err := parseServeFlags(tc.args, io.Discard)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "--insecure-no-token")) {
			t.Errorf("%v: %v, want ok %v (a refusal naming --insecure-no-token)", tc.args, err, tc.ok)
		}
	}
}

// serve loads the samples on first start, answers on its listener, and
// stops cleanly when its context ends.
func TestServeLoadsSamples(t *testing.T) {
	samples := t.TempDir()
	src, err := sampletraces.Public("tracelens-vllm-decode-full-graph.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("public trace: %v", err)
	}
	if err := os.WriteFile(filepath.Join(samples, "decode.json.gz"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &serveFlags{data: t.TempDir(), samples: samples, maxUpload: 1 << 30, maxUncompressed: 1 << 30, workers: 1}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, f, io.Discard) }()
	base := "http://" + ln.Addr().String()
	var list struct {
		Runs []struct {
			Name   string            `json:"name"`
			Status string            `json:"status"`
			Labels map[string]string `json:"labels"`
		} `json:"runs"`
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(base + "/api/v1/runs")
		if err != nil {
			continue
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err == nil && len(list.Runs) == 1 && list.Runs[0].Status == "done" {
			break
		}
	}
	if len(list.Runs) != 1 || list.Runs[0].Status != "done" || list.Runs[0].Labels["source"] != "sample" {
		t.Fatalf("sample run: %+v", list.Runs)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// A shutdown while an upload streams waits out the grace period, cuts the
// upload off and returns; the upload leaves no run and no temp file.
func TestServeShutdownDuringUpload(t *testing.T) {
	src, err := sampletraces.Public("tracelens-vllm-decode-full-graph.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	trace, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	f := &serveFlags{data: data, noSamples: true, maxUpload: 1 << 30, maxUncompressed: 1 << 30, workers: 1, grace: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, f, io.Discard) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: %d\r\n\r\n", len(trace))
	conn.Write(trace[:len(trace)/2])
	tmp := filepath.Join(data, "blobs", "tmp")
	waitFiles(t, tmp, 1)
	cancel()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(answer), "HTTP/1.1 503") || !strings.Contains(string(answer), "shut down during the upload") {
		t.Errorf("upload cut off by shutdown answered %q, want the 503 body", answer)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	waitFiles(t, tmp, 0)
	if runs := countRuns(t, data); runs != 0 {
		t.Errorf("%d runs after an upload cut off by shutdown", runs)
	}
}

// waitFiles waits up to 5 seconds for dir to hold n entries.
func waitFiles(t *testing.T, dir string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if entries, _ := os.ReadDir(dir); len(entries) == n {
			return
		}
	}
	t.Fatalf("%s does not hold %d entries", dir, n)
}

// countRuns opens the data directory again and counts its runs.
func countRuns(t *testing.T, data string) int {
	t.Helper()
	srv, err := api.Open(api.Config{DataDir: data, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, total, err := srv.ListRuns(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// serve started outside the repository, with no --samples, loads the real
// sample runs built into the binary; --no-samples loads none.
func TestServeBundledSamples(t *testing.T) {
	entries, err := fs.ReadDir(sampletraces.Bundled(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		if e.IsDir() {
			want = append(want, e.Name())
		}
	}
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		noSamples bool
		want      []string
	}{{false, want}, {true, nil}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		f := &serveFlags{data: t.TempDir(), noSamples: tc.noSamples, maxUpload: 1 << 30, maxUncompressed: 1 << 30, workers: 1}
		done := make(chan error, 1)
		go func() { done <- serve(ctx, ln, f, io.Discard) }()
		var got []string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var list struct {
				Runs []struct {
					Name string `json:"name"`
				} `json:"runs"`
			}
			resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/runs?limit=100")
			if err != nil {
				continue
			}
			err = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			if err != nil {
				continue
			}
			got = got[:0]
			for _, r := range list.Runs {
				got = append(got, r.Name)
			}
			if len(got) >= len(tc.want) {
				break
			}
		}
		cancel()
		<-done
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("no-samples %v: runs %q, want %q", tc.noSamples, got, tc.want)
		}
	}
}

// serve --watch imports a set of rank files that appears in the watched
// directory as one run, analysed like an upload.
func TestServeWatch(t *testing.T) {
	watched := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &serveFlags{data: t.TempDir(), noSamples: true, watch: watched, maxUpload: 1 << 30, maxUncompressed: 1 << 30, workers: 1}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, f, io.Discard) }()
	files, err := filepath.Glob(filepath.Join(testkit.Real(t, "eager"), "*.pt.trace.json.gz"))
	if err != nil || len(files) != 2 {
		t.Fatalf("rank files: %v %v", files, err)
	}
	base := "http://" + ln.Addr().String()
	page := func() string {
		resp, err := http.Get(base + "/")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var last []byte
	for i, src := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if i == len(files)-1 { // the last rank half written first: the list shows the set filling
			last = b
			b = b[:len(b)/2]
		}
		if err := os.WriteFile(filepath.Join(watched, filepath.Base(src)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	filling := ""
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(filling, "1 complete of world size 2"); time.Sleep(50 * time.Millisecond) {
		filling = page()
	}
	if !strings.Contains(filling, `id="watched"`) || !strings.Contains(filling, "2 trace files") || !strings.Contains(filling, "1 complete of world size 2") {
		t.Errorf("the run list does not show the set filling:\n%s", filling)
	}
	if err := os.WriteFile(filepath.Join(watched, filepath.Base(files[len(files)-1])), last, 0o644); err != nil {
		t.Fatal(err)
	}
	var run struct {
		ID     string            `json:"id"`
		Status string            `json:"status"`
		Labels map[string]string `json:"labels"`
		Files  []json.RawMessage `json:"files"`
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var list struct {
			Runs []json.RawMessage `json:"runs"`
		}
		resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/runs")
		if err != nil {
			continue
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err == nil && len(list.Runs) == 1 {
			if err := json.Unmarshal(list.Runs[0], &run); err == nil && run.Status == "done" {
				break
			}
		}
	}
	if run.Status != "done" || run.Labels["source"] != "watch" || len(run.Files) != 2 {
		t.Errorf("watched run: %+v", run)
	}
	p := page()
	section, _, _ := strings.Cut(p[max(strings.Index(p, `id="watched"`), 0):], "</section>")
	if !strings.Contains(section, `runs: <a href="/runs/`+run.ID+`">`) {
		t.Errorf("the watched section does not link the set's run %s:\n%s", run.ID, section)
	}
	cancel()
	<-done
}
