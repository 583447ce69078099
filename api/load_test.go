package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// loadTraces are the public traces quickest to analyse (33 KB to 459 KB),
// used by the load test to stay fast in CI; the benchmark uses every trace
// with GPU kernels.
var loadTraces = []string{
	"tracelens-vllm-decode-full-graph.json.gz",
	"tracelens-sglang-qwen3-8b-decode.json.gz",
	"tracelens-vllm-prefilldecode-piecewise.json.gz",
	"tracelens-h100-qwen1.5-0.5b.json.gz",
	"tracelens-mi300-qwen1.5-0.5b.json.gz",
}

// gpuTraces lists every public trace with GPU kernels.
func gpuTraces(t testing.TB) []string {
	matches, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	testkit.Must(t, err)
	var out []string
	for _, m := range matches {
		if b := filepath.Base(m); b != "hta-rank-non-gpu.json.gz" && b != "hta-no-distributed-info.json.gz" { // CPU only
			out = append(out, filepath.Base(m))
		}
	}
	sort.Strings(out)
	return out
}

// heapPeak samples the heap in use until stopped and returns its peak.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// loadResult is what one load run measured.
type loadResult struct {
	uploads  int
	bytes    int64
	elapsed  time.Duration
	heapPeak uint64
}

// uploadConcurrently uploads n traces (cycling over names) at once, waits
// for every analysis and checks each report against a direct analysis.
func uploadConcurrently(t testing.TB, s *testServer, names []string, n int, want map[string]*analyze.Report) loadResult {
	runtime.GC()
	stop := heapPeak()
	start := time.Now()
	ids := make([]string, n)
	var bytes atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := testkit.Public(t, names[i%len(names)])
			c := uploadFile(t, s.URL, p, fmt.Sprintf("&label=load=%d", i))
			ids[i] = c.ID
			bytes.Add(c.Run.Size())
		})
	}
	wg.Wait()
	runs := make([]store.Run, n)
	for i, id := range ids {
		runs[i] = waitRun(t, s.URL, id)
	}
	res := loadResult{uploads: n, bytes: bytes.Load(), elapsed: time.Since(start), heapPeak: stop()}
	for i, r := range runs {
		name := names[i%len(names)]
		if r.Status != store.StatusDone {
			t.Fatalf("upload %d (%s): %s %s", i, name, r.Status, r.Error)
		}
		var rep analyze.Report
		getJSON(t, s.URL+"/api/v1/runs/"+r.ID+"/report", &rep)
		if rep.Source != name {
			t.Fatalf("upload %d: report of %q, want %q: uploads mixed", i, rep.Source, name)
		}
		sameAnalysis(t, &rep, want[name])
	}
	return res
}

// directReports analyses each trace once without the server.
func directReports(t testing.TB, names []string) map[string]*analyze.Report {
	want := map[string]*analyze.Report{}
	for _, n := range names {
		want[n] = directReport(t, testkit.Public(t, n))
	}
	return want
}

// 32 concurrent uploads on loopback all complete, each with its own
// correct report.
func TestConcurrentUploads(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	want := directReports(t, loadTraces)
	base := uploadConcurrently(t, s, loadTraces[:1], 1, want)
	res := uploadConcurrently(t, s, loadTraces, 32, want)
	t.Logf("baseline 1 upload: %v, heap peak %.1f MiB; 32 uploads (%.1f MiB): %v (%.1fx), heap peak %.1f MiB (%.2fx)",
		base.elapsed.Round(time.Millisecond), mib(base.heapPeak), mib(uint64(res.bytes)), res.elapsed.Round(time.Millisecond),
		float64(res.elapsed)/float64(base.elapsed), mib(res.heapPeak), float64(res.heapPeak)/float64(base.heapPeak))
	var list struct{ Total int }
	getJSON(t, s.URL+"/api/v1/runs?label=load=31", &list)
	if list.Total != 1 {
		t.Errorf("label load=31: %d runs", list.Total)
	}
	if blobs := storedObjects(t, s.DataDir(), "sha256"); blobs != len(loadTraces) {
		t.Errorf("%d blobs for %d distinct files: content addressing failed", blobs, len(loadTraces))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// BenchmarkConcurrentUploads uploads 32 traces at once, drawn from every
// public trace with GPU kernels, and reports the heap peak against one
// upload of the largest trace measured in the same run.
func BenchmarkConcurrentUploads(b *testing.B) {
	names := gpuTraces(b)
	want := directReports(b, names)
	largest := largestTrace(b, names)
	for b.Loop() {
		s := startServer(b, api.Config{DataDir: b.TempDir()})
		base := uploadConcurrently(b, s, []string{largest}, 1, want)
		res := uploadConcurrently(b, s, names, 32, want)
		b.ReportMetric(mib(base.heapPeak), "MiB-heap-1-upload")
		b.ReportMetric(mib(res.heapPeak), "MiB-heap-32-uploads")
		b.ReportMetric(float64(res.heapPeak)/float64(base.heapPeak), "heap-ratio-32/1")
		b.ReportMetric(float64(res.elapsed)/float64(base.elapsed), "time-ratio-32/1")
		b.ReportMetric(float64(res.bytes)/res.elapsed.Seconds()/(1<<20), "MiB/s-uploaded")
		s.stop()
	}
}

// largestTrace returns the name of the largest trace file.
func largestTrace(t testing.TB, names []string) string {
	best, size := "", int64(-1)
	for _, n := range names {
		st, err := os.Stat(testkit.Public(t, n))
		testkit.Must(t, err)
		if st.Size() > size {
			best, size = n, st.Size()
		}
	}
	return best
}
