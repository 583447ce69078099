package analyze

import (
	"path/filepath"
	"regexp"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// reNotGEMM names kernels that are never GEMMs whatever library they come
// from (fbgemm's permutes, quantizers and embedding tables matched the
// GEMM rule through "fbgemm" once: 57% of hta-sampled-rank-0's "GEMM").
// cutlass's NoPermute template argument (a real implicit-GEMM convolution)
// is not a permute.
var reNotGEMM = regexp.MustCompile(`(?i)embedding|(^|[^o])permute|quantiz|copy|fill`)

// TestNoFalseGEMM lists, over every public and sample trace, the kernels in
// the GEMM bucket whose names say embedding, permute, quantize, copy or
// fill, and expects none.
func TestNoFalseGEMM(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sampletraces.RealAll() {
		paths = append(paths, testkit.Real(t, v))
	}
	for _, p := range paths {
		set, err := ingest.Open(p, ingest.Options{})
		if err != nil || len(set.Traces) == 0 {
			continue // CPU-only traces: nothing to classify
		}
		r, err := Analyze(set, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rk := range r.Ranks {
			for _, k := range rk.TopKernels[GEMM] {
				if reNotGEMM.MatchString(k.Name) {
					t.Errorf("%s rank %d: %q (%.0f us) classified GEMM", filepath.Base(p), rk.Rank, k.Name, k.US)
				}
			}
		}
	}
}
