package render

import (
	"fmt"
	"math"

	"kinetoscope/analyze/diff"
)

// diffRooflineBlocks compares each kernel class's achieved rates and share
// of its roof, before and after, and the decode step's speed of light;
// nothing when neither run has roofline rows.
func diffRooflineBlocks(d *diff.Diff) []block {
	if len(d.Roofline) == 0 {
		return nil
	}
	t := &table{
		Header: []string{"phase", "class", "base ms/step", "head ms/step", "base with shapes", "head with shapes", "base TB/s", "head TB/s",
			"base TFLOP/s", "head TFLOP/s", "base % of peak", "head % of peak", "change"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, true, true, true},
	}
	for _, r := range d.Roofline {
		change := "-"
		if r.Base.Bound != "" && r.Head.Bound != "" {
			change = fmt.Sprintf("%+.1f pts", r.PeakShareDelta)
		}
		t.Rows = append(t.Rows, []string{r.Phase, r.Label,
			roofSideMS(r.Base, r.Only == "head"), roofSideMS(r.Head, r.Only == "base"),
			roofSideShaped(r.Base, r.Only == "head"), roofSideShaped(r.Head, r.Only == "base"),
			roofSideRate(r.Base.TBPerS, 3, r.Only == "head"), roofSideRate(r.Head.TBPerS, 3, r.Only == "base"),
			roofSideRate(r.Base.TFLOPS, 2, r.Only == "head"), roofSideRate(r.Head.TFLOPS, 2, r.Only == "base"),
			roofSideShare(r.Base), roofSideShare(r.Head), change})
	}
	var uneven []string
	for _, r := range d.Roofline {
		if r.Only == "" && r.Base.ShapedShare > 0 && r.Head.ShapedShare > 0 && math.Abs(r.Base.ShapedShare-r.Head.ShapedShare) > 10 {
			uneven = append(uneven, fmt.Sprintf("%s %s: the rates are over %s of the class's time in the base and %s in the head: they describe different kernels.",
				r.Phase, r.Label, pct(r.Base.ShapedShare), pct(r.Head.ShapedShare)))
		}
	}
	lines := []string{"Achieved rates from the ops' shapes over the kernels with shapes, over all ranks of each run; % of peak: of the roof that bounds the class (memory or the dtype's tensor peak), each run against its own GPU's peak."}
	if s := d.SpeedOfLight; s != nil {
		lines = append(lines, fmt.Sprintf("Decode step speed of light (an estimate): %s -> %s ms, against a measured span of %s -> %s ms.",
			msFine(s.BaseEstimateUS), msFine(s.HeadEstimateUS), msFine(s.BaseSpanUS), msFine(s.HeadSpanUS)))
	}
	return []block{
		{Heading: "Roofline: efficiency before and after", Level: 2},
		{Lines: append(lines, uneven...)},
		{Table: t},
	}
}

// roofSideMS is a side's class time per step, "-" on the missing side.
func roofSideMS(s diff.RooflineSide, missing bool) string {
	if missing {
		return "-"
	}
	return msFine(s.USPerStep)
}

// roofSideShaped is the share of a side's class time with shapes.
func roofSideShaped(s diff.RooflineSide, missing bool) string {
	if missing {
		return "-"
	}
	return pct(s.ShapedShare)
}

// roofSideRate is a side's rate, "-" without shapes or on the missing side.
func roofSideRate(v float64, decimals int, missing bool) string {
	if missing || v == 0 {
		return "-"
	}
	return sig3(v, decimals)
}

// roofSideShare is a side's share of its roof, "-" without one.
func roofSideShare(s diff.RooflineSide) string {
	if s.Bound == "" {
		return "-"
	}
	return pct(s.PeakShare) + " " + s.Bound
}
