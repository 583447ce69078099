package render

import (
	"fmt"
	"math"

	"kinetoscope/analyze/diff"
)

// diffKernelRows is how many kernels each kernel table of a diff lists.
const diffKernelRows = 15

// diffBlocks lays out a diff as paragraphs and tables.
func diffBlocks(d *diff.Diff) []block {
	bs := []block{
		{Lines: []string{DiffHeadlineText(d)}},
		{Heading: "Runs", Level: 2},
		{Lines: diffIntro(d)},
		{Heading: "Step (" + diffPhase(d) + ")", Level: 2},
		{Table: diffStepTable(d)},
		{Heading: "Buckets, per " + diffStepWord(d) + ", largest change first", Level: 2},
		{Table: diffBucketTable(d)},
	}
	if d.Account != nil {
		bs = append(bs, block{Heading: "Step-time account, per " + diffStepWord(d) + ", largest change first", Level: 2},
			block{Table: diffAccountTable(d.Account)})
		if t := diffRankAccountTable(d); t != nil {
			bs = append(bs, block{Heading: "Step-time account by rank, ms per " + diffStepWord(d), Level: 2}, block{Table: t})
		}
	}
	if d.Comm != nil {
		bs = append(bs, block{Heading: "Communication: transfer vs wait, per step", Level: 2},
			block{Table: diffCommTable(d.Comm)})
	}
	bs = append(bs, diffBandwidthBlocks(d)...)
	bs = append(bs, diffLayerBlocks(d)...)
	bs = append(bs, diffCostModelBlocks(d)...)
	bs = append(bs, diffKernelBlocks(&d.Kernels)...)
	bs = append(bs, block{Heading: "Metadata", Level: 2}, block{Table: diffMetaTable(d.Metadata)})
	if len(d.Warnings) > 0 {
		bs = append(bs, block{Heading: "Warnings", Level: 2}, block{Lines: d.Warnings, List: true})
	}
	return bs
}

// diffPhase names the compared steps.
func diffPhase(d *diff.Diff) string {
	if d.Phase == "all" {
		return "all steps"
	}
	return d.Phase
}

// diffStepWord names one compared step: "decode step", or "step" when all
// steps are compared.
func diffStepWord(d *diff.Diff) string {
	if d.Phase == "all" {
		return "step"
	}
	return d.Phase + " step"
}

// diffIntro describes the two runs and the noise test.
func diffIntro(d *diff.Diff) []string {
	ranks := "all ranks pooled (per step, the mean over ranks)"
	if d.RankSel != "all" {
		ranks = "rank " + d.RankSel
	}
	n := d.Noise
	return []string{
		diffSideLine("base", d.Base),
		diffSideLine("head", d.Head),
		fmt.Sprintf("Compared: %s steps, %s. Times are per step; shares are %% of kernel time (sum of kernel durations).", d.Phase, ranks),
		fmt.Sprintf("Noise: %s (%.0f%%, %d resamples, seed %d); significant when the interval excludes 0 and |delta| > %g µs and > %g%% of base; fewer than %d steps a side: not enough steps.",
			n.Name, n.Confidence, n.Resamples, n.Seed, n.FloorUS, n.FloorPct, n.MinSteps),
	}
}

// diffSideLine describes one run.
func diffSideLine(name string, s diff.Side) string {
	dev := ""
	if len(s.Devices) > 0 {
		dev = fmt.Sprintf(", %v", s.Devices)
	}
	return fmt.Sprintf("%s: %s (%s, %s compared, %s%s)", name, s.Path, plural(s.Ranks, "rank"),
		plural(s.Steps, "step"), plural(s.DecodeSteps, "decode step"), dev)
}

// diffStepTable compares the step figures and launch delay.
func diffStepTable(d *diff.Diff) *table {
	s, l := &d.Step, &d.LaunchDelay
	t := &table{
		Header: []string{"", "base", "head", "delta", "delta %", "95% CI of delta", "verdict"},
		Right:  []bool{false, true, true, true, true, true, false},
	}
	msRow := func(name string, b, h float64) []string {
		return []string{name, ms(b), ms(h), diffSigned(diffMS, h-b), diffPct(h-b, b), "", ""}
	}
	numRow := func(name string, b, h float64, f func(float64) string) []string {
		return []string{name, f(b), f(h), diffSigned(f, h-b), diffPct(h-b, b), "", ""}
	}
	span := msRow("span mean (ms)", s.BaseUS, s.HeadUS)
	span[5], span[6] = diffCI(s.Test, " ms"), s.Verdict
	t.Rows = [][]string{
		span,
		msRow("span p50 (ms)", s.BaseP50US, s.HeadP50US),
		msRow("span p90 (ms)", s.BaseP90US, s.HeadP90US),
		msRow("busy (ms)", s.BaseBusyUS, s.HeadBusyUS),
		msRow("idle: span - busy (ms)", s.BaseIdleUS, s.HeadIdleUS),
		msRow("kernel time (ms)", s.BaseKernelUS, s.HeadKernelUS),
		numRow("GPU events", s.BaseKernels, s.HeadKernels, count),
		numRow("graph launches", s.BaseGraphLaunches, s.HeadGraphLaunches, count),
		numRow("launch delay p50 (µs)", l.BaseP50US, l.HeadP50US, usStr),
		numRow("launch delay p99 (µs)", l.BaseP99US, l.HeadP99US, usStr),
	}
	return t
}

