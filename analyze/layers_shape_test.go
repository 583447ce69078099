package analyze

import (
	"fmt"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// The GEMM slots of the sweeps' layer folds carry their M×N×K from the
// ops' shapes: every GEMM and Marlin slot has one, its N×K is a shape the
// microbenchmark timed (the model's projections) and its M a batch the
// run's truth.json ran, or the prefill's tokens; no other slot has one.
func TestLayerSlotShapes(t *testing.T) {
	for _, name := range sampletraces.RealSweeps() {
		dir := testkit.Real(t, name)
		bench := readMicrobench(t, dir)
		nk, ms := map[string]bool{}, map[int64]bool{}
		for _, b := range bench {
			if b.Kind != "decode_attention" {
				nk[fmt.Sprintf("%d×%d", b.N, b.K)] = true
				ms[b.M] = true
			}
		}
		_, r := analyzePath(t, dir)
		shaped := 0
		for _, lf := range r.Ranks[0].Layers {
			for _, s := range lf.Slots {
				gemm := s.Bucket == GEMM || s.Bucket == MarlinGEMM
				if !gemm {
					if s.Shape != "" {
						t.Errorf("%s %s slot %s (%s) has a shape %q", name, lf.Phase, s.Label, s.Name, s.Shape)
					}
					continue
				}
				m, rest, ok := strings.Cut(s.Shape, "×")
				if !ok || !nk[rest] {
					t.Errorf("%s %s slot %s: shape %q, not a microbenchmarked N×K", name, lf.Phase, s.Label, s.Shape)
					continue
				}
				lo, hi, _ := strings.Cut(m, "-")
				for _, v := range []string{lo, hi} {
					var n int64
					if _, err := fmt.Sscan(v, &n); v != "" && (err != nil || !ms[n]) {
						t.Errorf("%s %s slot %s: M %q is no batch the sweep ran", name, lf.Phase, s.Label, v)
					}
				}
				shaped++
			}
		}
		if shaped == 0 {
			t.Errorf("%s: no GEMM slot with a shape", name)
		}
	}
}
