package web

import (
	"strconv"

	"kinetoscope/analyze"
	"kinetoscope/render"
)

// topKernelRows is how many kernels the run page lists per rank.
const topKernelRows = 15

// runView is what the run page shows of a report.
type runView struct {
	Headline string
	// Missing names the ranks of the run without a trace (render's
	// MissingRanksText); "" when every rank has one.
	Missing string
	Ranks   *ranksView
	Rank    *analyze.Rank // the selected rank
	RankNum int
	Phase   string // decode, prefill or all steps
	Buckets []bucketRow
	Total   bucketRow // the phase's kernel time per step over every bucket
	// Overlap explains a total share of the span over 100% (render's
	// SpanOverlapNote); "" when there is none.
	Overlap  string
	Kernels  *kernelsView
	Timeline *timelineView
	// Layers is the fold into layers of the rank's shown phase, and
	// LayerSummary its line (nil and "" when those steps did not fold).
	Layers       *analyze.LayerFold
	LayerSummary string
	// CostModels lays out the rank's cost models (render's views), with
	// the prediction the page's ?predict= asked for; Predict is that
	// workload as asked, PredictError why it could not be read.
	CostModels   []render.CostModelView
	Predict      string
	PredictError string
}

// bucketRow is one bucket of the selected rank's phase.
type bucketRow struct {
	Label string
	Group analyze.Group
	analyze.BucketShare
}

// newRunView selects a rank (the query's "rank", else the first) and a
// step of it for the timeline (the query's "step", else the slowest), and
// lays out the tables.
func newRunView(r *analyze.Report, rankQuery, stepQuery string) *runView {
	v := &runView{Headline: render.HeadlineText(r), Missing: render.MissingRanksText(r)}
	if len(r.Ranks) == 0 {
		return v
	}
	sel := 0
	if n, err := strconv.Atoi(rankQuery); err == nil {
		for i := range r.Ranks {
			if r.Ranks[i].Rank == n {
				sel = i
			}
		}
	}
	v.Rank = &r.Ranks[sel]
	v.RankNum = v.Rank.Rank
	var ph analyze.PhaseSummary
	v.Phase, ph = phaseOf(v.Rank)
	v.Buckets, v.Total = phaseBuckets(r, ph)
	v.Overlap = render.SpanOverlapNote(ph)
	v.Kernels = newKernelsView(v.Rank, topKernelRows)
	if v.Layers = render.ShownLayers(v.Rank); v.Layers != nil {
		v.LayerSummary = render.LayerSummary(v.Layers)
	}
	v.CostModels = render.CostModelViews(reportBuckets(r), v.Rank)
	v.Timeline = newTimelineView(r, v.Rank, v.Phase, stepQuery)
	step := ""
	if stepQuery != "" && v.Timeline != nil {
		step = strconv.Itoa(v.Timeline.Step.Index)
	}
	v.Ranks = newRanksView(r, sel, step)
	return v
}

// phaseOf returns the phase a rank's tables show, as render chooses it,
// with every step called "all steps".
func phaseOf(rk *analyze.Rank) (string, analyze.PhaseSummary) {
	name, ph := render.ShownPhase(rk)
	if name == "all" {
		name = "all steps"
	}
	return name, ph
}

// phaseBuckets returns a phase's buckets in render's order (by group,
// then by time within the group), without empty ones, and their total.
func phaseBuckets(r *analyze.Report, ph analyze.PhaseSummary) ([]bucketRow, bucketRow) {
	var rows []bucketRow
	for _, b := range render.BucketOrder(reportBuckets(r), ph) {
		rows = append(rows, bucketRow{Label: b.Label, Group: b.Group, BucketShare: ph.Buckets[b.ID]})
	}
	total := bucketRow{Label: "total"}
	for _, b := range rows {
		total.US += b.US
		total.USPerStep += b.USPerStep
		total.CallsPerStep += b.CallsPerStep
		total.ShareOfKernel += b.ShareOfKernel
		total.ShareOfSpan += b.ShareOfSpan
	}
	return rows, total
}

// reportBuckets returns the report's buckets in display order (the
// built-in ones for a report that lists none).
func reportBuckets(r *analyze.Report) []analyze.Bucket {
	if len(r.Buckets) == 0 {
		return analyze.Buckets()
	}
	return r.Buckets
}

// kernelsView is the selected rank's kernel table: the longest kernels of
// the steps Rank.TopKernels covers, per step of them.
type kernelsView struct {
	Phase string // the steps covered: decode, or all steps
	Steps int
	Rows  []kernelStatRow
	Of    int // kernels listed in the report
}

// kernelStatRow is one kernel per step of the covered steps.
type kernelStatRow struct {
	analyze.KernelStat
	CallsPerStep float64
	USPerStep    float64
	Share        float64 // percent of the covered steps' kernel time
}

// newKernelsView lists the n longest kernels of rk.
func newKernelsView(rk *analyze.Rank, n int) *kernelsView {
	v := &kernelsView{Phase: "decode", Steps: rk.Decode.Steps}
	kernelUS := rk.Decode.KernelUS
	if v.Steps == 0 {
		all := analyze.Aggregate(rk.Steps, (*analyze.Step).HasWork)
		v.Phase, v.Steps, kernelUS = "all steps", all.Steps, all.KernelUS
	}
	all := render.RankKernels(rk)
	v.Of = len(all)
	steps := float64(max(v.Steps, 1))
	for _, k := range all[:min(n, len(all))] {
		v.Rows = append(v.Rows, kernelStatRow{KernelStat: k, CallsPerStep: float64(k.Count) / steps,
			USPerStep: k.US / steps, Share: percent(k.US, kernelUS)})
	}
	return v
}
