package render

import (
	"fmt"
	"sort"
	"strings"

	"kinetoscope/analyze"
)

// singleRankComm is said when transfer and wait cannot be split.
const singleRankComm = "single rank: transfer and wait cannot be told apart from one rank"

// rankBlocks lays out one rank: phase summary, buckets, communication,
// top kernels, unclassified kernels, launch delay and warnings.
func rankBlocks(r *analyze.Report, rk *analyze.Rank) []block {
	pv := rankPhase(rk)
	bs := []block{{Heading: rankTitle(rk), Level: 2}, {Lines: rankSummary(rk, pv)}}
	rows := sortedBuckets(r.Buckets, pv.Phase)
	bs = append(bs,
		block{Heading: fmt.Sprintf("Buckets (%s steps; %% kernel = share of %skernel time, %% span = share of %sstep span)", pv.Name, phaseAdj(pv.Name), phaseAdj(pv.Name)), Level: 3},
		block{Table: bucketTable(rows, pv.Phase)},
		block{Lines: nonEmpty(groupLine(rows, pv), SpanOverlapNote(pv.Phase), streamOverlapNote(rk, pv))},
		block{Heading: "Communication: transfer and wait", Level: 3},
	)
	bs = append(bs, commBlock(r, pv))
	bs = append(bs, kernelBlocks(r.Buckets, rk, pv)...)
	bs = append(bs, layerBlocks(r.Buckets, rk, pv)...)
	bs = append(bs, costModelBlocks(r.Buckets, rk)...)
	var notes []string
	notes = append(notes, launchText(rk.LaunchDelay, rk.GraphLaunchDelay))
	if rk.Outside.Count > 0 {
		notes = append(notes, fmt.Sprintf("Outside steps: %s, %s ms (not in any table above).", plural(rk.Outside.Count, "GPU event"), ms(rk.Outside.US)))
	}
	bs = append(bs, block{Heading: "Launch delay and leftovers", Level: 3}, block{Lines: notes})
	if len(rk.Warnings) > 0 {
		bs = append(bs, block{Heading: "Warnings", Level: 3}, block{Lines: rk.Warnings, List: true})
	}
	return bs
}

// rankSummary describes where the rank's steps came from and its phases.
func rankSummary(rk *analyze.Rank, pv phaseView) []string {
	var lines []string
	var info []string
	if rk.Device != "" {
		info = append(info, rk.Device)
	}
	if rk.WorldSize > 0 {
		info = append(info, fmt.Sprintf("world size %d", rk.WorldSize))
	}
	src := fmt.Sprintf("%s found by %s", plural(len(rk.Steps), "step"), rk.StepSource)
	if rk.StepEvidence != "" {
		src += " (" + rk.StepEvidence + ")"
	}
	lines = append(lines, strings.Join(append(info, src), "; ")+".")
	lines = append(lines, phaseLine(pv.Name, pv.Phase))
	for _, name := range shownPhases {
		if p, ok := phaseNamed(rk, name); ok && name != pv.Name {
			lines = append(lines, phaseLine(name, p))
		}
	}
	return lines
}

// phaseLine summarises one phase: steps, span statistics, kernel time, busy.
func phaseLine(name string, p analyze.PhaseSummary) string {
	title := strings.ToUpper(name[:1]) + name[1:]
	if name == "all" {
		title = "All steps"
	}
	s := fmt.Sprintf("%s: %s, span mean %s ms", title, plural(p.Steps, "step"), ms(p.SpanMeanUS))
	if p.SpanP50US > 0 || p.SpanP90US > 0 {
		s += fmt.Sprintf(" (p50 %s ms, p90 %s ms)", ms(p.SpanP50US), ms(p.SpanP90US))
	}
	return s + fmt.Sprintf(", kernel time %s ms/step, GPU busy %s of span.",
		ms(p.KernelPerStepUS), pct(ratioPct(p.BusyUS, p.SpanUS)))
}

// bucketTable lists buckets with per-step time, calls and both shares.
func bucketTable(rows []bucketRow, p analyze.PhaseSummary) *table {
	t := &table{
		Header: []string{"bucket", "group", "ms/step", "calls/step", "% kernel", "% span"},
		Right:  []bool{false, false, true, true, true, true},
	}
	var calls float64
	for _, r := range rows {
		s := r.Share
		calls += s.CallsPerStep
		t.Rows = append(t.Rows, []string{r.Bucket.Label, string(r.Bucket.Group), msFine(s.USPerStep), count(s.CallsPerStep), pct(s.ShareOfKernel), pct(s.ShareOfSpan)})
	}
	t.Rows = append(t.Rows, []string{"total", "", ms(p.KernelPerStepUS), count(calls), pct(ratioPct(p.KernelUS, p.KernelUS)), pct(ratioPct(p.KernelUS, p.SpanUS))})
	return t
}

// SpanOverlapNote explains a phase's total "% span" over 100% ("" when
// it is not): kernel time adds up the kernels of every stream, which may
// run at once, while busy time is their union.
func SpanOverlapNote(p analyze.PhaseSummary) string {
	if p.SpanUS <= 0 || p.KernelUS <= p.SpanUS {
		return ""
	}
	return fmt.Sprintf("Kernel time is %s of the span because kernels on several streams ran at the same time; "+
		"the GPU was busy (their union) %s of the span.", pct(ratioPct(p.KernelUS, p.SpanUS)), pct(ratioPct(p.BusyUS, p.SpanUS)))
}

