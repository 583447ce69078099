package analyze

import (
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// The "after the step's last GEMM" sampling phase is the LM head's: it
// holds on inference traces and not on training ones, where the optimizer
// runs after the backward pass's last GEMM.
func TestSamplingPhaseOnlyInInference(t *testing.T) {
	for _, tc := range []struct {
		trace    string
		sampling bool
	}{
		{"hta-diff-control-a100.json.gz", false},
		{"hta-diff-test-v100.json.gz", false},
		{"hta-sampled-rank-0.json.gz", false},
		{"tracelens-sglang-qwen3-8b-decode.json.gz", true},
	} {
		path := testkit.Public(t, tc.trace)
		set, err := ingest.Open(path, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Analyze(set, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var us float64
		for _, rk := range r.Ranks {
			for _, s := range rk.Steps {
				us += s.Buckets[Sampling].US
			}
		}
		if (us > 0) != tc.sampling {
			t.Errorf("%s: %.1f us in the sampling bucket, want sampling %v", tc.trace, us, tc.sampling)
		}
	}
}
