package render

import (
	"errors"
	"fmt"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"kinetoscope/analyze"
)

// Steps draws one rank's steps as stacked bars of kernel time by bucket
// (x = step index), prefill steps on a shaded band and each step's span as a
// black tick, so that outliers and the prefill/decode difference show. The
// y-axis fits the rank's shown phase (decode when there is one): steps of
// other phases that would be more than offScaleRatio times its tallest are
// cut at the top and labelled with their span, so that a warm-up prefill
// does not flatten the decode bars. rank is a rank number, or FirstRank.
func Steps(r *analyze.Report, rank int, f Format) ([]byte, error) {
	rk, err := findRank(r, rank)
	if err != nil {
		return nil, fmt.Errorf("steps chart: %w", err)
	}
	if len(rk.Steps) == 0 {
		return nil, fmt.Errorf("steps chart: rank %s has no steps", rankID(rk.Rank))
	}
	order := stackOrder(r)
	half := 0.4 // half a bar's width, in steps
	if len(rk.Steps) > 150 {
		half = 0.5 // bars touch: gaps of a pixel or two would stripe
	}
	sc := stepScale(rk)
	top := sc.ymax * 1.05
	var bars, bands boxes
	var spans spanTicks
	var cut labels
	var breaks cutMarks
	present := map[analyze.BucketID]bool{}
	phases := map[string]int{}
	for _, s := range rk.Steps {
		x := float64(s.Index)
		phases[s.Phase]++
		if s.Phase == "prefill" {
			bands = append(bands, box{X0: x - 0.5, X1: x + 0.5, Y0: 0, Y1: sc.ymax * 1.04, Color: rgb(hexBand)})
		}
		y := 0.0
		for _, id := range order {
			b, ok := s.Buckets[id]
			if !ok || b.US <= 0 {
				continue
			}
			present[id] = true
			if y < top {
				bars = append(bars, box{X0: x - half, X1: x + half, Y0: y, Y1: min(y+b.US/1000, top), Color: BucketColor(id)})
			}
			y += b.US / 1000
		}
		if v := max(s.SpanUS/1000, y); v > top {
			breaks = append(breaks, cutMark{X0: x - half, X1: x + half, Y: top})
			if len(cut) < maxCutLabels {
				cut = append(cut, label{X: x + half, Y: top, DX: 3, DY: -4, Text: "span " + ms(s.SpanUS) + " ms",
					Style: textStyle(noteSize, rgb(hexText), draw.XLeft, draw.YTop)})
			}
			continue
		}
		spans = append(spans, spanTick{x, s.SpanUS / 1000})
	}
	title := fmt.Sprintf("Kernel time per step by bucket, rank %s\n%s", rankID(rk.Rank), phaseCounts(phases))
	p := newPlot(title, "step index", "ms per step (kernel time, stacked)")
	p.Add(bands, bars, breaks, spans, cut)
	p.X.Min, p.X.Max = float64(rk.Steps[0].Index)-0.6, float64(rk.Steps[len(rk.Steps)-1].Index)+0.6
	p.Y.Min, p.Y.Max = 0, top
	p.X.Tick.Marker = niceTicks{Want: 10, Integer: true}
	p.Y.Tick.Marker = niceTicks{}
	legend := bucketLegend(r, order, present)
	legend = append(legend, legendEntry{Label: "step span", Color: rgb(0x000000), Line: true})
	if phases["prefill"] > 0 {
		legend = append(legend, legendEntry{Label: "prefill (shaded)", Color: rgb(hexBand), Band: true})
	}
	notes := []string{slowestNote(rk)}
	if sc.offScale > 0 {
		notes = append(notes, fmt.Sprintf("The y-axis fits the %s steps: off it, cut at the top and labelled with the span, %s (up to %s ms).",
			sc.phase, plural(sc.offScale, "other step"), ms(sc.tallest*1000)))
	}
	fg := &figure{plot: p, legend: legend, w: chartWidth, h: 360, notes: notes}
	fg.h = max(fg.h, legendHeight(len(legend)))
	return fg.encode(f)
}

// offScaleRatio is how many times the shown phase's tallest step another
// step may be before the y-axis leaves it off the scale.
const offScaleRatio = 2

// maxCutLabels bounds the labels of steps cut at the top.
const maxCutLabels = 6

// scale is the y-axis of the steps chart: its top (ms) and what it leaves
// off.
type scale struct {
	ymax     float64
	phase    string  // the phase it fits; "" when it fits every step
	offScale int     // steps taller than the axis
	tallest  float64 // ms, the tallest step
}

// stepScale fits the y-axis to the shown phase's steps (rankPhase), span
// and kernel time, when a step of another phase is more than
// offScaleRatio times taller; else to every step.
func stepScale(rk *analyze.Rank) scale {
	shown := rankPhase(rk).Name
	height := func(s *analyze.Step) float64 { return max(s.SpanUS, s.KernelUS) / 1000 }
	var all, fit float64
	for i := range rk.Steps {
		h := height(&rk.Steps[i])
		all = max(all, h)
		if rk.Steps[i].Phase == shown {
			fit = max(fit, h)
		}
	}
	sc := scale{ymax: max(all, 1e-3), tallest: all}
	if shown == "all" || fit <= 0 || all <= offScaleRatio*fit {
		return sc
	}
	sc.ymax, sc.phase = fit, shown
	for i := range rk.Steps {
		if height(&rk.Steps[i]) > fit*1.05 {
			sc.offScale++
		}
	}
	return sc
}

