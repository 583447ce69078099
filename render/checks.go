package render

import (
	"fmt"
	"strings"

	"kinetoscope/analyze"
)

// CaveatText returns the headline's caveats as sentences to append to it:
// "" when there are none, else ". Caveat: ..." or ". Caveats: ...; ...".
func CaveatText(h *analyze.Headline) string {
	switch len(h.Caveats) {
	case 0:
		return ""
	case 1:
		return ". Caveat: " + h.Caveats[0]
	}
	return ". Caveats: " + strings.Join(h.Caveats, "; ")
}

// checkBlocks lays out the checks of the data: one row per rank, then
// what each check found, in words.
func checkBlocks(r *analyze.Report) []block {
	c := r.Checks
	if c == nil || len(c.Ranks) == 0 {
		return nil
	}
	t := &table{
		Header: []string{"rank", "overlaps", "before launch", "> step / trace", "outside", "bad times", "% Other", "comm-like", "dropped", "cut step"},
		Right:  []bool{true, true, true, true, true, true, true, true, true, false},
	}
	var lines []string
	for i := range c.Ranks {
		rc := &c.Ranks[i]
		tc, rules, tr := &rc.Timing, &rc.Rules, &rc.Truncation
		overlaps := fmt.Sprint(tc.Overlaps)
		if tc.Overlaps > 0 {
			overlaps += fmt.Sprintf(" (%s ms)", msFine(tc.OverlapUS))
		}
		cut := "-"
		if tr.CutStep != nil {
			cut = fmt.Sprintf("step %d", tr.CutStep.Index)
		}
		t.Rows = append(t.Rows, []string{
			rankID(rc.Rank), overlaps, fmt.Sprint(tc.BeforeLaunch),
			fmt.Sprintf("%d / %d", tc.LongerThanStep, tc.LongerThanTrace), fmt.Sprint(tc.OutsideWindow),
			fmt.Sprint(tc.UnreadableTimes + tc.NegativeDurations), pct(rules.OtherShare), fmt.Sprint(len(rules.CommLike)),
			profilerDrops(tr), cut,
		})
		lines = append(lines, rankCheckLines(r, rc)...)
	}
	for _, p := range c.Clock {
		lines = append(lines, fmt.Sprintf("Clock of rank %s: %s.", rankNum(p.Rank), p.Problem))
	}
	intro := fmt.Sprintf("Checks of the trace itself, per rank: GPU events overlapping the previous one on their stream (ms overlapped), "+
		"starting before their CPU launch, lasting longer than their step or the trace, more than 1 s outside the trace's CPU window, "+
		"dropped on reading for bad times; %% Other: share of %s kernel time no rule classified (the headline says so above %s); "+
		"kernels named like communication outside the communication buckets; records the profiler says it dropped; a last step cut off by the end of the profile.",
		checksPhase(c), pct(c.OtherThreshold))
	bs := []block{{Heading: "Checks of the data", Level: 2}, {Lines: []string{intro}}, {Table: t}}
	if len(lines) == 0 {
		clocks := ""
		if len(r.Ranks) > 1 {
			clocks = ", and clocks the alignment relates"
		}
		lines = []string{"Nothing found: the figures above rest on consistent timing, classified kernels and a complete profile" + clocks + "."}
	}
	return append(bs, block{Lines: lines, List: true})
}

// checksPhase names the steps the Other share is of.
func checksPhase(c *analyze.Checks) string {
	for i := range c.Ranks {
		if c.Ranks[i].Rules.Phase == analyze.PhaseDecode {
			return "decode"
		}
	}
	return "all steps'"
}

// profilerDrops is the records the profiler says it dropped, "yes" when
// it says it lost some without a count.
func profilerDrops(tr *analyze.TruncationCheck) string {
	if tr.DroppedRecords == 0 && len(tr.Messages) > 0 {
		return "yes"
	}
	return fmt.Sprint(tr.DroppedRecords)
}

