package analyze

import (
	"fmt"

	"kinetoscope/analyze/crossrank"
)

// clockProblems lists the ranks whose clocks the alignment could not put
// on the lowest rank's: none of their collectives could be related to it,
// or, related, fewer than half of them paired (the clocks drift, or the
// offset found is wrong for most of the trace). nil for one rank.
func clockProblems(a *crossrank.Alignment) []ClockProblem {
	if a == nil || len(a.Ranks) < 2 {
		return nil
	}
	var out []ClockProblem
	for _, rc := range a.Ranks {
		if rc.Collectives == 0 {
			continue
		}
		cp := ClockProblem{Rank: rc.Rank, OffsetUS: us(rc.OffsetNS), Collectives: rc.Collectives, Matched: rc.Matched}
		switch {
		case !rc.ClockKnown:
			cp.Problem = "its clock could not be related to the other ranks': no offset pairs its collectives with theirs"
		case pctOf(float64(rc.Matched), float64(rc.Collectives)) < clockMatchedShare:
			how := "the shared clock"
			if !rc.ClockShared {
				how = fmt.Sprintf("the estimated offset of %s", msText(us(rc.OffsetNS)))
			}
			cp.Problem = fmt.Sprintf("on %s only %d of its %d collectives end together with the other ranks'", how, rc.Matched, rc.Collectives)
		default:
			continue
		}
		out = append(out, cp)
	}
	return out
}

// clockCaveat says which ranks' clocks disagree beyond alignment.
func (c *Checks) clockCaveat() string {
	if len(c.Clock) == 0 {
		return ""
	}
	p := c.Clock[0]
	text := fmt.Sprintf("rank %s: %s, so transfer and wait are not split for most of its communication", rankName(p.Rank), p.Problem)
	if n := len(c.Clock) - 1; n > 0 {
		text += fmt.Sprintf(" (and %s more)", pluralWord(n, "rank", "ranks"))
	}
	return text
}
