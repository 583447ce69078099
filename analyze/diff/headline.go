package diff

import (
	"fmt"
	"math"
	"strings"
)

// headline writes the first line: the step change and the bucket that
// changed most, e.g. "decode step 21.7 ms -> 12.4 ms (-43%), AllReduce
// 11.17 -> 2.10 ms/step", then, when both runs have several ranks, the
// transfer and wait of communication (a collective's time can fall because
// ranks wait less for each other while its transfer grows), and the noise
// verdict when the step change is not significant.
func headline(d *Diff) string {
	var b strings.Builder
	what := "step"
	if d.Phase != phaseAll {
		what = d.Phase + " step"
	}
	fmt.Fprintf(&b, "%s %s ms -> %s ms (%+.0f%%)", what, FormatMS(d.Step.BaseUS), FormatMS(d.Step.HeadUS), d.Step.DeltaPct)
	if len(d.BucketOrder) > 0 {
		bk := d.Buckets[d.BucketOrder[0]]
		fmt.Fprintf(&b, ", %s %.2f -> %.2f ms/step", bk.Label, bk.BaseUSPerStep/1000, bk.HeadUSPerStep/1000)
	}
	if c := d.Comm; c != nil {
		fmt.Fprintf(&b, "; aligned across ranks, comm transfer %s -> %s ms/step, wait %s -> %s ms/step",
			FormatMS(c.BaseTransferUS), FormatMS(c.HeadTransferUS), FormatMS(c.BaseWaitUS), FormatMS(c.HeadWaitUS))
	}
	if !d.Step.Significant {
		fmt.Fprintf(&b, " [step change: %s]", d.Step.Verdict)
	}
	return b.String()
}

// FormatMS formats microseconds as milliseconds with three significant
// digits at most: 21.7, 2.10, 0.412.
func FormatMS(us float64) string {
	ms := us / 1000
	switch a := math.Abs(ms); {
	case a >= 100:
		return fmt.Sprintf("%.0f", ms)
	case a >= 10:
		return fmt.Sprintf("%.1f", ms)
	case a >= 1:
		return fmt.Sprintf("%.2f", ms)
	}
	return fmt.Sprintf("%.3f", ms)
}
