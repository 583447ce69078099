package diff_test

import (
	"math"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
)

// The diff pairs the runs' roofline rows by phase and class with each
// side's figures as its report has them, keeps a row of one run only on
// its side, and compares the decode step's speed of light: eager against
// cudagraph (graph-replayed decode) and batch_sweep against marlin_sweep
// (Marlin GEMMs in the head only).
func TestCompareRoofline(t *testing.T) {
	for _, tc := range []struct{ base, head string }{{"eager", "cudagraph"}, {"batch_sweep", "marlin_sweep"}} {
		base, head := reports.Of(t, testkit.Real(t, tc.base)), reports.Of(t, testkit.Real(t, tc.head))
		d, err := diff.Compare(base, head, diff.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Roofline) == 0 || d.SpeedOfLight == nil {
			t.Fatalf("%s vs %s: no roofline diff", tc.base, tc.head)
		}
		for _, r := range d.Roofline {
			b, h := rooflineRow(base, r), rooflineRow(head, r)
			switch {
			case r.Phase != analyze.PhaseDecode:
				t.Errorf("%s vs %s: a %s row in a decode diff", tc.base, tc.head, r.Phase)
			case (b == nil) != (r.Only == "head") || (h == nil) != (r.Only == "base"):
				t.Errorf("%s vs %s: %s %s only %q, in base %v, in head %v", tc.base, tc.head, r.Phase, r.Bucket, r.Only, b != nil, h != nil)
			case b != nil && (r.Base.TBPerS != b.TBPerS || r.Base.PeakShare != b.PeakShare || r.Base.Bound != b.Bound):
				t.Errorf("%s vs %s: base %s %+v, its report %+v", tc.base, tc.head, r.Bucket, r.Base, *b)
			case h != nil && (r.Head.TFLOPS != h.TFLOPS || math.Abs(r.Head.ShapedShare-100*h.ShapedUS/h.KernelUS) > 1e-9):
				t.Errorf("%s vs %s: head %s %+v, its report %+v", tc.base, tc.head, r.Bucket, r.Head, *h)
			case b != nil && h != nil && b.Bound != "" && h.Bound != "" && r.PeakShareDelta != h.PeakShare-b.PeakShare:
				t.Errorf("%s vs %s: %s change %g, want %g", tc.base, tc.head, r.Bucket, r.PeakShareDelta, h.PeakShare-b.PeakShare)
			}
		}
		if s := d.SpeedOfLight; s.BaseEstimateUS != base.Roofline.SpeedOfLight.EstimateUS || s.HeadSpanUS != head.Roofline.SpeedOfLight.MeasuredSpanUS {
			t.Errorf("%s vs %s: speed of light %+v", tc.base, tc.head, s)
		}
	}
}

// rooflineRow finds the report's row of a diff row, nil when it has none.
func rooflineRow(r *analyze.Report, d diff.RooflineDiff) *analyze.RooflineRow {
	for i, row := range r.Roofline.Rows {
		if row.Phase == d.Phase && row.Bucket == d.Bucket {
			return &r.Roofline.Rows[i]
		}
	}
	return nil
}
