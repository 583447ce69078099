package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// eagerFiles returns the real eager run's two rank files.
func eagerFiles(t *testing.T) []string {
	t.Helper()
	fs, err := filepath.Glob(filepath.Join(testkit.Real(t, "eager"), "*.pt.trace.json.gz"))
	if err != nil || len(fs) != 2 {
		t.Fatalf("eager rank files: %v %v", fs, err)
	}
	return fs
}

// copySlowly copies files into dir in chunks with pauses.
func copySlowly(t *testing.T, dir string, files []string) {
	for _, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Error(err)
			return
		}
		f, err := os.Create(filepath.Join(dir, filepath.Base(src)))
		if err != nil {
			t.Error(err)
			return
		}
		for i := 0; i < len(data); i += len(data)/4 + 1 {
			f.Write(data[i:min(i+len(data)/4+1, len(data))])
			time.Sleep(30 * time.Millisecond)
		}
		f.Close()
	}
}

// watchOutput is what --format json prints for a set.
type watchOutput struct {
	Set struct {
		Files   []string  `json:"files"`
		Missing []int     `json:"missing"`
		Start   time.Time `json:"start"`
	} `json:"set"`
	Report json.RawMessage `json:"report"`
}

// uploads is a stand-in Kinetoscope service that records the file parts
// and the query of each run posted.
type uploads struct {
	mu      sync.Mutex
	names   [][]string
	queries []url.Values
}

func (u *uploads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/api/v1/runs" {
		http.NotFound(w, r)
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var names []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		io.Copy(io.Discard, p)
		names = append(names, p.FileName())
	}
	u.mu.Lock()
	u.names = append(u.names, names)
	u.queries = append(u.queries, r.URL.Query())
	u.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, `{"id":"run1"}`)
}

func TestWatchCommand(t *testing.T) {
	files := eagerFiles(t)
	dir := t.TempDir()
	results := filepath.Join(t.TempDir(), "results.md")
	up := &uploads{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	done := make(chan struct{})
	go func() { defer close(done); copySlowly(t, dir, files) }()
	code, out, errs := runCmd("watch", dir, "--once", "--format", "json", "--settle", "30s",
		"--interval", "20ms", "--append", results, "--server", srv.URL)
	<-done
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got := decodeSets(t, out)
	if len(got) != 1 || len(got[0].Set.Files) != 2 || len(got[0].Set.Missing) != 0 {
		t.Fatalf("want one complete set of 2 ranks, got %.2000s", out)
	}
	sameAsAnalyze(t, got[0])
	doc, err := os.ReadFile(results)
	if err != nil || !strings.Contains(string(doc), "set 1: 2 of 2 ranks") || !strings.Contains(string(doc), "AllReduce") {
		t.Errorf("results document: %v\n%s", err, doc)
	}
	if len(up.names) != 1 || len(up.names[0]) != 2 || !strings.Contains(errs, "uploaded as run run1") {
		t.Fatalf("uploads %v; stderr %s", up.names, errs)
	}
	// The run is named after the directory and the profile's start (the
	// earliest rank's first GPU event, read here with encoding/json), and
	// labelled with its world size and source.
	start := firstKernelTime(t, files)
	q := up.queries[0]
	if want := filepath.Base(dir) + " " + start.Format("2006-01-02 15:04:05") + " UTC"; q.Get("name") != want {
		t.Errorf("run name %q, want %q", q.Get("name"), want)
	}
	if want := []string{"world_size=2", "source=watch"}; strings.Join(q["label"], " ") != strings.Join(want, " ") {
		t.Errorf("run labels %q, want %q", q["label"], want)
	}
	if !got[0].Set.Start.Equal(start) {
		t.Errorf("set start %v, want %v", got[0].Set.Start, start)
	}
}

// firstKernelTime returns the Unix time of the earliest GPU kernel of the
// traces: baseTimeNanoseconds plus its ts in µs, read with encoding/json.
func firstKernelTime(t *testing.T, paths []string) time.Time {
	t.Helper()
	var first time.Time
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Base   int64 `json:"baseTimeNanoseconds"`
			Events []struct {
				Cat string      `json:"cat"`
				TS  json.Number `json:"ts"`
			} `json:"traceEvents"`
		}
		err = json.NewDecoder(zr).Decode(&doc)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range doc.Events {
			if e.Cat != "kernel" && e.Cat != "gpu_memcpy" && e.Cat != "gpu_memset" {
				continue
			}
			us, err := e.TS.Float64()
			if err != nil {
				t.Fatal(err)
			}
			// ts is µs with three decimals: whole ns.
			ns := doc.Base + int64(math.Round(us*1000))
			if at := time.Unix(0, ns).UTC(); first.IsZero() || at.Before(first) {
				first = at
			}
		}
	}
	return first
}

// decodeSets decodes the JSON objects watch printed.
func decodeSets(t *testing.T, out string) []watchOutput {
	t.Helper()
	var sets []watchOutput
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var s watchOutput
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("output is not JSON sets: %v\n%.2000s", err, out)
		}
		sets = append(sets, s)
	}
	return sets
}

