package render

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"gonum.org/v1/plot/vg"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// partLook is how the outputs show one part of the step-time account
// (analyze.Account.Parts): its colour in the step time chart (compute
// cool, communication warm with wait hatched, GPU idle in greys, lighter as
// the cause is less the host's), its legend label (at most maxLegendLabel
// runes) and its words in a headline.
type partLook struct {
	hex    uint32
	legend string
	words  string
}

// partLooks holds every part's look: the one place that names the parts.
var partLooks = map[string]partLook{
	analyze.PartCompute:     {0x332288, "compute", "compute"},
	analyze.PartMemory:      {0xF0E442, "memory ops", "memory ops"},
	analyze.PartTransfer:    {hexTransfer, "comm transfer", "communication transfer"},
	analyze.PartWait:        {hexWait, "comm wait", "communication wait"},
	analyze.PartCommUnsplit: {0xDDCC77, "comm (not split)", "communication (not split into transfer and wait)"},
	analyze.PartHostLate:    {0x555555, "idle: host late", "GPU idle with the host late"},
	analyze.PartAfterSync:   {0x8C8C8C, "idle: after sync", "GPU idle after a host sync"},
	analyze.PartGraphLaunch: {0x44AA99, "idle: graph launch", "GPU idle in graph launches"},
	analyze.PartLaunchGap:   {0xBDBDBD, "idle: launch gap", "GPU idle in launch gaps"},
	analyze.PartUnexplained: {0xE2E2E2, "idle: unexplained", "GPU idle, cause unexplained"},
}

// PartLegend is the step time chart's legend label of a part.
func PartLegend(name string) string {
	if l, ok := partLooks[name]; ok {
		return l.legend
	}
	return name
}

// hexBoundary is the step boundary's colour (outside the span).
const hexBoundary = 0xF1F1F1

// partBoundary names the step boundary where parts are listed.
const partBoundary = "step boundary (outside the span)"

// rankAccount is one rank's mean account of its shown phase.
type rankAccount struct {
	rank    int
	phase   string
	account *analyze.Account
}

// reportAccounts returns each rank's mean account of its shown phase
// (rankPhase); nil when no rank has one.
func reportAccounts(r *analyze.Report) []rankAccount {
	var out []rankAccount
	for i := range r.Ranks {
		rk := &r.Ranks[i]
		pv := rankPhase(rk)
		a := pv.Phase.Account
		if a == nil && pv.Name == "all" {
			var steps []*analyze.Step
			for j := range rk.Steps {
				if analyze.InPhase("all", &rk.Steps[j]) {
					steps = append(steps, &rk.Steps[j])
				}
			}
			a = analyze.MeanAccount(steps)
		}
		if a != nil {
			out = append(out, rankAccount{rk.Rank, pv.Name, a})
		}
	}
	return out
}

// accountBlocks is the report's step-time account: a table of parts by
// rank (ms per step and percent of the span), whom the waits are for, and
// the thresholds.
func accountBlocks(r *analyze.Report) []block {
	as := reportAccounts(r)
	if len(as) == 0 {
		return nil
	}
	t := &table{Header: []string{"part"}, Right: []bool{false}}
	for _, a := range as {
		t.Header = append(t.Header, "rank "+rankID(a.rank)+" ms", "% span")
		t.Right = append(t.Right, true, true)
	}
	row := func(name string, f func(*analyze.Account) float64, always bool) {
		cells := []string{name}
		any := always
		for _, a := range as {
			v := f(a.account)
			any = any || v > 0
			cells = append(cells, ms(v), pct(ratioPct(v, a.account.SpanUS)))
		}
		if any {
			t.Rows = append(t.Rows, cells)
		}
	}
	for i, p := range (&analyze.Account{}).Parts() {
		row(p.Name, func(a *analyze.Account) float64 { return a.Parts()[i].US }, false)
	}
	row("span (the parts' sum)", func(a *analyze.Account) float64 { return a.SpanUS }, true)
	row(partBoundary, func(a *analyze.Account) float64 { return a.BoundaryUS }, false)
	lines := []string{fmt.Sprintf("Mean per %s of each rank; busy time goes to the running event of highest priority "+
		"(compute, memory ops, transfer, unsplit communication, wait), so overlapped communication counts as compute; "+
		"GPU idle (no event on any stream) is split by the CPU side of the trace. Launch gap: a gap of at most %s us after an early launch (--launch-gap-us).",
		stepName(as[0].phase), num(launchGap(r)))}
	for _, a := range as {
		for _, w := range a.account.WaitFor {
			if w.Rank != a.rank && w.US > 0 {
				lines = append(lines, fmt.Sprintf("Rank %s waits %s ms/step in collectives for rank %s.", rankID(a.rank), ms(w.US), rankID(w.Rank)))
			}
		}
	}
	lines = append(lines, whatIfLines(r)...)
	return []block{{Heading: "Step-time account (" + as[0].phase + ", ms per step)", Level: 2}, {Table: t}, {Lines: lines}}
}

