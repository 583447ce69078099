package api_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces/synth"
)

// chartLoadSize is the uncompressed size of the large run's trace.
const chartLoadSize = 300 << 20

// analysisStarts records when each run's analysis began, by run id.
type analysisStarts struct {
	mu sync.Mutex
	at map[string]time.Time
}

// wrap records the start and runs the real analysis.
func (a *analysisStarts) wrap(_ context.Context, an api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error) {
	id := an.Run
	a.mu.Lock()
	a.at[id] = time.Now()
	a.mu.Unlock()
	return real()
}

func (a *analysisStarts) of(id string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.at[id]
	return t, ok
}

// BenchmarkChartLoad is the bounded loopback load test of chart work
// against uploads: six concurrent timeline requests (six different steps,
// so none is served from the cache) on a run of a 300 MB trace, and at
// the same time 32 uploads of small traces. It reports how long after its
// 202 each upload's analysis started (the worst must stay under 2 s) and
// how long the timelines took. Run it with
//
//	go test ./api -run '^$' -bench BenchmarkChartLoad -benchtime 1x
func BenchmarkChartLoad(b *testing.B) {
	dir := b.TempDir()
	cfg := synth.DefaultConfig()
	cfg.Ranks, cfg.TargetSize, cfg.Gzip = 1, chartLoadSize, true
	if _, err := synth.Generate(dir, cfg, false); err != nil {
		b.Fatal(err)
	}
	large := filepath.Join(dir, synth.FileName(&cfg, 0))
	for b.Loop() {
		starts := &analysisStarts{at: map[string]time.Time{}}
		s := startWithAnalysis(b, api.Config{DataDir: b.TempDir(), MaxUncompressedBytes: 1 << 30}, starts.wrap)
		big := uploadFile(b, s.URL, large, "&name=large")
		r := waitRun(b, s.URL, big.ID)
		if r.Status != "done" {
			b.Fatalf("large run: %s %s", r.Status, r.Error)
		}
		base := chartLoad(b, s, big.ID, starts, 0)
		res := chartLoad(b, s, big.ID, starts, 6)
		b.ReportMetric(base.worstStart.Seconds(), "s-worst-analysis-start-alone")
		b.ReportMetric(res.worstStart.Seconds(), "s-worst-analysis-start")
		b.ReportMetric(res.medianStart.Seconds(), "s-median-analysis-start")
		b.ReportMetric(res.worstTimeline.Seconds(), "s-worst-timeline")
		b.ReportMetric(res.uploadsDone.Seconds(), "s-32-uploads-analysed")
		b.Logf("large trace %d MB uncompressed, %.1f MB gzip, %d events", chartLoadSize>>20, float64(r.Size())/1e6, r.Progress.Events)
		b.Logf("32 uploads alone: analysis start after the 202 median %v, worst %v; all analysed in %v",
			base.medianStart, base.worstStart, base.uploadsDone)
		b.Logf("with 6 timelines (%v): analysis start median %v, worst %v (%.2fx alone); all analysed in %v (%.2fx)",
			res.timelines, res.medianStart, res.worstStart, ratio(res.worstStart, base.worstStart), res.uploadsDone, ratio(res.uploadsDone, base.uploadsDone))
		if res.worstStart > 2*time.Second {
			b.Errorf("an upload's analysis started %v after its 202, want under 2s", res.worstStart)
		}
		s.stop()
	}
}

// chartLoadResult is what one chart load run measured.
type chartLoadResult struct {
	timelines               []time.Duration
	worstTimeline           time.Duration
	medianStart, worstStart time.Duration
	uploadsDone             time.Duration
}

// ratio is a / b, 0 when b is.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// chartLoad runs timelines requests for different steps of run id and 32
// uploads at once, within a bound of ten minutes.
func chartLoad(b *testing.B, s *testServer, id string, starts *analysisStarts, timelines int) chartLoadResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var res chartLoadResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	begin := time.Now()
	for step := range timelines {
		wg.Go(func() {
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/runs/%s/charts/timeline.svg?step=%d", s.URL, id, step+2), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Errorf("timeline step %d: %v", step+2, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("timeline step %d: %d", step+2, resp.StatusCode)
			}
			mu.Lock()
			res.timelines = append(res.timelines, time.Since(t0).Round(time.Millisecond))
			mu.Unlock()
		})
	}
	if timelines > 0 {
		time.Sleep(200 * time.Millisecond) // the timelines are reading the trace
	}
	accepted := make([]time.Time, 32)
	ids := make([]string, 32)
	var up sync.WaitGroup
	for i := range 32 {
		up.Go(func() {
			c := uploadFile(b, s.URL, testkit.Public(b, loadTraces[i%len(loadTraces)]), fmt.Sprintf("&name=load-%d", i))
			accepted[i], ids[i] = time.Now(), c.ID
		})
	}
	up.Wait()
	var delays []time.Duration
	for i, rid := range ids {
		waitRun(b, s.URL, rid)
		at, ok := starts.of(rid)
		if !ok {
			b.Fatalf("upload %d: no analysis start recorded", i)
		}
		delays = append(delays, max(0, at.Sub(accepted[i])))
	}
	res.uploadsDone = time.Since(begin).Round(time.Millisecond)
	wg.Wait()
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	res.medianStart, res.worstStart = delays[len(delays)/2].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond)
	sort.Slice(res.timelines, func(i, j int) bool { return res.timelines[i] < res.timelines[j] })
	if n := len(res.timelines); n > 0 {
		res.worstTimeline = res.timelines[n-1]
	}
	return res
}