// rankCheckLines says in words what the checks found on one rank.
func rankCheckLines(r *analyze.Report, rc *analyze.RankChecks) []string {
	on := ""
	if len(r.Ranks) > 1 {
		on = fmt.Sprintf("Rank %s: ", rankNum(rc.Rank))
	}
	var lines []string
	tc := &rc.Timing
	if w := tc.Worst; w != nil {
		lines = append(lines, fmt.Sprintf("%s%s the previous event of the same stream (%s ms in all); the largest, %s ms on device %d stream %d in step %d: %s started while %s ran.",
			on, overlapCount(tc.Overlaps), msFine(tc.OverlapUS), msFine(w.OverlapUS), w.Device, w.Stream, w.Step,
			shorten(w.Kernel, maxNameLen), shorten(w.Previous, maxNameLen)))
	}
	if tc.BeforeLaunch > 0 {
		lines = append(lines, fmt.Sprintf("%s%d of %d GPU events start before their CPU launch, by up to %s ms.", on, tc.BeforeLaunch, tc.Launched, msFine(tc.BeforeLaunchMaxUS)))
	}
	if tc.LongerThanStep+tc.LongerThanTrace+tc.OutsideWindow > 0 {
		lines = append(lines, fmt.Sprintf("%s%d GPU events last longer than their step, %d longer than the trace, %d lie outside the trace's window (longest event %s ms).",
			on, tc.LongerThanStep, tc.LongerThanTrace, tc.OutsideWindow, msFine(tc.LongestUS)))
	}
	if n := tc.UnreadableTimes + tc.NegativeDurations; n > 0 {
		lines = append(lines, fmt.Sprintf("%s%d events were dropped on reading: %d with unreadable times, %d with negative durations.", on, n, tc.UnreadableTimes, tc.NegativeDurations))
	}
	for _, k := range rc.Rules.CommLike {
		lines = append(lines, fmt.Sprintf("%s%s looks like communication but is in %s (%d calls, %s ms): add a communication rule with --rules.", on, shorten(k.Name, maxNameLen), k.Bucket, k.Count, msFine(k.US)))
	}
	for _, u := range rc.Rules.UnnamedCollectives {
		why := "no collective args, record_param_comms op, nccl:NAME annotation or collective op at its launch"
		if u.NoLaunch > 0 {
			why = fmt.Sprintf("%d launched before the profile began: no launch in the trace", u.NoLaunch)
		}
		lines = append(lines, fmt.Sprintf("%s%d calls of %s (%s ms) run a collective nothing in the trace names (%s): they are in Other comm.",
			on, u.Count, shorten(u.Name, maxNameLen), msFine(u.US), why))
	}
	for _, m := range rc.Truncation.Messages {
		lines = append(lines, fmt.Sprintf("%sThe profiler wrote: %s", on, m))
	}
	if cs := rc.Truncation.CutStep; cs != nil {
		lines = append(lines, fmt.Sprintf("%sStep %d was cut off by the end of the profile (%d kernels, %d in the other %s steps): left out of the figures.", on, cs.Index, cs.Kernels, cs.MedianKernels, cs.Phase))
	}
	return lines
}

// overlapCount is "1 GPU event overlaps" or "N GPU events overlap".
func overlapCount(n int) string {
	if n == 1 {
		return "1 GPU event overlaps"
	}
	return fmt.Sprintf("%d GPU events overlap", n)
}

// streamOverlapNote says how much of a phase's kernel time GPU events
// overlapping the previous event on their stream count twice ("" when
// none): its busy time, the union, does not, and is the figure to read.
func streamOverlapNote(rk *analyze.Rank, pv phaseView) string {
	var ov float64
	for i := range rk.Steps {
		if s := &rk.Steps[i]; analyze.InPhase(pv.Name, s) {
			ov += s.OverlapUS
		}
	}
	if ov == 0 || pv.Phase.Steps == 0 {
		return ""
	}
	n := float64(pv.Phase.Steps)
	return fmt.Sprintf("Same-stream overlaps count %s ms/step of this kernel time twice (%s of it): GPU busy time, the union, is %s ms/step.",
		msFine(ov/n), pct(ratioPct(ov, pv.Phase.KernelUS)), msFine(pv.Phase.BusyUS/n))
}