// launchGap is the launch-gap threshold the report's accounts used.
func launchGap(r *analyze.Report) float64 {
	if r.Account != nil {
		return r.Account.LaunchGapUS
	}
	return analyze.DefaultLaunchGapUS
}

// accountHeader is the header of the "csv-account" format: one row per
// rank, step (or the phase mean) and part of the step-time account.
var accountHeader = []string{"rank", "file", "phase", "step", "step_name", "part", "us", "share_of_span", "span_us", "launch_gap_us"}

// WriteAccountCSV writes the "csv-account" format: every step's account
// and each phase's mean (step "mean"), one row per part, in long format;
// the parts of a step add up to its span_us (the step boundary, outside
// the span, is a row of its own; compute is also split by bucket, rows
// "compute: BUCKET", and communication wait by bucket and by the rank
// waited for, rows "communication wait: BUCKET" and "communication wait
// for rank R").
func WriteAccountCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	gap := num(launchGap(r))
	return writeCSV(w, accountHeader, func(emit func(...string)) {
		for i := range r.Ranks {
			rk := &r.Ranks[i]
			rows := func(phase, step, name string, a *analyze.Account) {
				for _, p := range a.Parts() {
					emit(rankID(rk.Rank), rk.File, phase, step, name, p.Name, num(p.US), num(ratioPct(p.US, a.SpanUS)), num(a.SpanUS), gap)
				}
				for _, id := range bucketOrder(r.Buckets, a.Compute) {
					v := a.Compute[id]
					emit(rankID(rk.Rank), rk.File, phase, step, name, "compute: "+string(id), num(v), num(ratioPct(v, a.SpanUS)), num(a.SpanUS), gap)
				}
				for _, id := range bucketOrder(r.Buckets, a.WaitIn) {
					v := a.WaitIn[id]
					emit(rankID(rk.Rank), rk.File, phase, step, name, analyze.PartWait+": "+string(id), num(v), num(ratioPct(v, a.SpanUS)), num(a.SpanUS), gap)
				}
				for _, w := range a.WaitFor {
					emit(rankID(rk.Rank), rk.File, phase, step, name, analyze.PartWait+" for rank "+rankID(w.Rank), num(w.US), num(ratioPct(w.US, a.SpanUS)), num(a.SpanUS), gap)
				}
				emit(rankID(rk.Rank), rk.File, phase, step, name, partBoundary, num(a.BoundaryUS), "", num(a.SpanUS), gap)
			}
			for _, pv := range rankPhases(rk) {
				if pv.Phase.Account != nil {
					rows(pv.Name, "mean", "", pv.Phase.Account)
				}
			}
			for _, s := range rk.Steps {
				if s.Account != nil {
					rows(s.Phase, strconv.Itoa(s.Index), s.Name, s.Account)
				}
			}
		}
	})
}

// stepBar is one stacked bar of the step time chart.
type stepBar struct {
	name    string
	account *analyze.Account
}

// StepTime draws the step time chart of a report: one stacked bar per rank
// of its mean step in the shown phase, every part of the step-time account
// in order (compute, memory ops, transfer, wait, GPU idle by cause), then
// the step boundary outside the span.
func StepTime(r *analyze.Report, f Format) ([]byte, error) {
	if r == nil || len(r.Ranks) == 0 {
		return nil, errors.New("step time chart: report has no ranks")
	}
	as := reportAccounts(r)
	if len(as) == 0 {
		return nil, noData("step time chart: no step has GPU work")
	}
	var bars []stepBar
	for _, a := range as {
		bars = append(bars, stepBar{"rank " + rankID(a.rank), a.account})
	}
	title := fmt.Sprintf("Where the %s goes: its span by part, per rank\nmean per step; GPU idle split by cause from the CPU side", stepName(as[0].phase))
	return stepTimeChart(title, as[0].phase, bars, f)
}

// DiffStepTime draws the step time chart of a diff: base and head bars of
// each rank compared.
func DiffStepTime(d *diff.Diff, f Format) ([]byte, error) {
	if d == nil {
		return nil, errNoDiff
	}
	var bars []stepBar
	for _, side := range []struct {
		name string
		as   []diff.RankAccount
	}{{"base", d.Base.Accounts}, {"head", d.Head.Accounts}} {
		for _, ra := range side.as {
			bars = append(bars, stepBar{side.name + " rank " + rankID(ra.Rank), ra.Account})
		}
	}
	if len(bars) == 0 {
		return nil, noData("step time chart: no step-time account on either side")
	}
	phase := d.Phase
	title := fmt.Sprintf("Where the %s goes, base vs head: span by part, per rank\nmean per step; GPU idle split by cause from the CPU side", stepName(phase))
	return stepTimeChart(title, phase, bars, f)
}

