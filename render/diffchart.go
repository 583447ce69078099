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

// diffTitle names both runs and the step change, one run a line, each
// line fitted to the width of the plot (the title is centred over it, so
// a wider line loses both its ends).
func diffTitle(d *diff.Diff) string {
	w := chartWidth - legendWidth - 20
	b, h := []rune(filepath.Base(d.Base.Path)), []rune(filepath.Base(d.Head.Path))
	pre := commonPrefix(b, h)
	suf := commonPrefix(reversed(b[pre:]), reversed(h[pre:]))
	base := fitLine(w, "base ", splitName(b, pre, suf),
		fmt.Sprintf(" (%s) · span %s ms", plural(d.Base.Steps, "step"), ms(d.Step.BaseUS)))
	head := fitLine(w, "head ", splitName(h, pre, suf),
		fmt.Sprintf(" (%s) · span %s ms (%+.1f%%)", plural(d.Head.Steps, "step"), ms(d.Step.HeadUS), d.Step.DeltaPct))
	return fmt.Sprintf("Base vs head: ms per %s by bucket\n%s\n%s", stepName(d.Phase), base, head)
}

// runName is a run's name in three parts: what it shares with the other
// run's name at the start and at the end, and what tells them apart.
type runName struct{ pre, mid, suf []rune }

func splitName(r []rune, pre, suf int) runName {
	return runName{pre: r[:pre], mid: r[pre : len(r)-suf], suf: r[len(r)-suf:]}
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []rune) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func reversed(r []rune) []rune {
	out := make([]rune, len(r))
	for i, c := range r {
		out[len(r)-1-i] = c
	}
	return out
}

// Fewest runes fitLine keeps of a name's parts.
const (
	minSharedStart = 4  // of the start both names share
	minSharedEnd   = 0  // of the end both share
	minTitleName   = 12 // of what tells them apart
)

// fitLine returns pre + the run's name + post, fitted to width w in the
// title font: the name is shortened first in what both runs' names share
// at the start, then at the end (runs of one campaign differ in the
// middle or at the end of long names), and last in its middle.
func fitLine(w vg.Length, pre string, n runName, post string) string {
	fits := func(name string) bool { return textWidth(pre+name+post, titleSize) <= w }
	keep := func(start, end int, mid string) string {
		s := string(n.pre[:start])
		if start < len(n.pre) {
			s += "…"
		}
		s += mid
		if end < len(n.suf) {
			s += "…"
		}
		return s + string(n.suf[len(n.suf)-end:])
	}
	mid := string(n.mid)
	start, end := len(n.pre), len(n.suf)
	for ; start >= min(minSharedStart, len(n.pre)); start-- {
		if s := keep(start, end, mid); fits(s) {
			return pre + s + post
		}
	}
	start = min(minSharedStart, len(n.pre))
	for ; end >= min(minSharedEnd, len(n.suf)); end-- {
		if s := keep(start, end, mid); fits(s) {
			return pre + s + post
		}
	}
	end = min(minSharedEnd, len(n.suf))
	for m := len(n.mid); m > minTitleName; m-- {
		if s := keep(start, end, shortenMiddle(mid, m)); fits(s) {
			return pre + s + post
		}
	}
	return pre + keep(start, end, shortenMiddle(mid, minTitleName)) + post
}

// shortenMiddle cuts s to n runes, an ellipsis in the middle standing for
// what was left out.
func shortenMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
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
