package diff_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// analysePath ingests and analyses a trace path, listing every kernel.
func analysePath(t testing.TB, path string) *analyze.Report {
	t.Helper()
	set, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	r, err := analyze.Analyze(set, analyze.Options{})
	if err != nil {
		t.Fatalf("analyze %s: %v", path, err)
	}
	return r
}

// coarse maps a bucket to the class the direct comparison can tell apart
// with a name-only classifier.
func coarse(id analyze.BucketID) string {
	b, _ := analyze.BucketByID(id)
	switch {
	case b.Group == analyze.GroupCommunication:
		return "comm"
	case id == analyze.GEMM || id == analyze.MarlinGEMM:
		return "gemm"
	case id == analyze.Attention:
		return "attention"
	case b.Group == analyze.GroupMemory:
		return "memory"
	}
	return "other"
}

// traceDoc is the part of a Chrome trace the direct comparison reads.
type traceDoc struct {
	TraceEvents []struct {
		Name string  `json:"name"`
		Cat  string  `json:"cat"`
		Ts   float64 `json:"ts"`
		Dur  float64 `json:"dur"`
		Args struct {
			Correlation *float64 `json:"correlation"`
		} `json:"args"`
	} `json:"traceEvents"`
}

var (
	attentionRE = regexp.MustCompile(`(?i)flash|attn|attention|fmha`)
	gemmRE      = regexp.MustCompile(`(?i)gemm|cijk|nvjet|xmma|cutlass|matmul|gemv|cublas`)
)

// classify is the direct comparison's own classifier, by name and category.
func classify(name, cat string) string {
	l := strings.ToLower(name)
	switch {
	case cat == "gpu_memcpy" || cat == "gpu_memset":
		return "memory"
	case strings.Contains(l, "nccl") || strings.Contains(l, "rccl"):
		return "comm"
	case attentionRE.MatchString(l):
		return "attention"
	case gemmRE.MatchString(l):
		return "gemm"
	}
	return "other"
}

// directPerStep reads a gzip trace with encoding/json and sums GPU event
// time per coarse class over the events launched inside a ProfilerStep
// annotation, divided by the number of steps.
func directPerStep(t *testing.T, path string) map[string]float64 {
	t.Helper()
	var doc traceDoc
	if err := sampletraces.ReadJSON(path, &doc); err != nil {
		t.Fatal(err)
	}
	var steps [][2]float64
	launch := map[float64]float64{}
	for _, e := range doc.TraceEvents {
		switch {
		case e.Cat == "user_annotation" && strings.HasPrefix(e.Name, "ProfilerStep#"):
			steps = append(steps, [2]float64{e.Ts, e.Ts + e.Dur})
		case (e.Cat == "cuda_runtime" || e.Cat == "cuda_driver") && e.Args.Correlation != nil:
			launch[*e.Args.Correlation] = e.Ts
		}
	}
	if len(steps) == 0 {
		t.Fatalf("%s: no ProfilerStep annotations", path)
	}
	out := map[string]float64{}
	for _, e := range doc.TraceEvents {
		if e.Cat != "kernel" && e.Cat != "gpu_memcpy" && e.Cat != "gpu_memset" || e.Args.Correlation == nil {
			continue
		}
		ts, ok := launch[*e.Args.Correlation]
		if ok && inSteps(ts, steps) {
			out[classify(e.Name, e.Cat)] += e.Dur / float64(len(steps))
		}
	}
	return out
}

func inSteps(ts float64, steps [][2]float64) bool {
	for _, s := range steps {
		if s[0] <= ts && ts <= s[1] {
			return true
		}
	}
	return false
}

// largestChange returns the class whose value changed most between a and b.
func largestChange(a, b map[string]float64) (string, float64) {
	best, bestD := "", 0.0
	for _, c := range []string{"comm", "gemm", "attention", "memory", "other"} {
		if d := b[c] - a[c]; math.Abs(d) > math.Abs(bestD) {
			best, bestD = c, d
		}
	}
	return best, bestD
}

