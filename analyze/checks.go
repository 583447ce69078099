package analyze

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"kinetoscope/analyze/crossrank"
)

// DefaultOtherThreshold is the share of decode kernel time (percent) in
// bucket Other above which the headline says that the rules miss kernels
// (Options.OtherThreshold).
const DefaultOtherThreshold = 5.0

// Thresholds of the checks that are not options.
const (
	// overlapCaveatShare: same-stream overlap above this percent of the
	// headline phase's kernel time makes its kernel-time shares unreliable.
	overlapCaveatShare = 1.0
	// beforeLaunchCaveatShare: GPU events starting before their CPU launch,
	// above this percent of the launched events, say the CPU and GPU clocks
	// disagree.
	beforeLaunchCaveatShare = 1.0
	// clockMatchedShare: a rank whose clock was related but that paired
	// fewer than this percent of its collectives has clock trouble that
	// alignment could not fix.
	clockMatchedShare = 50.0
	// maxListed bounds the kernels and streams each check lists.
	maxListed = 5
)

// Checks are the checks of the data behind a report: timing that cannot
// be right, kernels the rules miss, events the profiler lost or cut off,
// and clocks that disagree across ranks. What makes a figure doubtful is
// also said in Headline.Caveats.
type Checks struct {
	// OtherThreshold is the share of kernel time (percent) in bucket Other
	// above which the rules are said to miss kernels.
	OtherThreshold float64 `json:"other_threshold"`
	// Ranks holds each rank's checks, parallel to Report.Ranks.
	Ranks []RankChecks `json:"ranks"`
	// Clock lists the ranks whose clocks disagree beyond what the
	// cross-rank alignment could fix; empty when they agree or there is one
	// rank.
	Clock []ClockProblem `json:"clock,omitempty"`
}

// RankChecks are the checks of one rank's trace.
type RankChecks struct {
	Rank       int             `json:"rank"`
	Timing     TimingCheck     `json:"timing"`
	Rules      RulesCheck      `json:"rules"`
	Truncation TruncationCheck `json:"truncation"`
}

// RulesCheck says how much kernel time the classification rules left in
// bucket Other.
type RulesCheck struct {
	// Phase names the steps the share is of: decode, or all (every step,
	// when there are no decode steps), as Rank.TopKernels.
	Phase string `json:"phase"`
	Steps int    `json:"steps"` // how many
	// OtherUS is those steps' kernel time in bucket Other; OtherShare its
	// percent of their kernel time.
	OtherUS    float64 `json:"other_us"`
	OtherShare float64 `json:"other_share"`
	// Top lists the unclassified kernels of those steps with the most time
	// (at most 5).
	Top []KernelStat `json:"top,omitempty"`
	// CommLike lists the kernels of the whole trace whose names look like
	// communication (nccl, rccl, allreduce, all_gather, ...) but that no
	// communication rule matched, most time first: communication is
	// undercounted by their time.
	CommLike []KernelStat `json:"comm_like,omitempty"`
	// UnnamedCollectives lists the kernels of the whole trace in Other
	// comm because nothing in it names the collective they run, most time
	// first.
	UnnamedCollectives []UnnamedCollective `json:"unnamed_collectives,omitempty"`
}

// ClockProblem is a rank whose clock disagrees with the lowest rank's
// beyond what the alignment could fix.
type ClockProblem struct {
	Rank int `json:"rank"`
	// OffsetUS is the offset the alignment found (added to this rank's
	// times); 0 when it found none.
	OffsetUS    float64 `json:"offset_us"`
	Collectives int     `json:"collectives"`
	Matched     int     `json:"matched"`
	Problem     string  `json:"problem"`
	// OrderGapUS is the median gap between the ends of this rank's
	// communication kernels and the lowest rank's, paired by their order
	// (later is positive): roughly how far its clock is off when the
	// profiles started together. OrderGapDriftUS is how much that gap
	// grows from the first half of the pairs to the second (clocks that
	// drift apart); OrderPairs the number of pairs.
	OrderGapUS      float64 `json:"order_gap_us"`
	OrderGapDriftUS float64 `json:"order_gap_drift_us"`
	OrderPairs      int     `json:"order_pairs"`
}

// checkRank runs the checks of one rank that read its events; the rank's
// steps, kernel lists and phases are final.
func checkRank(p *rankPass, rk *Rank) RankChecks {
	rc := RankChecks{
		Rank:       rk.Rank,
		Timing:     p.checkTiming(),
		Rules:      p.checkRules(rk),
		Truncation: checkTruncation(p.t.Meta.ProfilerLog, rk.Steps),
	}
	return rc
}

// setOverlaps sets each step's OverlapUS from the rank's checks.
func setOverlaps(p *rankPass, rk *Rank) {
	for s, ns := range p.overlapNS {
		rk.Steps[s].OverlapUS = us(ns)
	}
}

