package render

import (
	"fmt"
	"strings"

	"kinetoscope/analyze"
)

// PartText says a part of the account in words.
func PartText(name string) string {
	if l, ok := partLooks[name]; ok {
		return l.words
	}
	return name
}

// AccountLeadText is the headline's account clause, from the step-time
// account: the largest part of the slowest rank's step, each rank's figure
// of it where the ranks diverge, and whom each waiting rank waits for and
// why. It begins with ": " and is "" without an account.
func AccountLeadText(h *analyze.Headline) string {
	a := h.Account
	if a == nil {
		return ""
	}
	whose := "the step"
	if h.Ranks > 1 {
		whose = fmt.Sprintf("the step of rank %s, the slowest (%s ms),", rankNum(a.Rank), ms(a.SpanUS))
	}
	text := fmt.Sprintf(": the largest part of %s is %s, %s ms/step (%s of its span", whose, PartText(a.Part), ms(a.PartUS), pct(a.PartShare))
	var others []string
	for _, p := range a.PerRank {
		if p.Rank != a.Rank {
			others = append(others, fmt.Sprintf("rank %s: %s ms/step", rankNum(p.Rank), ms(p.US)))
		}
	}
	if len(others) > 0 {
		text += "; " + strings.Join(others, ", ")
	}
	text += ")"
	for _, w := range a.Waits {
		in := "collectives"
		if w.In != "" {
			in = bucketInfo(nil, w.In).Label
		}
		text += fmt.Sprintf("; rank %s waits %s ms/step in %s for rank %s, whose GPU idles %s ms/step",
			rankNum(w.Rank), ms(w.WaitUS), in, rankNum(w.ForRank), ms(w.ForIdleUS))
		if w.ForCause != "" {
			text += fmt.Sprintf(", mostly %s (%s ms)", strings.TrimPrefix(PartText(w.ForCause), "GPU idle "), ms(w.ForCauseUS))
		}
	}
	return text
}

// AccountFindingText is the account clause of the headline, short, for a
// run list: the largest part of the slowest rank's step with its base, and
// whom the ranks wait for, in the same figures as the headline (ms per
// step of the rank named, and percent of that rank's span). "" without an
// account.
func AccountFindingText(h *analyze.Headline) string {
	a := h.Account
	if a == nil {
		return ""
	}
	who := ""
	if h.Ranks > 1 {
		who = "rank " + rankNum(a.Rank) + ": "
	}
	text := fmt.Sprintf("%s%s %s ms/step (%s of its span)", who, PartText(a.Part), ms(a.PartUS), pct(a.PartShare))
	for _, w := range a.Waits {
		text += fmt.Sprintf("; rank %s waits %s ms/step for rank %s", rankNum(w.Rank), ms(w.WaitUS), rankNum(w.ForRank))
	}
	return text
}

// FindingText is the headline, short, for a run list, in the headline's
// own figures and formats: AccountFindingText, then the leading bucket's
// share of kernel time and time per step.
func FindingText(h *analyze.Headline) string {
	phase := h.Phase + " "
	if h.Phase == "all" || h.Phase == "" {
		phase = ""
	}
	text := fmt.Sprintf("%s %s of %skernel time, %s ms/step", h.Label, pct(h.ShareOfKernel), phase, ms(h.USPerStep))
	if a := AccountFindingText(h); a != "" {
		text = a + "; " + text
	}
	return text
}

// outlierPartText names the largest part of the outlier step's account:
// "; its largest part: GPU idle with the host late, 41.20 ms". "" when the
// step has no account.
func outlierPartText(r *analyze.Report, o *analyze.StepOutlier) string {
	for i := range r.Ranks {
		if r.Ranks[i].Rank != o.Rank {
			continue
		}
		for _, s := range r.Ranks[i].Steps {
			if s.Index == o.Step && s.Account != nil {
				p := s.Account.Largest()
				return fmt.Sprintf("; its largest part: %s, %s ms", PartText(p.Name), ms(p.US))
			}
		}
	}
	return ""
}
