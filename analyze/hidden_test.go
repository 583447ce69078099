package analyze

import (
	"path/filepath"
	"testing"

	"kinetoscope/ingest"
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
// the prefill told from decode by kernel evidence, with the collectives of
// every decode step as the truth says.
func TestHiddenMarksInferred(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		dir := realRun(t, variant)
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
