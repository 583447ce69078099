package render

import (
	"fmt"
	"strings"

	"kinetoscope/analyze"
)

// maxNameLen is the longest kernel name the text tables print; CSV and JSON
// keep full names.
const maxNameLen = 90

// topKernelRows is how many kernels the top-kernel and unclassified tables
// list per rank.
const topKernelRows = 10

// reportBlocks lays out a report as headings, paragraphs and tables.
func reportBlocks(r *analyze.Report) []block {
	title := "Kinetoscope report"
	if r.Source != "" {
		title += ": " + r.Source
	}
	bs := []block{{Heading: title, Level: 1}}
	lines := []string{HeadlineText(r)}
	if m := MissingRanksText(r); m != "" {
		lines = append(lines, m)
	}
	if r.Synthetic {
		lines = append(lines, "This trace says it was generated (synthetic data), not measured.")
	}
	bs = append(bs, block{Lines: lines})
	if len(r.Ranks) > 1 {
		bs = append(bs, block{Heading: "Ranks side by side", Level: 2})
		bs = append(bs, block{Table: ranksTable(r)})
	}
	bs = append(bs, accountBlocks(r)...)
	bs = append(bs, collectiveBlocks(r)...)
	bs = append(bs, bandwidthBlocks(r)...)
	bs = append(bs, rooflineBlocks(r)...)
	for i := range r.Ranks {
		bs = append(bs, rankBlocks(r, &r.Ranks[i])...)
	}
	bs = append(bs, checkBlocks(r)...)
	if len(r.Warnings) > 0 {
		bs = append(bs, block{Heading: "Warnings", Level: 2}, block{Lines: r.Warnings, List: true})
	}
	return bs
}

// HeadlineText returns the report's first finding as one sentence: the
// step's span and GPU busy share, the bucket that leads its kernel time,
// and communication as transfer vs wait, e.g. "Decode step 7.09 ms (p50
// 6.93 ms), GPU busy 11.7% of it on rank 0 and 43.6% on rank 1; AllReduce
// leads decode kernel time: 74.9%, 2.55 ms/step, 8 calls/step; ...". When
// the step split looks wrong it says so and what fixes it, with no figure.
func HeadlineText(r *analyze.Report) string {
	h := r.Headline
	if h == nil {
		return "No headline: the trace has no kernels in any step."
	}
	if h.Problem != "" {
		return fmt.Sprintf("No headline: the steps look wrong (%s), so any figure per step would be wrong too. To fix: %s%s.", h.Problem, h.Fix, CaveatText(h))
	}
	label := h.Label
	if label == "" {
		label = bucketInfo(r.Buckets, h.Bucket).Label
	}
	phase, steps, lead := h.Phase+" ", h.Phase+" step", strings.ToUpper(h.Phase[:1])+h.Phase[1:]+" step"
	if h.Phase == "all" || h.Phase == "" {
		phase, steps, lead = "", "step", "Step"
	}
	acct, sep := AccountLeadText(h), ", "
	if acct != "" {
		sep = "; "
	}
	text := fmt.Sprintf("%s %s ms (p50 %s ms)%s%sGPU busy %s; %s leads %skernel time: %s, %s ms/step, %s calls/step",
		lead, ms(h.SpanMeanUS), ms(h.SpanP50US), acct, sep, headlineBusyText(h), label, phase, pct(h.ShareOfKernel),
		ms(h.USPerStep), count(h.CallsPerStep))
	text += headlineBandwidthText(r)
	text += headlineCommText(h)
	text += fmt.Sprintf(" (%s %s)", rankScope(r, h.Ranks), plural(h.Steps, steps))
	if o := h.Outlier; o != nil {
		text += fmt.Sprintf(". Outlier: step %d of rank %s spans %s ms, GPU busy %s of it", o.Step, rankNum(o.Rank), ms(o.SpanUS), pct(o.BusyShare))
		if o.MedianSpanUS > 0 && o.SpanUS > o.MedianSpanUS {
			text += fmt.Sprintf(" (%.0fx the median step)", o.SpanUS/o.MedianSpanUS)
		}
		text += outlierPartText(r, o)
	}
	return text + CaveatText(h)
}

// headlineBandwidthText adds, when a collective leads, its achieved bus
// bandwidth at the message size with the most time, against the link's
// peak when one is known.
func headlineBandwidthText(r *analyze.Report) string {
	h := r.Headline
	if bucketInfo(r.Buckets, h.Bucket).Group != analyze.GroupCommunication {
		return ""
	}
	row := r.Bandwidth.Lead(h.Phase, h.Bucket)
	if row == nil || row.BusBW <= 0 {
		return "" // no bus bandwidth (a group of one): "0.00 GB/s" would be read as a finding
	}
	text := fmt.Sprintf("; at %s it reaches %s GB/s bus bandwidth", sizeText(*row), gbps(row.BusBW))
	if row.Basis == analyze.BasisKernel {
		text += " (from kernel time, waiting included)"
	}
	if p := r.Bandwidth.Peak; p != nil && row.ShareOfPeak > 0 {
		text += fmt.Sprintf(", %s of %s", pct(row.ShareOfPeak), p.Name)
	}
	return text
}

