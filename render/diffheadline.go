package render

import (
	"fmt"
	"math"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// DiffHeadlineText returns a diff's first line: the step change, the part
// of the step-time account that changed most (diffAccountText), the
// bucket that changed most, e.g. "decode step 21.7 ms -> 12.4 ms (-43%),
// AllReduce 11.17 -> 2.10 ms/step", then, when both runs have several
// ranks, the transfer and wait of communication (a collective's time can
// fall because ranks wait less for each other while its transfer grows),
// and the noise verdict when the step change is not significant.
func DiffHeadlineText(d *diff.Diff) string {
	var b strings.Builder
	what := "step"
	if d.Phase != "all" {
		what = d.Phase + " step"
	}
	fmt.Fprintf(&b, "%s %s ms -> %s ms (%+.0f%%)", what, msSig(d.Step.BaseUS), msSig(d.Step.HeadUS), d.Step.DeltaPct)
	b.WriteString(diffAccountText(d))
	if len(d.BucketOrder) > 0 {
		bk := d.Buckets[d.BucketOrder[0]]
		sep := ", "
		if d.Account != nil {
			sep = "; of the buckets, "
		}
		fmt.Fprintf(&b, "%s%s %s -> %s ms/step", sep, bk.Label, msSig(bk.BaseUSPerStep), msSig(bk.HeadUSPerStep))
	}
	if c := d.Comm; c != nil {
		fmt.Fprintf(&b, "; aligned across ranks, comm transfer %s -> %s ms/step, wait %s -> %s ms/step",
			msSig(c.BaseTransferUS), msSig(c.HeadTransferUS), msSig(c.BaseWaitUS), msSig(c.HeadWaitUS))
	}
	if !d.Step.Significant {
		fmt.Fprintf(&b, " [step change: %s]", d.Step.Verdict)
	}
	return b.String()
}

// diffAccountText names the part of the step-time account that changed
// most (GPU idle by cause included), with its change and, when the noise
// test does not call it significant, its verdict: "; most of the change is
// GPU idle with the host late, 1.65 -> 3.77 ms/step (+2.12 ms)". "" without
// an account on both sides.
func diffAccountText(d *diff.Diff) string {
	a := d.Account
	if a == nil || len(a.Order) == 0 {
		return ""
	}
	p := a.Part(a.Order[0])
	text := fmt.Sprintf("; the part that changed most: %s, %s -> %s ms/step (%s ms)", PartText(p.Name),
		msSig(p.BaseUS), msSig(p.HeadUS), diffSigned(msSig, p.DeltaUS))
	if !p.Significant {
		text += fmt.Sprintf(" [%s]", p.Verdict)
	}
	if p.Name == analyze.PartWait {
		text += diffWaitText(d)
	}
	return text
}

// diffWaitText follows a change of communication wait to its cause: the
// rank whose wait changed most, the rank it waits for, and that rank's
// largest idle cause on both sides. "" when the ranks do not tell.
func diffWaitText(d *diff.Diff) string {
	base, head := accountsByRank(d.Base.Accounts), accountsByRank(d.Head.Accounts)
	waiter, most := -1, 0.0
	for rank, b := range base {
		if h, ok := head[rank]; ok && math.Abs(h.WaitUS-b.WaitUS) > most {
			waiter, most = rank, math.Abs(h.WaitUS-b.WaitUS)
		}
	}
	if waiter < 0 {
		return ""
	}
	late, lateUS := -1, 0.0
	for _, w := range base[waiter].WaitFor {
		if w.Rank != waiter && w.US > lateUS {
			late, lateUS = w.Rank, w.US
		}
	}
	lb, okb := base[late]
	lh, okh := head[late]
	if !okb || !okh {
		return ""
	}
	cause := lb.LargestIdle()
	return fmt.Sprintf(": rank %s waits for rank %s, whose %s went %s -> %s ms/step", rankNum(waiter), rankNum(late),
		PartText(cause.Name), msSig(cause.US), msSig(lh.Part(cause.Name)))
}

// accountsByRank indexes a side's accounts by rank.
func accountsByRank(as []diff.RankAccount) map[int]*analyze.Account {
	m := make(map[int]*analyze.Account, len(as))
	for _, a := range as {
		m[a.Rank] = a.Account
	}
	return m
}