func TestComparePublicPairs(t *testing.T) {
	pairs := []struct{ base, head string }{
		{"hta-diff-control-a100.json.gz", "hta-diff-test-v100.json.gz"},
		{"tracelens-h100-qwen1.5-0.5b.json.gz", "tracelens-mi300-qwen1.5-0.5b.json.gz"},
	}
	for _, p := range pairs {
		t.Run(p.base, func(t *testing.T) {
			bp, hp := testkit.Public(t, p.base), testkit.Public(t, p.head)
			base, head := analysePath(t, bp), analysePath(t, hp)
			d, err := diff.Compare(base, head, diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{} // the diff's deltas by coarse class
			for id, b := range d.Buckets {
				got[coarse(id)] += b.DeltaUS
			}
			db, dh := directPerStep(t, bp), directPerStep(t, hp)
			dc, dd := largestChange(db, dh)
			top := d.BucketOrder[0]
			t.Logf("%s\ndiff: largest change %s %+.0f us/step (%s %+.0f); direct: %s %+.0f us/step",
				d.HeadlineText, top, d.Buckets[top].DeltaUS, coarse(top), got[coarse(top)], dc, dd)
			// The name-only classifier cannot split the fine buckets, so the
			// diff's largest-change bucket must fall in the direct
			// comparison's largest-change class, changing the same way.
			if coarse(top) != dc {
				t.Errorf("largest change: diff %s (%s), direct %s", top, coarse(top), dc)
			}
			if r := got[dc] / dd; r < 0.5 || r > 2 {
				t.Errorf("%s changes %+.0f us/step in the diff, %+.0f in the direct comparison", dc, got[dc], dd)
			}
			checkSelf(t, base)
			if !metaDiffers(d, "gpu") {
				t.Errorf("GPU metadata does not differ: %+v", d.Metadata)
			}
		})
	}
}

// metaDiffers reports whether the metadata key differs.
func metaDiffers(d *diff.Diff, key string) bool {
	for _, m := range d.Metadata {
		if m.Key == key {
			return m.Differs
		}
	}
	return false
}

// checkSelf diffs a run with itself: nothing may change or be significant.
func checkSelf(t *testing.T, r *analyze.Report) {
	t.Helper()
	d, err := diff.Compare(r, r, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Step.Significant || d.Step.DeltaUS != 0 {
		t.Errorf("self diff step: %+v", d.Step)
	}
	for id, b := range d.Buckets {
		if b.Significant || b.DeltaUS != 0 {
			t.Errorf("self diff bucket %s: %+v", id, b)
		}
	}
	if k := d.Kernels; len(k.Added)+len(k.Removed) != 0 {
		t.Errorf("self diff: %d added, %d removed kernels", len(k.Added), len(k.Removed))
	}
	for _, m := range d.Metadata {
		if m.Differs {
			t.Errorf("self diff metadata differs: %+v", m)
		}
	}
}

func TestCompareRanksPublic(t *testing.T) {
	// Two ranks of one job, opened as a profile directory.
	dir := t.TempDir()
	for i, name := range []string{"hta-sampled-rank-0.json.gz", "hta-sampled-rank-1.json.gz"} {
		link := filepath.Join(dir, fmt.Sprintf("rank%d.json.gz", i))
		if err := os.Symlink(testkit.Public(t, name), link); err != nil {
			t.Fatal(err)
		}
	}
	r := analysePath(t, dir)
	if len(r.Ranks) != 2 {
		t.Fatalf("%d ranks, want 2", len(r.Ranks))
	}
	per := map[string]*diff.Diff{}
	for _, sel := range []string{"all", "0", "1"} {
		var opt diff.Options
		if sel != "all" {
			n, _ := strconv.Atoi(sel)
			opt.Rank = &n
		}
		d, err := diff.Compare(r, r, opt)
		if err != nil {
			t.Fatal(err)
		}
		per[sel] = d
	}
	if per["all"].Base.Ranks != 2 || per["1"].Base.Ranks != 1 {
		t.Errorf("ranks compared: pooled %d, rank 1 %d; want 2, 1", per["all"].Base.Ranks, per["1"].Base.Ranks)
	}
	// Both ranks have the same number of steps, so pooled figures are the
	// mean of the ranks'.
	if n0, n1 := per["0"].Base.Steps, per["1"].Base.Steps; n0 != n1 || n0 == 0 {
		t.Fatalf("steps: rank 0 %d, rank 1 %d; want the same, not 0", n0, n1)
	}
	for id, b := range per["all"].Buckets {
		want := (per["0"].Buckets[id].BaseUSPerStep + per["1"].Buckets[id].BaseUSPerStep) / 2
		if math.Abs(b.BaseUSPerStep-want) > 1e-6*math.Max(1, want) {
			t.Errorf("%s pooled %.3f us/step, mean of ranks %.3f", id, b.BaseUSPerStep, want)
		}
	}
}
