package diff_test

import (
	"math"
	"path/filepath"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// kernelNames reads every trace of a run directory with encoding/json and
// returns the names of its GPU events.
func kernelNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no traces (%v)", dir, err)
	}
	names := map[string]bool{}
	for _, f := range files {
		var doc traceDoc
		if err := sampletraces.ReadJSON(f, &doc); err != nil {
			t.Fatal(err)
		}
		for _, e := range doc.TraceEvents {
			if e.Cat == "kernel" || e.Cat == "gpu_memcpy" || e.Cat == "gpu_memset" {
				names[e.Name] = true
			}
		}
	}
	return names
}

// truthDecodeWallMS is the mean measured wall time of the decode steps, over
// ranks, from the generator's truth.json.
func truthDecodeWallMS(t *testing.T, dir string) float64 {
	t.Helper()
	var truth struct {
		Steps    []struct{ Phase string }
		Measured struct {
			StepWallMS map[string][]float64 `json:"step_wall_ms"`
		}
	}
	if err := sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth); err != nil {
		t.Fatal(err)
	}
	sum, n := 0.0, 0
	for _, walls := range truth.Measured.StepWallMS {
		for i, w := range walls {
			if i < len(truth.Steps) && truth.Steps[i].Phase == "decode" {
				sum, n = sum+w, n+1
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: no decode wall times", dir)
	}
	return sum / float64(n)
}

func TestCompareRealEagerCUDAGraph(t *testing.T) {
	eager, graph := testkit.Real(t, "eager"), testkit.Real(t, "cudagraph")
	base, head := analysePath(t, eager), analysePath(t, graph)
	d, err := diff.Compare(base, head, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; launch delay p50 %.1f -> %.1f us; graph launches/step %.1f -> %.1f",
		d.HeadlineText, d.LaunchDelay.BaseP50US, d.LaunchDelay.HeadP50US, d.Step.BaseGraphLaunches, d.Step.HeadGraphLaunches)

	checkSelf(t, base)
	if self, _ := diff.Compare(base, base, diff.Options{}); self.Step.Verdict != "within noise" {
		t.Errorf("self diff step verdict %q, want within noise", self.Step.Verdict)
	}
	// Step time: significant, and the ratio close to the measured wall
	// clock's (CPU time per step, taken by the generator).
	if d.Phase != "decode" || !d.Step.Significant || d.Step.DeltaUS >= 0 {
		t.Errorf("decode step change %+v, want a significant drop", d.Step)
	}
	want := truthDecodeWallMS(t, graph) / truthDecodeWallMS(t, eager)
	if got := d.Step.HeadUS / d.Step.BaseUS; math.Abs(got-want) > 0.2*want {
		t.Errorf("step ratio head/base %.3f, measured wall clock %.3f", got, want)
	}
	// Launch delay: CUDA graphs launch one graph a step instead of every
	// kernel, so the typical delay falls.
	if l := d.LaunchDelay; l.BaseCount == 0 || l.HeadCount == 0 || l.DeltaP50US >= 0 {
		t.Errorf("launch delay %+v, want p50 to fall", l)
	}
	if d.Step.BaseGraphLaunches != 0 || d.Step.HeadGraphLaunches < 1 {
		t.Errorf("graph launches per step %.1f -> %.1f, want 0 -> at least 1", d.Step.BaseGraphLaunches, d.Step.HeadGraphLaunches)
	}
	// Both runs have two ranks, so the AllReduce change splits into
	// transfer and wait: with one graph launch a step the ranks arrive
	// together, and the wait is what falls.
	if c := d.Comm; c == nil || c.DeltaWait >= 0 || math.Abs(c.DeltaWait) < math.Abs(c.DeltaTransfer) {
		t.Errorf("comm %+v, want a fall in wait larger than the change in transfer", d.Comm)
	}
	// Kernels in one run only: what the diff names must be absent from the
	// other run's traces, read directly; when the traces hold the same
	// names, it must name none.
	bn, hn := kernelNames(t, eager), kernelNames(t, graph)
	for _, k := range d.Kernels.Added {
		if bn[k.Name] || !hn[k.Name] {
			t.Errorf("added kernel %q: in base %v, in head %v", k.Name, bn[k.Name], hn[k.Name])
		}
	}
	for _, k := range d.Kernels.Removed {
		if !bn[k.Name] || hn[k.Name] {
			t.Errorf("removed kernel %q: in base %v, in head %v", k.Name, bn[k.Name], hn[k.Name])
		}
	}
	if !d.Kernels.Complete {
		t.Error("kernel lists incomplete")
	}
	if sameKeys(bn, hn) && len(d.Kernels.Added)+len(d.Kernels.Removed) != 0 {
		t.Errorf("the traces run the same kernels, the diff names %d added, %d removed", len(d.Kernels.Added), len(d.Kernels.Removed))
	}
}

// sameKeys reports whether two sets are equal.
func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// BenchmarkCompareReal measures Compare on the real eager and CUDA-graph
// runs against the baseline of analysing one of them.
func BenchmarkCompareReal(b *testing.B) {
	eager, graph := testkit.Real(b, "eager"), testkit.Real(b, "cudagraph")
	set, err := ingest.Open(eager, ingest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	base, head := analysePath(b, eager), analysePath(b, graph)
	b.Run("analyze-baseline", func(b *testing.B) {
		for b.Loop() {
			if _, err := analyze.Analyze(set, analyze.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compare", func(b *testing.B) {
		for b.Loop() {
			if _, err := diff.Compare(base, head, diff.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