// checkData completes the checks of every rank with those across ranks,
// and gives the headline its caveats.
func checkData(r *Report, passes []*rankPass, a *crossrank.Alignment, opt Options) *Checks {
	c := &Checks{OtherThreshold: opt.OtherThreshold, Ranks: make([]RankChecks, len(passes))}
	if c.OtherThreshold <= 0 {
		c.OtherThreshold = DefaultOtherThreshold
	}
	for i, p := range passes {
		c.Ranks[i] = p.checks
	}
	c.Clock = clockProblems(a, passes)
	if r.Headline != nil {
		r.Headline.Caveats = c.caveats(r, passes)
	}
	return c
}

// caveats says, one sentence each, what makes the report's figures
// doubtful.
func (c *Checks) caveats(r *Report, passes []*rankPass) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	add(c.overlapCaveat(r, passes))
	add(c.impossibleCaveat(r))
	add(c.otherCaveat(r))
	add(c.commLikeCaveat(r))
	add(c.unnamedCollCaveat(r))
	add(c.droppedCaveat(r))
	add(c.cutCaveat(r))
	add(c.clockCaveat())
	return out
}

// rankLabel is " on rank N" when the report has several ranks, else "".
func rankLabel(r *Report, rank int) string {
	if len(r.Ranks) < 2 {
		return ""
	}
	return " on rank " + rankName(rank)
}

// msText formats microseconds as milliseconds for a caveat.
func msText(us float64) string {
	switch a := math.Abs(us); {
	case a >= 1_000_000:
		return fmt.Sprintf("%.2f s", us/1e6)
	case a >= 100_000:
		return fmt.Sprintf("%.0f ms", us/1e3)
	case a >= 1_000:
		return fmt.Sprintf("%.1f ms", us/1e3)
	case a >= 10:
		return fmt.Sprintf("%.2f ms", us/1e3)
	}
	return fmt.Sprintf("%.4f ms", us/1e3)
}

// otherCaveat names the biggest unclassified kernels of the rank with the
// largest share in Other, when that share passes the threshold.
func (c *Checks) otherCaveat(r *Report) string {
	worst := -1
	for i := range c.Ranks {
		rc := &c.Ranks[i].Rules
		if rc.OtherShare > c.OtherThreshold && (worst < 0 || rc.OtherShare > c.Ranks[worst].Rules.OtherShare) {
			worst = i
		}
	}
	if worst < 0 {
		return ""
	}
	rc := &c.Ranks[worst].Rules
	phase := rc.Phase + " "
	if rc.Phase == "all" {
		phase = ""
	}
	var names []string
	for _, k := range rc.Top {
		names = append(names, fmt.Sprintf("%s (%s/step)", shortName(k.Name), msText(k.US/float64(max(rc.Steps, 1)))))
	}
	return fmt.Sprintf("the rules leave %.1f%% of %skernel time in Other%s (above %.0f%%), so every share is of partly unclassified time: "+
		"biggest unclassified kernels %s; classify them with --rules FILE (rules in the format of analyze/rules.yaml, tried first)",
		rc.OtherShare, phase, rankLabel(r, c.Ranks[worst].Rank), c.OtherThreshold, strings.Join(names, ", "))
}

