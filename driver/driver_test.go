package driver

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/render"
)

// loaded is one path ingested and analysed; r is nil when the path holds
// no trace with GPU events.
type loaded struct {
	once sync.Once
	set  *ingest.Set
	r    *analyze.Report
	err  error
}

// loads holds, per path, what this test binary ingested and analysed, so
// that tests sharing a trace read it once. Tests must not modify it.
var loads sync.Map // path -> *loaded

// load ingests and analyses one path, once per test binary.
func load(t *testing.T, path string) (*ingest.Set, *analyze.Report) {
	t.Helper()
	v, _ := loads.LoadOrStore(path, &loaded{})
	l := v.(*loaded)
	l.once.Do(func() {
		if l.set, l.err = ingest.Open(path, ingest.Options{}); l.err == nil && len(l.set.Traces) > 0 {
			l.r, l.err = analyze.Analyze(l.set, analyze.Options{})
		}
	})
	if l.err != nil {
		t.Fatalf("%s: %v", path, l.err)
	}
	return l.set, l.r
}

// TestPublicTraces draws every chart for every public trace, checks that
// each SVG parses and names the headline bucket, and that the default
// timeline holds exactly the kernels analyze put in that step.
func TestPublicTraces(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no public traces: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			set, r := load(t, p)
			if r == nil {
				if len(set.SetAside) == 0 {
					t.Fatalf("no trace and nothing set aside")
				}
				return // CPU-only trace: nothing to draw, ingest says why
			}
			checkCharts(t, set, r)
		})
	}
}

// checkCharts draws the four single-run charts and checks them.
func checkCharts(t *testing.T, set *ingest.Set, r *analyze.Report) {
	run := &Run{Report: r, Set: set}
	in, err := run.TimelineInput(-1, -1)
	if err != nil {
		t.Fatal(err)
	}
	checkStep(t, r, in.Step, in.Kernels)
	head := ""
	if r.Headline != nil {
		head = r.Headline.Label
	}
	for _, name := range RunChartKinds() {
		svg, err := run.Chart(ChartRequest{Kind: name, Format: render.SVG, Rank: -1, Step: -1})
		// A chart of what the run does not have says so (render.ErrNoData),
		// and only then.
		noData := map[string]bool{
			"bandwidth": r.Bandwidth == nil || len(r.Bandwidth.Rows) == 0,
			"layers":    render.ShownLayers(&r.Ranks[0]) == nil,
			"roofline":  r.Roofline == nil || len(r.Roofline.Rows) == 0,
		}
		if noData[name] {
			if !errors.Is(err, render.ErrNoData) {
				t.Errorf("%s chart of a run without its data: %v", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		texts := testkit.MustSVGText(t, svg)
		if name == "steptime" {
			if h := r.Headline; h != nil && h.Account != nil && !strings.Contains(texts, render.PartLegend(h.Account.Part)) {
				t.Errorf("steptime: no largest part %q in\n%s", h.Account.Part, texts)
			}
			continue
		}
		if name != "timeline" && name != "bandwidth" && name != "layers" && name != "roofline" && !strings.Contains(texts, head) {
			t.Errorf("%s: no headline bucket %q in\n%s", name, head, texts)
		}
	}
}

// TestPublicDiff draws the diff chart of the two HTA diff traces.
func TestPublicDiff(t *testing.T) {
	dir := testkit.PublicDir(t)
	_, base := load(t, filepath.Join(dir, "hta-diff-control-a100.json.gz"))
	_, head := load(t, filepath.Join(dir, "hta-diff-test-v100.json.gz"))
	d, err := Compare(base, head, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svg, err := DiffChart(d, "diff", render.SVG)
	if err != nil {
		t.Fatal(err)
	}
	texts := testkit.MustSVGText(t, svg)
	top := d.Buckets[d.BucketOrder[0]]
	if !strings.Contains(texts, top.Label) || !strings.Contains(texts, "hta-diff-test-v100.json.gz") {
		t.Errorf("diff chart lacks %q or the head file:\n%s", top.Label, texts)
	}
}

// checkStep checks that the timeline holds the step's kernels: same count,
// kernel time and time per bucket as the report.
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
