package render

import (
	"errors"
	"fmt"
	"strings"

	"gonum.org/v1/plot/vg"

	"kinetoscope/analyze"
)

// Breakdown draws the decode breakdown: one horizontal bar per bucket of ms
// per decode step (mean over ranks), communication first on a shaded band,
// each bar labelled with its ms and its share of decode kernel time. When
// no rank has decode steps it draws prefill, or every step.
func Breakdown(r *analyze.Report, f Format) ([]byte, error) {
	if r == nil || len(r.Ranks) == 0 {
		return nil, errors.New("breakdown chart: report has no ranks")
	}
	a := aggregatePhase(r)
	if a.Ranks == 0 || len(a.Rows) == 0 {
		return nil, noData("breakdown chart: no kernel time in any step")
	}
	title := fmt.Sprintf("Where %s time goes: ms per %s by bucket\n%s, %s; labels: ms/step · %% of %skernel time",
		phaseTitle(a.Phase), stepName(a.Phase), a.ranksText(r), a.stepsText(), phaseAdj(a.Phase))
	var hb hbars
	hb.ys, hb.names = breakdownRows(a.Rows)
	ys := hb.ys
	for i, row := range a.Rows {
		s := row.Share
		hb.bars = append(hb.bars, box{X0: 0, X1: s.USPerStep / 1000, Y0: ys[i] - 0.36, Y1: ys[i] + 0.36, Color: BucketColor(row.Bucket.ID)})
		hb.endLabel(ys[i], s.USPerStep, fmt.Sprintf("%s ms · %s", msFine(s.USPerStep), pct(s.ShareOfKernel)), rgb(hexText))
	}
	if band, ok := commBand(a.Rows, ys, hb.maxUS); ok {
		hb.bars = append(band, hb.bars...) // drawn first, behind
	}
	p := hb.plot(title, a.Phase, 16, chartWidth-70)
	p.Y.Min, p.Y.Max = ys[len(ys)-1]-0.7, ys[0]+0.7
	h := clampHeight(rowHeight*vg.Length(ys[0]+2) + marginTop + marginBot + 20)
	fg := &figure{plot: p, w: chartWidth, h: h, notes: []string{groupNote(a)}}
	return fg.encode(f)
}

// breakdownRows places the rows top-down with a gap between groups and
// returns their y positions and tick labels.
func breakdownRows(rows []bucketRow) ([]float64, []string) {
	ys := make([]float64, len(rows))
	names := make([]string, len(rows))
	gaps := 0.0
	for i := 1; i < len(rows); i++ {
		if rows[i].Bucket.Group != rows[i-1].Bucket.Group {
			gaps += 0.5
		}
	}
	y := float64(len(rows)-1) + gaps
	for i, row := range rows {
		if i > 0 && row.Bucket.Group != rows[i-1].Bucket.Group {
			y -= 0.5
		}
		ys[i], names[i] = y, row.Bucket.Label
		y--
	}
	return ys, names
}

// commBand is the shaded band behind the communication rows.
func commBand(rows []bucketRow, ys []float64, maxUS float64) (boxes, bool) {
	top, bottom, ok := 0.0, 0.0, false
	for i, row := range rows {
		if row.Bucket.Group != analyze.GroupCommunication {
			continue
		}
		if !ok {
			top, ok = ys[i]+0.5, true
		}
		bottom = ys[i] - 0.5
	}
	return boxes{{X0: 0, X1: maxUS / 1000 * 10, Y0: bottom, Y1: top, Color: rgb(hexBand)}}, ok
}

// roomFor returns the axis maximum that leaves extra points after the
// largest value v on an axis of width points.
func roomFor(v float64, extra, width vg.Length) float64 {
	frac := float64(extra / width)
	if frac > 0.6 {
		frac = 0.6
	}
	return v / (1 - frac)
}

// maxNameWidth is the widest tick label.
func maxNameWidth(names []string) vg.Length {
	var w vg.Length
	for _, n := range names {
		w = max(w, textWidth(n, tickSize))
	}
	return w
}

// groupNote gives each group's share of kernel time, naming the shaded band.
func groupNote(a aggregate) string {
	parts := make([]string, 0, len(a.GroupsPerStep))
	for _, g := range a.GroupsPerStep {
		parts = append(parts, fmt.Sprintf("%s %s ms (%s)", g.Group, ms(g.US), pct(ratioPct(g.US, a.KernelPerStep))))
	}
	shaded := "Shaded: communication. "
	if a.CommPerStepUS == 0 {
		shaded = "No communication kernels. "
	}
	return fmt.Sprintf("%sPer %s: %s of %s ms kernel time; step span %s ms.",
		shaded, stepName(a.Phase), strings.Join(parts, ", "), ms(a.KernelPerStep), ms(a.SpanPerStep))
}

// phaseTitle names a phase for titles: "decode", "prefill", "step".
func phaseTitle(phase string) string {
	if phase == "all" {
		return "step"
	}
	return phase
}

// stepName is what a step of the phase is called: "decode step",
// "prefill step" or "step".
func stepName(phase string) string {
	if phase == "all" {
		return "step"
	}
	return phase + " step"
}

// phaseAdj qualifies kernel time: "decode ", "prefill ", or "" for all
// steps.
func phaseAdj(phase string) string {
	if phase == "all" {
		return ""
	}
	return phase + " "
}
