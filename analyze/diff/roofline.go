package diff

import (
	"slices"

	"kinetoscope/analyze"
)

// RooflineDiff compares one kernel class in one phase of the roofline
// (analyze.RooflineRow) between the runs: its achieved rates and the
// share of its roof, before and after. The roofline is a run's figure
// over all its ranks, whatever Options.Rank selects; each side is held
// against its own GPU's peak.
type RooflineDiff struct {
	Phase  string           `json:"phase"`
	Bucket analyze.BucketID `json:"bucket"`
	Label  string           `json:"label"`
	// Only is "base" or "head" when the row is in one run only.
	Only string       `json:"only,omitempty"`
	Base RooflineSide `json:"base"`
	Head RooflineSide `json:"head"`
	// PeakShareDelta is the head's share of its roof less the base's, in
	// percentage points; 0 unless both have one.
	PeakShareDelta float64 `json:"peak_share_delta"`
}

// RooflineSide is one run's figures of a roofline row.
type RooflineSide struct {
	// USPerStep is the class's kernel time per step; ShapedShare the
	// percent of it whose work the shapes give (the rates are over it).
	USPerStep   float64 `json:"us_per_step"`
	ShapedShare float64 `json:"shaped_share"`
	TFLOPS      float64 `json:"tflops"`
	TBPerS      float64 `json:"tb_per_s"`
	Intensity   float64 `json:"intensity"`
	Bound       string  `json:"bound,omitempty"`
	PeakShare   float64 `json:"peak_share"`
}

// SpeedOfLightDiff compares the decode step's speed of light: each side's
// estimate and measured span per step.
type SpeedOfLightDiff struct {
	BaseEstimateUS float64 `json:"base_estimate_us"`
	HeadEstimateUS float64 `json:"head_estimate_us"`
	BaseSpanUS     float64 `json:"base_span_us"`
	HeadSpanUS     float64 `json:"head_span_us"`
}

// compareRoofline pairs the roofline rows of the compared phase ("all":
// every phase) by phase and class, base's order first, then the head's
// rows left unpaired; nil when neither run has any.
func compareRoofline(base, head *analyze.Report, phase string) []RooflineDiff {
	b, h := rooflineRows(base, phase), rooflineRows(head, phase)
	var out []RooflineDiff
	paired := make([]bool, len(h))
	for i := range b {
		j := slices.IndexFunc(h, func(r analyze.RooflineRow) bool { return r.Phase == b[i].Phase && r.Bucket == b[i].Bucket })
		d := RooflineDiff{Phase: b[i].Phase, Bucket: b[i].Bucket, Label: b[i].Label, Base: rooflineSide(&b[i]), Only: "base"}
		if j >= 0 {
			paired[j] = true
			d.Only, d.Head = "", rooflineSide(&h[j])
			if d.Base.Bound != "" && d.Head.Bound != "" {
				d.PeakShareDelta = d.Head.PeakShare - d.Base.PeakShare
			}
		}
		out = append(out, d)
	}
	for j := range h {
		if !paired[j] {
			out = append(out, RooflineDiff{Phase: h[j].Phase, Bucket: h[j].Bucket, Label: h[j].Label, Only: "head", Head: rooflineSide(&h[j])})
		}
	}
	return out
}

// rooflineRows returns a report's roofline rows of phase ("all": every
// phase).
func rooflineRows(r *analyze.Report, phase string) []analyze.RooflineRow {
	if r.Roofline == nil {
		return nil
	}
	var rows []analyze.RooflineRow
	for _, row := range r.Roofline.Rows {
		if phase == phaseAll || row.Phase == phase {
			rows = append(rows, row)
		}
	}
	return rows
}

// rooflineSide is one row's figures.
func rooflineSide(r *analyze.RooflineRow) RooflineSide {
	s := RooflineSide{TFLOPS: r.TFLOPS, TBPerS: r.TBPerS, Intensity: r.Intensity, Bound: r.Bound, PeakShare: r.PeakShare}
	if r.RankSteps > 0 {
		s.USPerStep = r.KernelUS / float64(r.RankSteps)
	}
	if r.KernelUS > 0 {
		s.ShapedShare = 100 * r.ShapedUS / r.KernelUS
	}
	return s
}

// compareSpeedOfLight compares the decode step's speed of light; nil
// unless both runs have one.
func compareSpeedOfLight(base, head *analyze.Report) *SpeedOfLightDiff {
	if base.Roofline == nil || head.Roofline == nil || base.Roofline.SpeedOfLight == nil || head.Roofline.SpeedOfLight == nil {
		return nil
	}
	b, h := base.Roofline.SpeedOfLight, head.Roofline.SpeedOfLight
	return &SpeedOfLightDiff{BaseEstimateUS: b.EstimateUS, HeadEstimateUS: h.EstimateUS, BaseSpanUS: b.MeasuredSpanUS, HeadSpanUS: h.MeasuredSpanUS}
}
