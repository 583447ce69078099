package analyze

import (
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// styleTruth is the part of a trace style's truth.json the tests use:
// what the generator ran, step by step.
type styleTruth struct {
	StepsTotal int `json:"steps_total"`
	Steps      []struct {
		Index             int      `json:"index"`
		Phase             string   `json:"phase"`
		Name              string   `json:"name"`
		ContextRequests   int      `json:"context_requests"`
		GenerationRequest int      `json:"generation_requests"`
		GraphLaunches     int      `json:"cuda_graph_launches"`
		MarlinCalls       int      `json:"marlin_calls"` // marlin.mul calls
		Collectives       []string `json:"collectives_per_rank"`
	} `json:"steps"`
}

// styleObserved is the part of observed.json (measured from the raw
// trace by check_traces.py) the tests use: the Marlin kernels per step
// (a Marlin call launches two kernels where its rows do not fill a tile).
type styleObserved struct {
	Ranks map[string]struct {
		Steps []struct {
			MarlinKernels int `json:"marlin_kernels"`
		} `json:"steps"`
	} `json:"ranks"`
}

// TestRealStyles: every real trace shape (with_stack execute_model only,
// execute_model annotations, the newer vLLM annotation families with
// mixed steps, ProfilerStep alone and beside vLLM's annotation, no marks
// eager and CUDA graph, INT4 MoE) is cut into exactly the steps its
// generator ran, each with the truth's phase (prefill, decode, mixed,
// empty), CUDA-graph launches and collectives, and the Marlin kernels
// that check_traces.py counted in the raw trace.
func TestRealStyles(t *testing.T) {
	want := map[string]string{
		"withstack_execute_model": SourceExecuteModel, "annotated_execute_model": SourceExecuteModel,
		"vllm_new_annotations": SourceVLLM, "profilerstep": SourceProfilerStep, "profilerstep_vllm": SourceVLLM,
		"bare_eager": SourceInferred, "bare_cudagraph": SourceInferred, "moe": SourceInferred,
		"moe_sync": SourceInferred,
	}
	for _, style := range sampletraces.RealStyles() {
		t.Run(style, func(t *testing.T) {
			dir := testkit.Real(t, style)
			var truth styleTruth
			if err := sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth); err != nil {
				t.Fatal(err)
			}
			var obs styleObserved
			if err := sampletraces.ReadJSON(filepath.Join(dir, "observed.json"), &obs); err != nil {
				t.Fatal(err)
			}
			marlin := obs.Ranks["0"].Steps
			_, r := analyzePath(t, dir)
			rk := r.Ranks[0]
			if rk.StepSource != want[style] || len(rk.Steps) != truth.StepsTotal || len(truth.Steps) != truth.StepsTotal || len(marlin) != truth.StepsTotal {
				t.Fatalf("%s with %d steps (%s); truth %d steps from %s", rk.StepSource, len(rk.Steps), rk.StepEvidence, truth.StepsTotal, want[style])
			}
			for i, ts := range truth.Steps {
				s := rk.Steps[i]
				comm := 0
				for id, b := range s.Buckets {
					if bk, ok := BucketByID(id); ok && bk.Group == GroupCommunication {
						comm += b.Count
					}
				}
				if s.Phase != ts.Phase || s.Buckets[MarlinGEMM].Count != marlin[i].MarlinKernels || s.GraphLaunches != ts.GraphLaunches || comm != len(ts.Collectives) {
					t.Errorf("step %d: %s (%s), %d Marlin kernels, %d graph launches, %d collectives; truth %s, %d (observed), %d, %d",
						i, s.Phase, s.PhaseSource, s.Buckets[MarlinGEMM].Count, s.GraphLaunches, comm,
						ts.Phase, marlin[i].MarlinKernels, ts.GraphLaunches, len(ts.Collectives))
				}
				if s.Buckets[MarlinGEMM].Count < ts.MarlinCalls {
					t.Errorf("step %d: %d Marlin kernels for %d Marlin calls", i, s.Buckets[MarlinGEMM].Count, ts.MarlinCalls)
				}
				if rk.StepSource == SourceVLLM && (s.Name != ts.Name || s.Batch != ts.ContextRequests+ts.GenerationRequest) {
					t.Errorf("step %d: %q batch %d; truth %q, %d requests", i, s.Name, s.Batch, ts.Name, ts.ContextRequests+ts.GenerationRequest)
				}
			}
			if h := r.Headline; h == nil || h.Problem != "" || h.Phase != PhaseDecode {
				t.Errorf("headline %+v", h)
			}
			if strings.HasPrefix(style, "bare") || style == "moe" {
				if !strings.Contains(rk.StepEvidence, "device-to-host copy") {
					t.Errorf("evidence %q does not name the copy to the host", rk.StepEvidence)
				}
			}
		})
	}
}
