package diff_test

import (
	"math"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
)

// TestCompareRealBandwidth diffs the real eager run (NVLink) with
// p2p_disabled (host memory) and with cudagraph: every row is paired by
// phase, kind and size with the figures of each run's report, the 4 MiB
// prefill AllReduce loses more than 60% of its bus bandwidth through host
// memory, and the graph-captured decode AllReduces say they have no size.
func TestCompareRealBandwidth(t *testing.T) {
	eager := analysePath(t, testkit.Real(t, "eager"))
	cases := []struct {
		head    string
		phase   string
		check   func(d diff.BandwidthDiff) bool
		explain string
	}{
		{"p2p_disabled", "all", func(d diff.BandwidthDiff) bool {
			return d.Phase != analyze.PhasePrefill || d.Bucket != analyze.AllReduce || d.DeltaPct < -60
		}, "4 MiB prefill AllReduce loses over 60% through host memory"},
		{"cudagraph", "decode", func(d diff.BandwidthDiff) bool {
			return d.Bucket != analyze.AllReduce || (d.HeadNote == analyze.NoSizes && d.HeadBusBW == 0 && d.DeltaPct == 0 && d.BaseBusBW > 0)
		}, "decode AllReduce: head has no message sizes, no change given"},
	}
	for _, tc := range cases {
		head := analysePath(t, testkit.Real(t, tc.head))
		d, err := diff.Compare(eager, head, diff.Options{Phase: tc.phase})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, r := range eager.Bandwidth.Rows {
			if tc.phase == "all" || r.Phase == tc.phase {
				want++
			}
		}
		if len(d.Bandwidth) != want {
			t.Errorf("%s: %d bandwidth rows, base has %d", tc.head, len(d.Bandwidth), want)
		}
		for _, b := range d.Bandwidth {
			t.Logf("eager -> %s: %s %s %s: %.2f -> %.2f GB/s (%+.1f%%) %s", tc.head, b.Phase, b.Label, analyze.FormatBytes(b.Bytes), b.BaseBusBW, b.HeadBusBW, b.DeltaPct, b.HeadNote)
			hb := b
			if b.HeadNote == analyze.NoSizes {
				hb.Bytes = 0 // paired with the base's row of the same kind
			}
			br, hr := findRow(eager, b), findRow(head, hb)
			if b.Only != "" || br == nil || hr == nil || br.BusBW != b.BaseBusBW || hr.BusBW != b.HeadBusBW {
				t.Errorf("%s: %+v does not pair the reports' rows %+v, %+v", tc.head, b, br, hr)
			}
			if br != nil && hr != nil && br.BusBW > 0 && hr.BusBW > 0 && math.Abs(b.DeltaPct-100*(hr.BusBW/br.BusBW-1)) > 1e-9 {
				t.Errorf("%s: delta %.3f%%", tc.head, b.DeltaPct)
			}
			if !tc.check(b) {
				t.Errorf("%s: %+v; want %s", tc.head, b, tc.explain)
			}
		}
	}
}

// findRow returns the report's row that d pairs, or nil.
func findRow(r *analyze.Report, d diff.BandwidthDiff) *analyze.BandwidthRow {
	for i, row := range r.Bandwidth.Rows {
		if row.Phase == d.Phase && row.Bucket == d.Bucket && row.GroupSize == d.GroupSize && row.Bytes == d.Bytes {
			return &r.Bandwidth.Rows[i]
		}
	}
	return nil
}

// TestCompareBandwidthOneSide: rows in one run only are listed as such.
func TestCompareBandwidthOneSide(t *testing.T) {
	row := analyze.BandwidthRow{Phase: "decode", Bucket: analyze.AllGather, Label: "AllGather", GroupSize: 8, Bytes: 1 << 20, BusBW: 12, Basis: analyze.BasisTransfer}
	base := analysePath(t, testkit.Real(t, "eager"))
	head := *base
	head.Bandwidth = &analyze.Bandwidth{Rows: []analyze.BandwidthRow{row}}
	d, err := diff.Compare(base, &head, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	only := map[string]int{}
	for _, b := range d.Bandwidth {
		only[b.Only]++
	}
	if only["head"] != 1 || only["base"] != 2 || only[""] != 0 {
		t.Errorf("one-side rows: %v in %+v", only, d.Bandwidth)
	}
}