// stepTimeChart stacks each bar's parts from 0, top-down in order.
func stepTimeChart(title, phase string, bars []stepBar, f Format) ([]byte, error) {
	var hb hbars
	present := map[string]bool{}
	for row, b := range bars {
		y := float64(len(bars) - 1 - row)
		x := 0.0
		add := func(name string, us float64, c box) {
			if us <= 0 {
				return
			}
			present[name] = true
			c.X0, c.X1, c.Y0, c.Y1 = x/1000, (x+us)/1000, y-0.35, y+0.35
			hb.bars = append(hb.bars, c)
			x += us
		}
		for _, p := range b.account.Parts() {
			add(p.Name, p.US, box{Color: rgb(partLooks[p.Name].hex), Hatch: p.Name == analyze.PartWait})
		}
		add(partBoundary, b.account.BoundaryUS, box{Color: rgb(hexBoundary)})
		hb.endLabel(y, x, fmt.Sprintf("span %s ms + boundary %s ms", ms(b.account.SpanUS), ms(b.account.BoundaryUS)), rgb(hexText))
		hb.row(y, b.name)
	}
	var legend []legendEntry
	for _, p := range (&analyze.Account{}).Parts() {
		if present[p.Name] {
			legend = append(legend, legendEntry{Label: PartLegend(p.Name), Color: rgb(partLooks[p.Name].hex), Hatch: p.Name == analyze.PartWait})
		}
	}
	if present[partBoundary] {
		legend = append(legend, legendEntry{Label: "step boundary", Color: rgb(hexBoundary), Band: true})
	}
	p := hb.plot(title, phase, 10, chartWidth-legendWidth-60)
	p.X.Label.Text = fmt.Sprintf("ms per %s (span, then the boundary to the next step)", stepName(phase))
	p.Y.Min, p.Y.Max = -0.7, float64(len(bars))-0.3
	h := max(clampHeight(rowHeight*1.4*vg.Length(len(bars))+marginTop+marginBot+30), legendHeight(len(legend)))
	notes := []string{"Busy time goes to the running event of highest priority: compute, memory ops, transfer, wait. " +
		"Idle: host late (launch after the GPU went idle), after a host sync, graph launch, launch gap, unexplained."}
	fg := &figure{plot: p, legend: legend, w: chartWidth, h: h, notes: notes}
	return fg.encode(f)
}

// diffAccountTable compares the account part by part.
func diffAccountTable(a *diff.AccountDiff) *table {
	t := &table{
		Header: []string{"part", "base ms", "head ms", "delta ms", "delta %", "verdict", "95% CI ms"},
		Right:  []bool{false, true, true, true, true, false, false},
	}
	for _, name := range a.Order {
		p := a.Part(name)
		if p.BaseUS == 0 && p.HeadUS == 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{p.Name, ms(p.BaseUS), ms(p.HeadUS), diffSigned(diffMS, p.DeltaUS),
			diffPct(p.DeltaUS, p.BaseUS), p.Verdict, diffCI(p.Test, "ms")})
	}
	t.Rows = append(t.Rows, []string{partBoundary, ms(a.BaseBoundaryUS), ms(a.HeadBoundaryUS),
		diffSigned(diffMS, a.HeadBoundaryUS-a.BaseBoundaryUS), diffPct(a.HeadBoundaryUS-a.BaseBoundaryUS, a.BaseBoundaryUS), "", ""})
	return t
}

// whatIfLines states the report's what-if estimates, each with its
// assumption.
func whatIfLines(r *analyze.Report) []string {
	var out []string
	for _, w := range r.WhatIf {
		out = append(out, fmt.Sprintf("Estimate, if %s: step %s ms instead of %s ms (assumes %s).", w.Name, ms(w.StepUS), ms(w.NowUS), w.Assumption))
	}
	return out
}

// diffRankAccountTable sets each rank's account on both sides side by side
// (base, head, per rank present on both); nil with one rank, where the
// part-by-part table says it all.
func diffRankAccountTable(d *diff.Diff) *table {
	head := make(map[int]*analyze.Account)
	for _, ra := range d.Head.Accounts {
		head[ra.Rank] = ra.Account
	}
	var ranks []int
	var bases, heads []*analyze.Account
	for _, ra := range d.Base.Accounts {
		if h, ok := head[ra.Rank]; ok {
			ranks, bases, heads = append(ranks, ra.Rank), append(bases, ra.Account), append(heads, h)
		}
	}
	if len(ranks) < 2 {
		return nil
	}
	t := &table{Header: []string{"part"}, Right: []bool{false}}
	for _, r := range ranks {
		t.Header = append(t.Header, "rank "+rankID(r)+" base", "head")
		t.Right = append(t.Right, true, true)
	}
	for _, p := range (&analyze.Account{}).Parts() {
		cells, any := []string{p.Name}, false
		for i := range ranks {
			b, h := bases[i].Part(p.Name), heads[i].Part(p.Name)
			any = any || b > 0 || h > 0
			cells = append(cells, ms(b), ms(h))
		}
		if any {
			t.Rows = append(t.Rows, cells)
		}
	}
	span := []string{"span"}
	for i := range ranks {
		span = append(span, ms(bases[i].SpanUS), ms(heads[i].SpanUS))
	}
	t.Rows = append(t.Rows, span)
	return t
}
