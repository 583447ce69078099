package render

import (
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

func TestDiffHeadlineText(t *testing.T) {
	ar := map[analyze.BucketID]diff.BucketDiff{analyze.AllReduce: {Label: "AllReduce", BaseUSPerStep: 11170, HeadUSPerStep: 2100}}
	tests := []struct {
		d    diff.Diff
		want string
	}{
		{diff.Diff{Phase: "decode", Step: diff.Step{BaseUS: 21700, HeadUS: 12400, DeltaPct: -42.9, Test: diff.Test{Significant: true}},
			Buckets: ar, BucketOrder: []analyze.BucketID{analyze.AllReduce}},
			"decode step 21.7 ms -> 12.4 ms (-43%), AllReduce 11.2 -> 2.10 ms/step"},
		{diff.Diff{Phase: "all", Step: diff.Step{BaseUS: 1000, HeadUS: 1010, DeltaPct: 1, Test: diff.Test{Verdict: "within noise"}}},
			"step 1.00 ms -> 1.01 ms (+1%) [step change: within noise]"},
		{diff.Diff{Phase: "decode", Step: diff.Step{BaseUS: 7090, HeadUS: 1510, DeltaPct: -78.7, Test: diff.Test{Significant: true}},
			Comm: &diff.CommDiff{BaseTransferUS: 58, HeadTransferUS: 61, BaseWaitUS: 2650, HeadWaitUS: 258}},
			"decode step 7.09 ms -> 1.51 ms (-79%); aligned across ranks, comm transfer 0.058 -> 0.061 ms/step, wait 2.65 -> 0.258 ms/step"},
	}
	for _, tt := range tests {
		if got := DiffHeadlineText(&tt.d); got != tt.want {
			t.Errorf("DiffHeadlineText = %q, want %q", got, tt.want)
		}
	}
}