// FirstRank, given as the rank to Steps, TimelineStep and
// driver.ChartRequest, selects the report's first rank, whatever its number.
// It is a selection, not a rank number: the -1 that ingest writes for a
// trace that does not state its rank is another thing, and a rank numbered
// so is reached as FirstRank only where it comes first. Every negative
// number selects the first rank as FirstRank does.
const FirstRank = -1

// SlowestStep, given as the step to TimelineStep and driver.ChartRequest,
// selects the slowest step of the rank's shown phase (the one the steps
// chart names). Every negative number selects it as SlowestStep does.
const SlowestStep = -1

// findRank returns the rank with number rank, or the first for FirstRank.
func findRank(r *analyze.Report, rank int) (*analyze.Rank, error) {
	if r == nil || len(r.Ranks) == 0 {
		return nil, errors.New("report has no ranks")
	}
	if rank < 0 { // FirstRank
		return &r.Ranks[0], nil
	}
	ids := make([]string, 0, len(r.Ranks))
	for i := range r.Ranks {
		if r.Ranks[i].Rank == rank {
			return &r.Ranks[i], nil
		}
		ids = append(ids, rankID(r.Ranks[i].Rank))
	}
	return nil, fmt.Errorf("no rank %d (ranks: %v)", rank, ids)
}

// stackOrder is the bucket order of stacks and legends: the breakdown's
// order (communication first, then by time), then every other bucket.
func stackOrder(r *analyze.Report) []analyze.BucketID {
	a := aggregatePhase(r)
	seen := map[analyze.BucketID]bool{}
	var out []analyze.BucketID
	for _, row := range a.Rows {
		out = append(out, row.Bucket.ID)
		seen[row.Bucket.ID] = true
	}
	bs := r.Buckets
	if len(bs) == 0 {
		bs = analyze.Buckets()
	}
	for _, b := range bs {
		if !seen[b.ID] {
			out = append(out, b.ID)
			seen[b.ID] = true
		}
	}
	return out
}

// bucketLegend lists the present buckets in order.
func bucketLegend(r *analyze.Report, order []analyze.BucketID, present map[analyze.BucketID]bool) []legendEntry {
	var out []legendEntry
	for _, id := range order {
		if present[id] {
			out = append(out, legendEntry{Label: bucketInfo(r.Buckets, id).Label, Color: BucketColor(id)})
		}
	}
	return out
}

// legendHeight is the chart height a legend of n entries needs.
func legendHeight(n int) vg.Length {
	return clampHeight(vg.Length(n)*17 + marginTop + 40)
}

// phaseCounts says how many steps of each phase, e.g. "1 prefill step,
// 32 decode steps".
func phaseCounts(phases map[string]int) string {
	names := make([]string, 0, len(phases))
	for n := range phases {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += plural(phases[n], n+" step")
	}
	return s
}

// slowestNote names the step with the longest span in the largest phase.
func slowestNote(rk *analyze.Rank) string {
	slow, pv := slowestStep(rk)
	if slow == nil {
		return ""
	}
	ref := pv.Phase.SpanP50US
	if ref == 0 {
		ref = pv.Phase.SpanMeanUS
	}
	return fmt.Sprintf("Slowest %s: #%d, span %s ms (%.1fx the %s span of %s ms). Bars: kernel time; ticks: span (first kernel start to last kernel end).",
		stepName(pv.Name), slow.Index, ms(slow.SpanUS), slow.SpanUS/max(ref, 1e-9), spanRefName(pv.Phase), ms(ref))
}

// spanRefName says which span statistic slowestNote compares with.
func spanRefName(p analyze.PhaseSummary) string {
	if p.SpanP50US == 0 {
		return "mean"
	}
	return "median"
}

// spanTick is a step's span, drawn as a short black line.
type spanTick struct{ X, Y float64 }

// spanTicks is a plotter of span ticks.
type spanTicks []spanTick

// Plot implements plot.Plotter.
func (ts spanTicks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: rgb(0x000000), Width: 1.2}
	for _, t := range ts {
		c.StrokeLine2(ls, trX(t.X-0.45), trY(t.Y), trX(t.X+0.45), trY(t.Y))
	}
}

// maxOf is the largest Y.
func maxOf(ts spanTicks) float64 {
	m := 0.0
	for _, t := range ts {
		m = max(m, t.Y)
	}
	return m
}

// cutMark is the break drawn across a bar cut at the top of the axis: two
// white slanted strokes just below Y.
type cutMark struct{ X0, X1, Y float64 }

// cutMarks is a plotter of cut marks.
type cutMarks []cutMark

// Plot implements plot.Plotter.
func (ms cutMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: rgb(0xFFFFFF), Width: 2}
	for _, m := range ms {
		x0, x1, y := trX(m.X0)-1, trX(m.X1)+1, trY(m.Y)
		for _, d := range []vg.Length{10, 16} {
			c.StrokeLine2(ls, x0, y-d-3, x1, y-d+3)
		}
	}
}
