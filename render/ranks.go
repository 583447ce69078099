package render

import (
	"errors"
	"fmt"
	"sort"

	"gonum.org/v1/plot/vg"

	"kinetoscope/analyze"
)

// Ranks draws one horizontal bar per rank of kernel time per step in the
// shown phase (decode when there is any): compute and memory buckets in
// their colours, then communication split into transfer (solid) and wait
// (hatched) when the collectives were aligned across ranks. Without that
// split the communication buckets are drawn whole and the chart says why.
func Ranks(r *analyze.Report, f Format) ([]byte, error) {
	if r == nil || len(r.Ranks) == 0 {
		return nil, errors.New("ranks chart: report has no ranks")
	}
	a := aggregatePhase(r)
	order := stackOrder(r)
	present := map[analyze.BucketID]bool{}
	var hb hbars
	split := false
	shown := shownRanks(r, a.Phase)
	for row, i := range shown {
		rk := &r.Ranks[i]
		p, ok := phaseNamed(rk, a.Phase)
		if !ok {
			continue
		}
		y := float64(len(shown) - 1 - row)
		segs, end := rankSegments(p, r.Buckets, order, y, present)
		hb.bars = append(hb.bars, segs...)
		split = split || p.Comm != nil
		hb.endLabel(y, end, rankEndLabel(p, end), rgb(hexText))
		hb.row(y, rankTick(r, rk))
	}
	if len(hb.bars) == 0 {
		return nil, noData("ranks chart: no kernel time in any step")
	}
	title := fmt.Sprintf("Kernel time per %s by rank: compute next to communication\n%s per rank", stepName(a.Phase), a.stepsText())
	p := hb.plot(title, a.Phase, 10, chartWidth-legendWidth-60)
	p.Y.Min, p.Y.Max = -0.7, float64(len(shown))-0.3
	legend := bucketLegend(r, order, present)
	if split {
		legend = append(legend, legendEntry{Label: "comm transfer", Color: rgb(hexTransfer)}, legendEntry{Label: "comm wait", Color: rgb(hexWait), Hatch: true})
	}
	h := max(clampHeight(rowHeight*1.4*vg.Length(len(shown))+marginTop+marginBot+30), legendHeight(len(legend)))
	notes := ranksNotes(r, a, split)
	if len(shown) < len(r.Ranks) {
		notes = append([]string{summaryNote(r, a.Phase, len(shown))}, notes...)
	}
	fg := &figure{plot: p, legend: legend, w: chartWidth, h: h, notes: notes}
	return fg.encode(f)
}

// rankSegments stacks one rank's bar: non-communication buckets in order,
// then transfer and wait (or the communication buckets when not split). It
// returns the segments and the bar's end in us.
func rankSegments(p analyze.PhaseSummary, buckets []analyze.Bucket, order []analyze.BucketID, y float64, present map[analyze.BucketID]bool) (boxes, float64) {
	var segs boxes
	x := 0.0
	add := func(us float64, c box) {
		if us <= 0 {
			return
		}
		c.X0, c.X1, c.Y0, c.Y1 = x/1000, (x+us)/1000, y-0.35, y+0.35
		segs = append(segs, c)
		x += us
	}
	// Compute and memory first, then communication, split or whole.
	for _, commPass := range []bool{false, true} {
		for _, id := range order {
			b, ok := p.Buckets[id]
			comm := bucketInfo(buckets, id).Group == analyze.GroupCommunication
			if !ok || b.USPerStep <= 0 || comm != commPass || (comm && p.Comm != nil) {
				continue
			}
			present[id] = true
			add(b.USPerStep, box{Color: BucketColor(id)})
		}
	}
	if c := p.Comm; c != nil {
		n := float64(max(p.Steps, 1))
		add(c.TransferUS/n, box{Color: rgb(hexTransfer)})
		add(c.WaitUS/n, box{Color: rgb(hexWait), Hatch: true})
	}
	return segs, x
}

// rankEndLabel is the label at the end of a rank's bar.
func rankEndLabel(p analyze.PhaseSummary, endUS float64) string {
	if c := p.Comm; c != nil {
		n := float64(max(p.Steps, 1))
		return fmt.Sprintf("%s ms · wait %s ms (%s)", ms(endUS), ms(c.WaitUS/n), pct(c.WaitShare))
	}
	return ms(endUS) + " ms"
}

// rankTick names a rank on the axis, marking the worst straggler.
func rankTick(r *analyze.Report, rk *analyze.Rank) string {
	s := "rank " + rankID(rk.Rank)
	if c := r.Collectives; c != nil && len(c.Straggler) > 0 && c.Straggler[0].Rank == rk.Rank && rk.Rank >= 0 {
		s += " (straggler)"
	}
	return s
}

// ranksNotes explains the split and its bases.
func ranksNotes(r *analyze.Report, a aggregate, split bool) []string {
	switch {
	case split:
		return []string{fmt.Sprintf("Wait: time in collectives before the last rank arrived; share of the rank's %skernel time. Transfer: the rest of communication.", phaseAdj(a.Phase))}
	case len(r.Ranks) <= 1:
		return []string{"Communication not split: " + singleRankComm + "."}
	}
	return []string{"Communication not split into transfer and wait: the collectives were not aligned across ranks."}
}

// maxRankBars is the most ranks the ranks chart draws; a run with more
// shows its slowest and fastest ranks (see shownRanks).
const maxRankBars = 32

// shownRanks returns the indices of the ranks the chart draws, in rank
// order: every rank, or with more than maxRankBars the maxRankBars/2 with
// the most and the maxRankBars/2 with the least kernel time per step in
// the phase.
func shownRanks(r *analyze.Report, phase string) []int {
	idx := make([]int, len(r.Ranks))
	for i := range idx {
		idx[i] = i
	}
	if len(idx) <= maxRankBars {
		return idx
	}
	kt := rankKernelTimes(r, phase)
	sort.SliceStable(idx, func(a, b int) bool { return kt[idx[a]] > kt[idx[b]] })
	shown := append(idx[:maxRankBars/2:maxRankBars/2], idx[len(idx)-maxRankBars/2:]...)
	sort.Ints(shown)
	return shown
}

// rankKernelTimes returns each rank's kernel time per step in the phase
// (-1 where the rank has none).
func rankKernelTimes(r *analyze.Report, phase string) []float64 {
	kt := make([]float64, len(r.Ranks))
	for i := range r.Ranks {
		kt[i] = -1
		if p, ok := phaseNamed(&r.Ranks[i], phase); ok {
			kt[i] = p.KernelPerStepUS
		}
	}
	return kt
}

// summaryNote says which ranks a summarised chart shows, with the spread
// of kernel time per step over every rank.
func summaryNote(r *analyze.Report, phase string, shown int) string {
	var kt []float64
	for _, v := range rankKernelTimes(r, phase) {
		if v >= 0 {
			kt = append(kt, v)
		}
	}
	if len(kt) == 0 {
		return ""
	}
	sort.Float64s(kt)
	q := func(f float64) string { return ms(kt[int(f*float64(len(kt)-1))]) }
	return fmt.Sprintf("%d ranks: showing the %d with the most and the %d with the least kernel time per step. "+
		"Over all ranks, ms per step: min %s, p50 %s, p90 %s, max %s.", len(r.Ranks), shown/2, shown/2, q(0), q(0.5), q(0.9), q(1))
}