// sameAsAnalyze checks a set's report against driver.Analyze of its files.
func sameAsAnalyze(t *testing.T, s watchOutput) {
	t.Helper()
	ref, err := driver.Analyze(ingest.FromPaths(s.Set.Files), driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := driver.EncodeReport(ref.Report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Report, b) {
		t.Errorf("watch's report differs from driver.Analyze on %v", s.Set.Files)
	}
}

// vllm is a stand-in vLLM server with its two profiling endpoints; when
// profiling stops it writes the sample traces into dir, slowly.
type vllm struct {
	t       *testing.T
	dir     string
	files   []string
	mu      sync.Mutex
	calls   []string
	writing sync.WaitGroup
}

func (v *vllm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	v.calls = append(v.calls, r.Method+" "+r.URL.Path)
	v.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/start_profile":
	case r.Method == http.MethodPost && r.URL.Path == "/stop_profile":
		v.writing.Add(1)
		go func() { defer v.writing.Done(); copySlowly(v.t, v.dir, v.files) }()
	default:
		http.NotFound(w, r)
	}
}

func TestCapture(t *testing.T) {
	dir := t.TempDir()
	// An earlier profile's file, left truncated: capture must ignore it.
	old := filepath.Join(dir, "old_rank0.1.pt.trace.json.gz")
	if err := os.WriteFile(old, []byte{0x1f, 0x8b, 8}, 0o644); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, hour, hour); err != nil {
		t.Fatal(err)
	}
	v := &vllm{t: t, dir: dir, files: eagerFiles(t)}
	srv := httptest.NewServer(v)
	defer srv.Close()
	code, out, errs := runCmd("capture", "--vllm", srv.URL, "--seconds", "0.2", "--dir", dir,
		"--format", "json", "--settle", "30s", "--interval", "20ms")
	v.writing.Wait()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if want := []string{"POST /start_profile", "POST /stop_profile"}; strings.Join(v.calls, ",") != strings.Join(want, ",") {
		t.Errorf("calls %v, want %v", v.calls, want)
	}
	got := decodeSets(t, out)
	if len(got) != 1 || len(got[0].Set.Files) != 2 {
		t.Fatalf("want one set of 2 ranks, got %.2000s", out)
	}
	names := []string{filepath.Base(got[0].Set.Files[0]), filepath.Base(got[0].Set.Files[1])}
	sort.Strings(names)
	if strings.Contains(strings.Join(names, ","), "old_") {
		t.Errorf("capture analysed an earlier profile's file: %v", names)
	}
	sameAsAnalyze(t, got[0])
}

func TestCaptureErrors(t *testing.T) {
	dir := t.TempDir()
	abs, _ := filepath.Abs(dir)
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer broken.Close()
	closed := closedPort(t)
	flags := []string{
		`--profiler-config '{"profiler": "torch", "torch_profiler_dir": "` + abs + `"}'`,
		"VLLM_TORCH_PROFILER_DIR=" + abs,
		"profiling is not enabled",
	}
	tests := []struct {
		name string
		args []string
		want []string
		not  string // stderr must not say it
	}{
		{"404", []string{"--vllm", notFound.URL, "--dir", dir}, append(flags, "404"), "unreachable"},
		{"500", []string{"--vllm", broken.URL, "--dir", dir}, append(flags, "500"), "unreachable"},
		{"nothing listens", []string{"--vllm", closed, "--dir", dir},
			[]string{"the vLLM server at " + closed + " is unreachable", "connection refused"}, "profiling is not enabled"},
		{"missing dir", []string{"--vllm", notFound.URL, "--dir", filepath.Join(dir, "nope")}, []string{"profile directory"}, ""},
		{"no --vllm", []string{"--dir", dir}, []string{"want --vllm"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCmd(append([]string{"capture", "--seconds", "0"}, tt.args...)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if tt.not != "" && strings.Contains(errs, tt.not) {
				t.Errorf("stderr says %q:\n%s", tt.not, errs)
			}
		})
	}
}

// closedPort returns the URL of a local port that nothing listens on: one
// just listened on and closed.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

// A server that answers but writes no trace: capture gives up after
// --timeout and says what the directory holds and why each file was
// passed over.
func TestCaptureTimeout(t *testing.T) {
	dir := t.TempDir()
	hour := time.Now().Add(-time.Hour)
	old := filepath.Join(dir, "old_rank0.1.pt.trace.json.gz")
	for _, p := range []string{old, filepath.Join(dir, "server.log"), filepath.Join(dir, "capture_traces", "c.json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, hour, hour); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	done := make(chan struct{})
	var code int
	var errs string
	go func() {
		defer close(done)
		code, _, errs = runCmd("capture", "--vllm", srv.URL, "--seconds", "0", "--dir", dir,
			"--timeout", "300ms", "--settle", "1h", "--interval", "20ms")
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("capture still waits a minute after a --timeout of 300ms")
	}
	if code != 1 || calls.Load() != 2 {
		t.Fatalf("exit %d after %d calls, want 1 after start and stop: %s", code, calls.Load(), errs)
	}
	for _, w := range []string{
		"no trace appeared in " + dir + " within 300ms of stop_profile (--timeout)",
		"The directory holds 3 entries:",
		"capture_traces: a directory the watcher does not enter",
		"old_rank0.1.pt.trace.json.gz (2 bytes, written " + hour.Format(time.DateTime) + "): last written before the profile started",
		"server.log (2 bytes, written ",
		"): not a trace file name (.json or .json.gz)",
	} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
}
