package render

import (
	"fmt"
	"strings"

	"kinetoscope/analyze/diff"
)

// DiffHeadlineText returns a diff's first line: the step change and the
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
	if len(d.BucketOrder) > 0 {
		bk := d.Buckets[d.BucketOrder[0]]
		fmt.Fprintf(&b, ", %s %s -> %s ms/step", bk.Label, msSig(bk.BaseUSPerStep), msSig(bk.HeadUSPerStep))
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