// nonEmpty returns the lines that are not "".
func nonEmpty(lines ...string) []string {
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// groupLine gives each group's share of the phase's kernel time.
func groupLine(rows []bucketRow, pv phaseView) string {
	var parts []string
	for _, g := range groupTotals(rows) {
		parts = append(parts, fmt.Sprintf("%s %s", g.Group, pct(ratioPct(g.US, pv.Phase.KernelUS))))
	}
	if len(parts) == 0 {
		return "No kernel time in these steps."
	}
	return fmt.Sprintf("By group, share of %skernel time: %s.", phaseAdj(pv.Name), strings.Join(parts, ", "))
}

// commBlock splits communication into transfer and wait, or says why not.
func commBlock(r *analyze.Report, pv phaseView) block {
	c := pv.Phase.Comm
	if c == nil {
		if len(r.Ranks) <= 1 {
			return block{Lines: []string{strings.ToUpper(singleRankComm[:1]) + singleRankComm[1:] + "."}}
		}
		return block{Lines: []string{"Transfer and wait are not available: the collectives of this rank were not aligned across ranks."}}
	}
	n := float64(max(pv.Phase.Steps, 1))
	base := phaseAdj(pv.Name) + "kernel time"
	t := &table{
		Header: []string{"part", "ms/step", "share", "share of"},
		Right:  []bool{false, true, true, false},
		Rows: [][]string{
			{"communication kernels (raw)", ms(c.KernelUS / n), pct(ratioPct(c.KernelUS, pv.Phase.KernelUS)), base},
			{"transfer", ms(c.TransferUS / n), pct(c.TransferShareNetOfWait), base + " net of wait"},
			{"wait", ms(c.WaitUS / n), pct(c.WaitShare), base},
		},
	}
	return block{Table: t}
}

// kernelBlocks lists the top kernels and the unclassified ones.
func kernelBlocks(buckets []analyze.Bucket, rk *analyze.Rank, pv phaseView) []block {
	top := RankKernels(rk)
	scope := pv.Name + " steps"
	if pv.Name != "decode" {
		scope = "all steps"
	}
	bs := []block{{Heading: fmt.Sprintf("Top kernels (%s, by total time)", scope), Level: 3}}
	if len(top) == 0 {
		bs = append(bs, block{Lines: []string{"No kernels."}})
	} else {
		bs = append(bs, block{Table: kernelTable(buckets, top, true)})
	}
	bs = append(bs, block{Heading: "Unclassified kernels (bucket Other)", Level: 3})
	if len(rk.Unclassified) == 0 {
		return append(bs, block{Lines: []string{"Every kernel was classified."}})
	}
	un := append([]analyze.KernelStat(nil), rk.Unclassified...)
	sortKernels(un)
	return append(bs, block{Table: kernelTable(buckets, un, false)})
}

// sortKernels orders kernels by total time, descending, then by name.
// RankKernels returns every kernel the rank's report lists (the steps
// Rank.TopKernels covers), longest total time first, ties by name: the
// order every kernel table uses.
func RankKernels(rk *analyze.Rank) []analyze.KernelStat {
	var all []analyze.KernelStat
	for _, ks := range rk.TopKernels {
		all = append(all, ks...)
	}
	sortKernels(all)
	return all
}

func sortKernels(ks []analyze.KernelStat) {
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].US != ks[j].US {
			return ks[i].US > ks[j].US
		}
		return ks[i].Name < ks[j].Name
	})
}

// kernelTable lists at most topKernelRows kernels.
func kernelTable(buckets []analyze.Bucket, ks []analyze.KernelStat, withBucket bool) *table {
	t := &table{
		Header: []string{"kernel", "calls", "total ms", "mean us", "p50 us", "p99 us"},
		Right:  []bool{false, true, true, true, true, true},
	}
	if withBucket {
		t.Header = append([]string{"bucket"}, t.Header...)
		t.Right = append([]bool{false}, t.Right...)
	}
	for i, k := range ks {
		if i == topKernelRows {
			break
		}
		row := []string{shorten(k.Name, maxNameLen), fmt.Sprint(k.Count), ms(k.US), usStr(k.MeanUS), usStr(k.P50US), usStr(k.P99US)}
		if withBucket {
			row = append([]string{bucketInfo(buckets, k.Bucket).Label}, row...)
		}
		t.Rows = append(t.Rows, row)
	}
	if len(ks) > topKernelRows {
		t.Rows = append(t.Rows, make([]string, len(t.Header)))
		t.Rows[len(t.Rows)-1][0] = fmt.Sprintf("... %d more", len(ks)-topKernelRows)
	}
	return t
}

// launchText describes the CPU-launch-to-kernel-start delay of eager
// launches, and that of graph replays apart.
func launchText(d, graph analyze.LaunchDelay) string {
	text := "Launch delay: no kernel could be matched to its CPU launch."
	if d.Count > 0 {
		text = fmt.Sprintf("Launch delay (CPU launch to kernel start, eager launches): %s, p50 %s us, p99 %s us.", plural(d.Count, "launch"), usStr(d.P50US), usStr(d.P99US))
	}
	if graph.Count > 0 {
		text += fmt.Sprintf(" Graph replays, apart (cudaGraphLaunch to the replay's first kernel): %s, p50 %s us, p99 %s us.",
			plural(graph.Count, "replay"), usStr(graph.P50US), usStr(graph.P99US))
	}
	return text
}
