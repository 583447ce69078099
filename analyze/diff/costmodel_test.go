package diff_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
)

// withSlope returns a copy of r whose decode cost model's fits all have
// slope us (and standard error se) against their first regressor.
func withSlope(r *analyze.Report, us, se float64) *analyze.Report {
	out := *r
	out.Ranks = slices.Clone(r.Ranks)
	rk := &out.Ranks[0]
	rk.CostModel = slices.Clone(rk.CostModel)
	for i := range rk.CostModel {
		cm := &rk.CostModel[i]
		cm.Fits = slices.Clone(cm.Fits)
		for j := range cm.Fits {
			cm.Fits[j].Slopes = slices.Clone(cm.Fits[j].Slopes)
			cm.Fits[j].Slopes[0].USPer, cm.Fits[j].Slopes[0].StdErrUS = us, se
		}
	}
	return &out
}

// TestCompareCostModels: the real sample with a varying decode batch
// against itself changes no slope; against a copy whose slopes moved the
// z-test says which moved beyond the two standard errors; against a run
// whose steps were not fitted, the diff says so; between two runs neither
// fitted there is nothing.
func TestCompareCostModels(t *testing.T) {
	r := analysePath(t, testkit.Real(t, "vllm_new_annotations"))
	unfitted := analysePath(t, testkit.Real(t, "bare_eager"))
	base := withSlope(r, 10, 1)
	tests := []struct {
		name       string
		base, head *analyze.Report
		note       string
		delta, z   float64
		changed    bool
	}{
		{"itself", r, r, "", 0, 0, false},
		{"slope doubled", base, withSlope(r, 20, 1), "", 10, 10 / math.Sqrt2, true},
		{"slope within noise", base, withSlope(r, 11, 1), "", 1, 1 / math.Sqrt2, false},
		{"head not fitted", r, unfitted, "the decode steps of one run only were fitted", 0, 0, false},
	}
	for _, tc := range tests {
		d, err := diff.Compare(tc.base, tc.head, diff.Options{})
		testkit.Must(t, err)
		cd := d.CostModel
		if cd == nil || cd.Phase != analyze.PhaseDecode || !strings.Contains(cd.Note, tc.note) {
			t.Fatalf("%s: cost model diff %+v, want a note with %q", tc.name, cd, tc.note)
		}
		if tc.note != "" {
			continue
		}
		cm := r.Ranks[0].CostModel[0]
		if len(cd.Fits) != len(cm.Fits) || !slices.Equal(cd.Regressors, []string{analyze.RegBatch}) {
			t.Fatalf("%s: %d fits against %v, want %d against batch", tc.name, len(cd.Fits), cd.Regressors, len(cm.Fits))
		}
		for i, f := range cd.Fits {
			s := f.Slopes[0]
			if f.Target != cm.Fits[i].Target || math.Abs(s.DeltaUSPer-tc.delta) > 1e-9 || math.Abs(s.Z-tc.z) > 1e-9 || s.Changed != tc.changed {
				t.Errorf("%s: %s: delta %g z %g changed %v, want %g %g %v", tc.name, f.Target, s.DeltaUSPer, s.Z, s.Changed, tc.delta, tc.z, tc.changed)
			}
		}
	}
	// The bf16 sweep fits against the context too, the Marlin sweep (one
	// context) against the tokens only: the tokens' slopes are compared,
	// the context named as the base's only.
	d, err := diff.Compare(analysePath(t, testkit.Real(t, "batch_sweep")), analysePath(t, testkit.Real(t, "marlin_sweep")), diff.Options{})
	testkit.Must(t, err)
	if cd := d.CostModel; cd == nil || !slices.Equal(cd.Regressors, []string{analyze.RegTokens}) || !slices.Equal(cd.Unshared, []string{"context (base only)"}) {
		t.Errorf("batch_sweep vs marlin_sweep: %+v, want tokens compared, context (base only)", cd)
	}
	if d, err := diff.Compare(unfitted, unfitted, diff.Options{}); err != nil || d.CostModel != nil {
		t.Errorf("two runs without a fit: %+v, %v; want no cost model diff", d.CostModel, err)
	}
}