// diffBucketTable compares the buckets in the diff's order.
func diffBucketTable(d *diff.Diff) *table {
	t := &table{
		Header: []string{"bucket", "base ms", "head ms", "delta ms", "delta %", "base calls", "head calls",
			"base % kernel", "head % kernel", "95% CI of delta (ms)", "verdict"},
		Right: []bool{false, true, true, true, true, true, true, true, true, true, false},
	}
	for _, id := range d.BucketOrder {
		b := d.Buckets[id]
		t.Rows = append(t.Rows, []string{
			b.Label, ms(b.BaseUSPerStep), ms(b.HeadUSPerStep), diffSigned(diffMS, b.DeltaUS),
			diffPct(b.DeltaUS, b.BaseUSPerStep), count(b.BaseCallsPerStep), count(b.HeadCallsPerStep),
			pct(b.BaseShare), pct(b.HeadShare), diffCI(b.Test, ""), b.Verdict,
		})
	}
	return t
}

// diffCommTable compares transfer and wait.
func diffCommTable(c *diff.CommDiff) *table {
	row := func(name string, b, h float64) []string {
		return []string{name, ms(b), ms(h), diffSigned(ms, h-b), diffPct(h-b, b)}
	}
	return &table{
		Header: []string{"", "base ms", "head ms", "delta ms", "delta %"},
		Right:  []bool{false, true, true, true, true},
		Rows: [][]string{
			row("communication kernels", c.BaseKernelUS, c.HeadKernelUS),
			row("transfer", c.BaseTransferUS, c.HeadTransferUS),
			row("wait", c.BaseWaitUS, c.HeadWaitUS),
		},
	}
}

// diffKernelBlocks lists the kernels changed, added and removed.
func diffKernelBlocks(k *diff.Kernels) []block {
	var bs []block
	if len(k.Changed) > 0 {
		t := &table{
			Header: []string{"kernel", "match", "bucket", "base µs", "head µs", "delta µs", "delta %", "base calls", "head calls"},
			Right:  []bool{false, false, false, true, true, true, true, true, true},
		}
		for _, c := range k.Changed[:min(len(k.Changed), diffKernelRows)] {
			t.Rows = append(t.Rows, []string{shorten(c.Name, maxNameLen), c.Match, string(c.Bucket),
				usStr(c.BaseUSPerStep), usStr(c.HeadUSPerStep), diffSigned(usStr, c.DeltaUS),
				diffPct(c.DeltaUS, c.BaseUSPerStep), count(c.BaseCallsPerStep), count(c.HeadCallsPerStep)})
		}
		bs = append(bs, block{Heading: "Kernels in both runs, per step, largest change first", Level: 2}, block{Table: t})
		bs = append(bs, diffMore(len(k.Changed))...)
	}
	bs = append(bs, diffUseBlocks("Kernels in head only (added)", k.Added)...)
	bs = append(bs, diffUseBlocks("Kernels in base only (removed)", k.Removed)...)
	if !k.Complete {
		bs = append(bs, block{Lines: []string{"The reports list only the top kernels of each bucket: a kernel shown in one run only may have run briefly in the other."}})
	}
	return bs
}

// diffUseBlocks lists kernels of one run only.
func diffUseBlocks(title string, ks []diff.KernelUse) []block {
	if len(ks) == 0 {
		return []block{{Heading: title, Level: 2}, {Lines: []string{"none"}}}
	}
	t := &table{
		Header: []string{"kernel", "bucket", "µs/step", "calls/step"},
		Right:  []bool{false, false, true, true},
	}
	for _, k := range ks[:min(len(ks), diffKernelRows)] {
		t.Rows = append(t.Rows, []string{shorten(k.Name, maxNameLen), string(k.Bucket), usStr(k.USPerStep), count(k.CallsPerStep)})
	}
	return append([]block{{Heading: title, Level: 2}, {Table: t}}, diffMore(len(ks))...)
}

// diffMore says how many kernels a table left out, if any.
func diffMore(n int) []block {
	if n <= diffKernelRows {
		return nil
	}
	return []block{{Lines: []string{fmt.Sprintf("... and %d more (all in --format json).", n-diffKernelRows)}}}
}

// diffMetaTable lists metadata, marking the keys that differ.
func diffMetaTable(ms []diff.MetaDiff) *table {
	t := &table{Header: []string{"key", "base", "head", "differs"}}
	for _, m := range ms {
		mark := ""
		if m.Differs {
			mark = "yes"
		}
		t.Rows = append(t.Rows, []string{m.Key, m.Base, m.Head, mark})
	}
	return t
}

// diffSigned formats a delta with its sign.
func diffSigned(f func(float64) string, v float64) string {
	s := f(v)
	if v >= 0 && s[0] != '-' {
		return "+" + s
	}
	return s
}

// diffMS formats a change in microseconds as milliseconds, with three
// decimals below 0.1 ms so that small significant changes do not read 0.00.
func diffMS(us float64) string {
	if math.Abs(us) < 100 {
		return fmt.Sprintf("%.3f", us/1000)
	}
	return ms(us)
}

// diffPct formats delta/base in percent, "new" when base is 0.
func diffPct(delta, base float64) string {
	switch {
	case base == 0 && delta == 0:
		return "0.0%"
	case base == 0:
		return "new"
	}
	return diffSigned(pct, 100*delta/base)
}

// diffCI formats a test's interval in milliseconds followed by unit, empty
// when untested.
func diffCI(t diff.Test, unit string) string {
	if t.Verdict == "not enough steps" || t.Verdict == "" {
		return ""
	}
	return fmt.Sprintf("[%s, %s]%s", diffSigned(diffMS, t.CILowUS), diffSigned(diffMS, t.CIHighUS), unit)
}