// commLikeCaveat names the kernels that look like communication but that
// no communication rule matched, on every rank.
func (c *Checks) commLikeCaveat(r *Report) string {
	var ks []KernelStat
	seen := make(map[string]int)
	for i := range c.Ranks {
		for _, k := range c.Ranks[i].Rules.CommLike {
			if j, ok := seen[k.Name]; ok {
				ks[j].US += k.US
				ks[j].Count += k.Count
				continue
			}
			seen[k.Name] = len(ks)
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return ""
	}
	sortKernelStats(ks)
	var names []string
	for i, k := range ks {
		if i == maxListed {
			names = append(names, fmt.Sprintf("%d more", len(ks)-maxListed))
			break
		}
		names = append(names, fmt.Sprintf("%s (%d calls, %s in all, bucket %s)", shortName(k.Name), k.Count, msText(k.US), k.Bucket))
	}
	k := ks[0]
	return fmt.Sprintf("%s like communication but no communication rule matched, so communication is undercounted: %s; "+
		"classify with --rules FILE, e.g. a rule {bucket: %s, pattern: '%s'}",
		pluralWord(len(ks), "kernel name looks", "kernel names look"), strings.Join(names, ", "), commBucketGuess(k.Name), rulePattern(k.Name))
}

// pluralWord is "1 kernel name" or "N kernel names".
func pluralWord(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// rulePattern is a rule pattern matching name: the name quoted, its first
// 60 bytes when longer, single quotes doubled for YAML.
func rulePattern(name string) string {
	if len(name) > 60 {
		name = strings.ToValidUTF8(name[:60], "")
	}
	return strings.ReplaceAll(regexp.QuoteMeta(name), "'", "''")
}

// shortName cuts a kernel name for a caveat.
func shortName(name string) string {
	const n = 80
	if len(name) <= n {
		return name
	}
	return strings.ToValidUTF8(name[:n], "") + "..."
}

// sortKernelStats orders kernels by time, most first, then by name.
func sortKernelStats(ks []KernelStat) {
	slices.SortFunc(ks, func(a, b KernelStat) int {
		switch {
		case a.US > b.US:
			return -1
		case a.US < b.US:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// overlapCaveat names the stream with the most same-stream overlap when
// the overlap inflates the headline phase's kernel time.
func (c *Checks) overlapCaveat(r *Report, passes []*rankPass) string {
	phase := r.Headline.Phase
	worst, worstShare := -1, 0.0
	for i, p := range passes {
		var ov, kernel float64
		for j := range r.Ranks[i].Steps {
			if s := &r.Ranks[i].Steps[j]; inPhase(phase, s) && j < len(p.overlapNS) {
				ov += us(p.overlapNS[j])
				kernel += s.KernelUS
			}
		}
		if share := pctOf(ov, kernel); share > overlapCaveatShare && share > worstShare {
			worst, worstShare = i, share
		}
	}
	if worst < 0 {
		return ""
	}
	tc := &c.Ranks[worst].Timing
	s := tc.Streams[0]
	return fmt.Sprintf("%d kernels overlap on stream %d%s (up to %s; %.1f%% of %s kernel time counted twice): kernel-time shares are unreliable here, "+
		"the step's span and GPU busy time (the union of its kernels) are not",
		s.Overlaps, s.Stream, rankLabel(r, c.Ranks[worst].Rank), msText(s.MaxUS), worstShare, phaseWord(phase))
}

// phaseWord names a phase's steps in a sentence: "decode", or "step" for
// every step.
func phaseWord(phase string) string {
	if phase == "all" || phase == "" {
		return "step"
	}
	return phase
}

// impossibleCaveat says when GPU events last longer than the trace, lie
// outside it, or start before their launch.
func (c *Checks) impossibleCaveat(r *Report) string {
	for i := range c.Ranks {
		tc := &c.Ranks[i].Timing
		on := rankLabel(r, c.Ranks[i].Rank)
		switch {
		case tc.LongerThanTrace > 0:
			return fmt.Sprintf("%s longer than the whole trace%s (the longest %s): durations are wrong, and so is the kernel time they are in",
				pluralWord(tc.LongerThanTrace, "GPU event lasts", "GPU events last"), on, msText(tc.LongestUS))
		case tc.OutsideWindow > 0:
			return fmt.Sprintf("%s more than a second outside the trace's CPU window%s: timestamps are wrong",
				pluralWord(tc.OutsideWindow, "GPU event lies", "GPU events lie"), on)
		case tc.Launched > 0 && pctOf(float64(tc.BeforeLaunch), float64(tc.Launched)) > beforeLaunchCaveatShare:
			return fmt.Sprintf("%d of %d GPU events start before their CPU launch%s (by up to %s): the CPU and GPU clocks disagree, so launch delays and CPU-side step boundaries are off",
				tc.BeforeLaunch, tc.Launched, on, msText(tc.BeforeLaunchMaxUS))
		}
	}
	return ""
}

// droppedCaveat says when the profiler lost events.
func (c *Checks) droppedCaveat(r *Report) string {
	for i := range c.Ranks {
		tc := &c.Ranks[i].Truncation
		if len(tc.Messages) == 0 {
			continue
		}
		what := "says it lost events"
		if tc.DroppedRecords > 0 {
			what = fmt.Sprintf("dropped %d activity records", tc.DroppedRecords)
		}
		return fmt.Sprintf("the profiler %s%s (%q): kernels are missing, so counts and times are low", what, rankLabel(r, c.Ranks[i].Rank), tc.Messages[0])
	}
	return ""
}

// cutCaveat says when the last step was cut off and left out.
func (c *Checks) cutCaveat(r *Report) string {
	var ranks []string
	var first *CutStep
	for i := range c.Ranks {
		if cs := c.Ranks[i].Truncation.CutStep; cs != nil {
			ranks = append(ranks, rankName(c.Ranks[i].Rank))
			if first == nil {
				first = cs
			}
		}
	}
	if first == nil {
		return ""
	}
	on := ""
	switch {
	case len(r.Ranks) < 2:
	case len(ranks) == 1:
		on = " on rank " + ranks[0]
	default:
		on = " on ranks " + strings.Join(ranks, ", ")
	}
	return fmt.Sprintf("the profile ends inside step %d%s (%d kernels, against %d in the other %s steps): it is left out of the figures",
		first.Index, on, first.Kernels, first.MedianKernels, first.Phase)
}
