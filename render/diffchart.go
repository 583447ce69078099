package render

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot/vg"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// maxDiffBuckets is how many buckets the diff chart shows, largest change
// first.
const maxDiffBuckets = 12

// Diff draws base against head per bucket: two bars per bucket (base pale
// above, head below) of ms per step, each pair labelled with the delta and
// whether the noise test found it significant.
func Diff(d *diff.Diff, f Format) ([]byte, error) {
	if d == nil || len(d.BucketOrder) == 0 {
		return nil, noData("diff chart: no bucket in either run")
	}
	ids := d.BucketOrder[:min(len(d.BucketOrder), maxDiffBuckets)]
	var hb hbars
	for i, id := range ids {
		b := d.Buckets[id]
		y := float64(len(ids) - 1 - i)
		c := BucketColor(id)
		hb.bars = append(hb.bars,
			box{X0: 0, X1: b.BaseUSPerStep / 1000, Y0: y + 0.02, Y1: y + 0.36, Color: tint(c, 0.6)},
			box{X0: 0, X1: b.HeadUSPerStep / 1000, Y0: y - 0.36, Y1: y - 0.02, Color: c})
		t, col := deltaLabel(b)
		hb.endLabel(y, max(b.BaseUSPerStep, b.HeadUSPerStep), t, col)
		name := b.Label
		if name == "" {
			name = bucketLabel(id)
		}
		hb.row(y, name)
	}
	p := hb.plot(diffTitle(d), d.Phase, 10, chartWidth-legendWidth-60)
	p.Y.Min, p.Y.Max = -0.6, float64(len(ids))-0.4
	legend := []legendEntry{
		{Label: "base (pale, upper)", Color: tint(rgb(0x555555), 0.6)},
		{Label: "head (lower)", Color: rgb(0x555555)},
		{Label: "slower, significant", Color: rgb(hexUp), Line: true},
		{Label: "faster, significant", Color: rgb(hexDown), Line: true},
		{Label: "within noise", Color: rgb(hexMuted), Line: true},
	}
	h := max(clampHeight(rowHeight*1.6*vg.Length(len(ids))+marginTop+marginBot+30), legendHeight(len(legend)))
	fg := &figure{plot: p, legend: legend, w: chartWidth, h: h, notes: diffNotes(d, len(ids))}
	return fg.encode(f)
}

// deltaLabel is a bucket's change and its colour: red when significantly
// slower, blue when significantly faster, grey otherwise.
func deltaLabel(b diff.BucketDiff) (string, color.Color) {
	t := signedTime(b.DeltaUS)
	if b.BaseUSPerStep > 0 {
		t += fmt.Sprintf(" (%+.1f%%)", b.DeltaPct)
	} else {
		t += " (new)"
	}
	switch {
	case !b.Significant:
		return t + " · " + b.Verdict, rgb(hexMuted)
	case b.DeltaUS > 0:
		return t, rgb(hexUp)
	}
	return t, rgb(hexDown)
}

// diffTitle names both runs and the step change.
func diffTitle(d *diff.Diff) string {
	return fmt.Sprintf("Base vs head: ms per %s by bucket\nbase %s (%s) · head %s (%s) · span %s → %s ms (%+.1f%%)",
		stepName(d.Phase), shorten(filepath.Base(d.Base.Path), 36), plural(d.Base.Steps, "step"), shorten(filepath.Base(d.Head.Path), 36),
		plural(d.Head.Steps, "step"), ms(d.Step.BaseUS), ms(d.Step.HeadUS), d.Step.DeltaPct)
}

// diffNotes states the noise test and what was left out.
func diffNotes(d *diff.Diff, shown int) []string {
	n := []string{fmt.Sprintf("Significant: the %.0f%% %s excludes zero and the change exceeds %s us and %.1f%%.",
		d.Noise.Confidence, d.Noise.Name, usStr(d.Noise.FloorUS), d.Noise.FloorPct)}
	if rest := len(d.BucketOrder) - shown; rest > 0 {
		n = append(n, fmt.Sprintf("%s with smaller changes not shown.", plural(rest, "bucket")))
	}
	return n
}

// bucketLabel is the label of a bucket id from the package's list.
func bucketLabel(id analyze.BucketID) string { return bucketInfo(nil, id).Label }
