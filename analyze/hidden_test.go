package analyze

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// hideMarks returns a copy of the set of path without its step marks: no
// CPU annotation and no kept python call, as a trace profiled without
// record_function and with_stack.
func hideMarks(t *testing.T, path string) *ingest.Set {
	t.Helper()
	set, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range set.Traces {
		var kept ingest.Chunks[ingest.Annotation]
		for _, a := range tr.Annotations.All() {
			if a.GPU {
				kept.Append(*a)
			}
		}
		tr.Annotations = kept
		tr.PythonCalls = ingest.Chunks[ingest.Annotation]{}
	}
	return set
}

// TestHiddenMarksInferred: the real samples with every step mark hidden
// are cut by their repetition into exactly the steps their generator ran,
// the prefill told from decode by the tokens of the embedding's recorded
// input shapes, with the collectives of every decode step as the truth
// says.
func TestHiddenMarksInferred(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		dir := testkit.Real(t, variant)
		var truth truthFile
		if err := sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth); err != nil {
			t.Fatal(err)
		}
		r, err := Analyze(hideMarks(t, dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rk := range r.Ranks {
			pre := 0
			for _, s := range rk.Steps {
				if s.Phase == PhasePrefill {
					pre++
				}
				// The samples recorded shapes: the embedding looked up
				// 4 x 128 prompt tokens at prefill, 4 at each decode step;
				// in cudagraph the decode embedding runs inside the graph
				// (no CPU op), so kernel evidence decides there.
				want := map[string]int{PhasePrefill: 512, PhaseDecode: 4}[s.Phase]
				source := "record_shapes"
				if variant == "cudagraph" {
					want, source = map[string]int{PhasePrefill: 512}[s.Phase], "GEMM time"
				}
				if s.Tokens != want || !strings.Contains(s.PhaseSource, source) {
					t.Errorf("%s rank %d step %d: %s with %d tokens (%s); want %d tokens, phase from %s",
						variant, rk.Rank, s.Index, s.Phase, s.Tokens, s.PhaseSource, want, source)
				}
				if s.Phase == PhaseDecode && (s.Buckets[AllReduce].Count != truth.PerRankStep.AllReduce || s.Buckets[AllGather].Count != truth.PerRankStep.AllGather) {
					t.Errorf("%s rank %d step %d: %d allreduce, %d allgather; want %d, %d", variant, rk.Rank, s.Index,
						s.Buckets[AllReduce].Count, s.Buckets[AllGather].Count, truth.PerRankStep.AllReduce, truth.PerRankStep.AllGather)
				}
			}
			t.Logf("%s rank %d: %s", variant, rk.Rank, rk.StepEvidence)
			if rk.StepSource != SourceInferred || rk.Decode.Steps != truth.DecodeSteps || pre != 1 {
				t.Errorf("%s rank %d: %s, %d steps: %d decode, %d prefill; want %d decode, 1 prefill (%s)",
					variant, rk.Rank, rk.StepSource, len(rk.Steps), rk.Decode.Steps, pre, truth.DecodeSteps, rk.StepEvidence)
			}
		}
	}
}

// TestHeadlineGuardHiddenMarks: a real run whose step marks are hidden and
// whose rank 1 profile stops half-way (a profiler stopped early on one
// rank) cannot give one step time for both ranks: the headline says that
// the ranks disagree on the step count, gives no figure, and names the
// flag that fixes it. The whole run with its marks has no problem.
func TestHeadlineGuardHiddenMarks(t *testing.T) {
	dir := testkit.Real(t, "eager")
	set := hideMarks(t, dir)
	cutHalf(set.Traces[1])
	r, err := Analyze(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Headline
	if h == nil || !strings.Contains(h.Problem, "ranks disagree on the number of steps") || !strings.Contains(h.Fix, "--step-regex") {
		t.Fatalf("headline = %+v, want the ranks' disagreement and a --step-regex fix", h)
	}
	full, err := ingest.Open(dir, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = Analyze(full, Options{}); err != nil || r.Headline.Problem != "" {
		t.Errorf("with marks: problem %q (%v)", r.Headline.Problem, err)
	}
}

// cutHalf drops the GPU events and launches of t from the middle of its
// GPU activity on.
func cutHalf(t *ingest.Trace) {
	lo, hi := int64(1<<62), int64(0)
	for _, g := range t.GPU.All() {
		lo, hi = min(lo, g.Start), max(hi, g.End())
	}
	mid := lo + (hi-lo)/2
	var gpu ingest.Chunks[ingest.GPUEvent]
	for _, g := range t.GPU.All() {
		if g.Start < mid {
			gpu.Append(*g)
		}
	}
	t.GPU = gpu
}

// TestHeadlineRealFindings: the headline of the real eager run names the
// ranks where they diverge (rank 0's GPU busy a small share of the step,
// rank 1 waiting most of its kernel time), with each rank's figure equal to
// its own phase statistics; the public SGLang decode trace's one step is
// called out as mostly idle.
func TestHeadlineRealFindings(t *testing.T) {
	_, r := analyzePath(t, testkit.Real(t, "eager"))
	h := r.Headline
	if len(h.PerRank) != 2 {
		t.Fatalf("eager: per-rank figures %+v, want both ranks", h.PerRank)
	}
	for i, p := range h.PerRank {
		d := r.Ranks[i].Decode
		if busy := 100 * d.BusyUS / d.SpanUS; p.Rank != r.Ranks[i].Rank || math.Abs(p.BusyShare-busy) > 1e-9 || p.WaitShare != d.Comm.WaitShare {
			t.Errorf("eager rank %d: headline %+v, decode busy %.2f%% wait %.2f%%", i, p, busy, d.Comm.WaitShare)
		}
	}
	if h.PerRank[0].BusyShare > 20 || h.PerRank[1].WaitShare < 80 {
		t.Errorf("eager: rank 0 busy %.1f%%, rank 1 waits %.1f%%", h.PerRank[0].BusyShare, h.PerRank[1].WaitShare)
	}
	sg := analyzePublic(t, "tracelens-sglang-qwen3-8b-decode.json.gz").Headline
	if o := sg.Outlier; o == nil || o.BusyShare > outlierBusyShare || o.SpanUS < 400_000 {
		t.Errorf("SGLang decode: outlier %+v, want its one mostly idle step of about 473 ms", o)
	}
}
