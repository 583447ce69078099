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
// black tick, so that outliers and the prefill/decode difference show. rank
// is a rank number, or FirstRank.
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
	var bars, bands boxes
	var spans spanTicks
	present := map[analyze.BucketID]bool{}
	phases := map[string]int{}
	for _, s := range rk.Steps {
		x := float64(s.Index)
		phases[s.Phase]++
		if s.Phase == "prefill" {
			bands = append(bands, box{X0: x - 0.5, X1: x + 0.5, Y0: 0, Y1: 0, Color: rgb(hexBand)})
		}
		y := 0.0
		for _, id := range order {
			b, ok := s.Buckets[id]
			if !ok || b.US <= 0 {
				continue
			}
			present[id] = true
			bars = append(bars, box{X0: x - half, X1: x + half, Y0: y, Y1: y + b.US/1000, Color: BucketColor(id)})
			y += b.US / 1000
		}
		spans = append(spans, spanTick{x, s.SpanUS / 1000})
	}
	ymax := max(maxOf(spans), 1e-3)
	for i := range bands {
		bands[i].Y1 = ymax * 1.04
	}
	title := fmt.Sprintf("Kernel time per step by bucket, rank %s\n%s", rankID(rk.Rank), phaseCounts(phases))
	p := newPlot(title, "step index", "ms per step (kernel time, stacked)")
	p.Add(bands, bars, spans)
	p.X.Min, p.X.Max = float64(rk.Steps[0].Index)-0.6, float64(rk.Steps[len(rk.Steps)-1].Index)+0.6
	p.Y.Min, p.Y.Max = 0, ymax*1.05
	p.X.Tick.Marker = niceTicks{Want: 10, Integer: true}
	p.Y.Tick.Marker = niceTicks{}
	legend := bucketLegend(r, order, present)
	legend = append(legend, legendEntry{Label: "step span", Color: rgb(0x000000), Line: true})
	if phases["prefill"] > 0 {
		legend = append(legend, legendEntry{Label: "prefill (shaded)", Color: rgb(hexBand), Band: true})
	}
	fg := &figure{plot: p, legend: legend, w: chartWidth, h: 360, notes: []string{slowestNote(rk)}}
	fg.h = max(fg.h, legendHeight(len(legend)))
	return fg.encode(f)
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
func spanRefName(p analyze.Phase) string {
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
