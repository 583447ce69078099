package fromtrace

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/ingest"
	"kinetoscope/render"
)

// publicTraces is the directory of real public traces.
func publicTraces(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "traces", "public")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// TestTimelineMatchesReport checks on real traces that the timeline holds
// exactly the kernels analyze put in the step: same count, kernel time and
// time per bucket.
func TestTimelineMatchesReport(t *testing.T) {
	for _, name := range []string{
		"tracelens-vllm-prefilldecode-piecewise.json.gz",
		"tracelens-sglang-qwen3-8b-prefilldecode.json.gz",
		"hta-sampled-rank-0.json.gz",
		"tracelens-mi300-resnet-rccl.json.gz",
	} {
		t.Run(name, func(t *testing.T) {
			set, err := ingest.Open(filepath.Join(publicTraces(t), name), ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := analyze.Analyze(set, analyze.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []int{-1, r.Ranks[0].Steps[0].Index} {
				in, err := Timeline(set, r, analyze.Options{}, -1, step)
				if err != nil {
					t.Fatal(err)
				}
				checkStep(t, r, in.Step, in.Kernels)
			}
		})
	}
}

func checkStep(t *testing.T, r *analyze.Report, index int, ks []render.TimelineKernel) {
	t.Helper()
	var s *analyze.Step
	for i := range r.Ranks[0].Steps {
		if r.Ranks[0].Steps[i].Index == index {
			s = &r.Ranks[0].Steps[i]
		}
	}
	if s == nil {
		t.Fatalf("step %d not in report", index)
	}
	byBucket := map[analyze.BucketID]float64{}
	total := 0.0
	for _, k := range ks {
		byBucket[k.Bucket] += k.DurUS
		total += k.DurUS
	}
	if len(ks) != s.Kernels || !near(total, s.KernelUS) {
		t.Errorf("step %d: timeline %d events, %.3f us; report %d events, %.3f us", index, len(ks), total, s.Kernels, s.KernelUS)
	}
	for id, b := range s.Buckets {
		if !near(byBucket[id], b.US) {
			t.Errorf("step %d %s: timeline %.3f us, report %.3f us", index, id, byBucket[id], b.US)
		}
	}
}

// near says whether a and b agree within 0.01% (float sums in another order).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-4*math.Max(math.Abs(b), 1) }
