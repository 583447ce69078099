package analyze

import (
	"fmt"
	"math"
	"slices"

	"kinetoscope/analyze/crossrank"
)

// clockProblems lists the ranks whose clocks the alignment could not put
// on the lowest rank's: none of their collectives could be related to it,
// or, related, fewer than half of them paired (a shared clock that is not
// one, clocks that drift apart). Each is said with the offset found: the
// alignment's estimate, and the median gap between the ends of its
// collectives and the lowest rank's, paired by their order. nil for one
// rank. passes is parallel to a.Ranks.
func clockProblems(a *crossrank.Alignment, passes []*rankPass) []ClockProblem {
	if a == nil || len(a.Ranks) < 2 || len(passes) != len(a.Ranks) {
		return nil
	}
	root := 0
	for i, rc := range a.Ranks {
		if rc.Rank < a.Ranks[root].Rank {
			root = i
		}
	}
	var out []ClockProblem
	for i, rc := range a.Ranks {
		if i == root || rc.Collectives == 0 {
			continue
		}
		cp := ClockProblem{Rank: rc.Rank, OffsetUS: us(rc.OffsetNS), Collectives: rc.Collectives, Matched: rc.Matched}
		switch {
		case !rc.ClockKnown:
			cp.Problem = "no clock offset pairs its collectives with the other ranks'"
		case pctOf(float64(rc.Matched), float64(rc.Collectives)) < clockMatchedShare:
			how := "on the clock it shares with them (one baseTimeNanoseconds)"
			if !rc.ClockShared {
				how = fmt.Sprintf("at the estimated offset of %s", msText(us(rc.OffsetNS)))
			}
			cp.Problem = fmt.Sprintf("%s only %d of its %d collectives end together with the other ranks'", how, rc.Matched, rc.Collectives)
		default:
			continue
		}
		cp.OrderGapUS, cp.OrderGapDriftUS, cp.OrderPairs = orderGap(passes[root], passes[i], a.Ranks[root].TimeBaseNS, rc.TimeBaseNS)
		out = append(out, cp)
	}
	return out
}

// orderGap pairs the communication kernels of two ranks by their order and
// returns the median gap between their ends (other minus root, on their
// absolute clocks), how much the median of the second half of the pairs
// differs from that of the first (drift), and the number of pairs.
func orderGap(root, other *rankPass, rootBase, otherBase int64) (gapUS, driftUS float64, n int) {
	a, b := commEnds(root, rootBase), commEnds(other, otherBase)
	n = min(len(a), len(b))
	if n == 0 {
		return 0, 0, 0
	}
	gaps := make([]int64, n)
	for k := range n {
		gaps[k] = b[k] - a[k]
	}
	first, second := append([]int64(nil), gaps[:n/2]...), append([]int64(nil), gaps[n/2:]...)
	gapUS = us(quantile(gaps, 0.5))
	if len(first) > 0 {
		driftUS = us(quantile(second, 0.5) - quantile(first, 0.5))
	}
	return gapUS, driftUS, n
}

// commEnds returns the ends of p's communication kernels in time order,
// plus base.
func commEnds(p *rankPass, base int64) []int64 {
	var ends []int64
	for i, ev := range p.t.GPU.All() {
		if p.tab.isComm(p.bucketOf[i]) {
			ends = append(ends, base+ev.End())
		}
	}
	slices.Sort(ends)
	return ends
}

// driftCaveatUS: a change of the order gap smaller than this is not said.
const driftCaveatUS = 10.0

// clockCaveat says which ranks' clocks disagree beyond alignment.
func (c *Checks) clockCaveat() string {
	if len(c.Clock) == 0 {
		return ""
	}
	p := c.Clock[0]
	text := fmt.Sprintf("the clock of rank %s disagrees with the other ranks' beyond what alignment fixes: %s", rankName(p.Rank), p.Problem)
	if p.OrderPairs > 0 {
		when := "later"
		if p.OrderGapUS < 0 {
			when = "earlier"
		}
		text += fmt.Sprintf("; paired by order, its collectives end %s %s than theirs (median of %d", msText(math.Abs(p.OrderGapUS)), when, p.OrderPairs)
		if math.Abs(p.OrderGapDriftUS) >= driftCaveatUS {
			text += fmt.Sprintf(", drifting %s from the first half to the second", msText(p.OrderGapDriftUS))
		}
		text += ")"
	}
	text += ", so its transfer and wait are not split"
	if n := len(c.Clock) - 1; n > 0 {
		text += fmt.Sprintf(" (and %s more)", pluralWord(n, "rank", "ranks"))
	}
	return text
}