// headlineBusyText gives the GPU busy share of the step: one figure, or
// each rank's when the ranks diverge.
func headlineBusyText(h *analyze.Headline) string {
	if len(h.PerRank) == 0 {
		return pct(h.BusyShare) + " of it"
	}
	var parts []string
	for i, p := range h.PerRank {
		s := fmt.Sprintf("%s on rank %s", pct(p.BusyShare), rankNum(p.Rank))
		if i == 0 {
			s = fmt.Sprintf("%s of it on rank %s", pct(p.BusyShare), rankNum(p.Rank))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// headlineCommText adds the cross-rank split to the headline: the raw share
// of a collective counts the time early ranks wait for late ones. When the
// ranks diverge it names the rank that waits most instead of a mean.
func headlineCommText(h *analyze.Headline) string {
	c := h.Comm
	if c == nil {
		return ""
	}
	text := fmt.Sprintf("; aligned across ranks, communication is %s ms/step transfer (%s of kernel time net of wait) and %s ms/step wait",
		ms(c.TransferUSPerStep), pct(c.TransferShareNetOfWait), ms(c.WaitUSPerStep))
	waiter := -1
	for i, p := range h.PerRank {
		if waiter < 0 || p.WaitShare > h.PerRank[waiter].WaitShare {
			waiter = i
		}
	}
	if waiter < 0 {
		text += fmt.Sprintf(" (%s of kernel time)", pct(c.WaitShare))
		if c.Straggler >= 0 {
			text += fmt.Sprintf(", waiting mostly for rank %d", c.Straggler)
		}
		return text
	}
	w := h.PerRank[waiter]
	text += fmt.Sprintf("; rank %s spends %s of its kernel time waiting", rankNum(w.Rank), pct(w.WaitShare))
	if c.Straggler >= 0 && c.Straggler != w.Rank {
		text += fmt.Sprintf(", mostly for rank %d", c.Straggler)
	}
	return text
}

// rankNum names a rank by number, "?" when unknown.
func rankNum(r int) string {
	if r < 0 {
		return "?"
	}
	return fmt.Sprint(r)
}

// rankTitle names a rank for headings.
func rankTitle(rk *analyze.Rank) string {
	name := "Rank ?"
	if rk.Rank >= 0 {
		name = fmt.Sprintf("Rank %d", rk.Rank)
	}
	if rk.File != "" {
		name += " (" + rk.File + ")"
	}
	return name
}

// ranksTable compares the shown phase across ranks.
func ranksTable(r *analyze.Report) *table {
	t := &table{
		Header: []string{"rank", "phase", "steps", "span mean ms", "kernel ms/step", "busy % span", "comm ms/step", "comm % kernel", "wait % kernel"},
		Right:  []bool{true, false, true, true, true, true, true, true, true},
	}
	for i := range r.Ranks {
		rk := &r.Ranks[i]
		pv := rankPhase(rk)
		p := pv.Phase
		commUS := commPerStep(r.Buckets, p)
		wait := "-"
		if p.Comm != nil {
			wait = pct(p.Comm.WaitShare)
		}
		t.Rows = append(t.Rows, []string{
			rankID(rk.Rank), pv.Name, fmt.Sprint(p.Steps), ms(p.SpanMeanUS), ms(p.KernelPerStepUS),
			pct(ratioPct(p.BusyUS, p.SpanUS)), ms(commUS), pct(ratioPct(commUS, p.KernelPerStepUS)), wait,
		})
	}
	return t
}

// rankID is the rank number, or "?" when unknown.
func rankID(rank int) string {
	if rank < 0 {
		return "?"
	}
	return fmt.Sprint(rank)
}

// commPerStep sums the communication buckets' time per step.
func commPerStep(buckets []analyze.Bucket, p analyze.PhaseSummary) float64 {
	var us float64
	for id, s := range p.Buckets {
		if bucketInfo(buckets, id).Group == analyze.GroupCommunication {
			us += s.USPerStep
		}
	}
	return us
}

// collectiveBlocks describes cross-rank matching, if any.
func collectiveBlocks(r *analyze.Report) []block {
	c := r.Collectives
	if c == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("%d collectives matched across ranks, %d unmatched; clock %s.", c.Matched, c.Unmatched, c.Clock)}
	if s := stragglerText(c); s != "" {
		lines = append(lines, s)
	}
	bs := []block{{Heading: "Collectives across ranks", Level: 2}, {Lines: lines}}
	if len(c.Mismatches) > 0 {
		bs = append(bs, block{Lines: c.Mismatches, List: true})
	}
	return bs
}

// stragglerText names the ranks that arrive last at collectives.
func stragglerText(c *analyze.Collectives) string {
	if len(c.Straggler) == 0 {
		return ""
	}
	parts := make([]string, 0, len(c.Straggler))
	for _, s := range c.Straggler {
		parts = append(parts, fmt.Sprintf("rank %d (last at %d collectives, %s ms late in all)", s.Rank, s.LateCount, ms(s.LateUS)))
	}
	return "Straggler: " + strings.Join(parts, "; ") + "."
}
