package render

import (
	"strings"
	"testing"

	"kinetoscope/analyze"
)

// The headline's scope and the missing-rank sentence name the ranks
// without a trace, as ranges.
func TestMissingRanksText(t *testing.T) {
	seq := func(lo, hi int) []int {
		var r []int
		for i := lo; i <= hi; i++ {
			r = append(r, i)
		}
		return r
	}
	tests := []struct {
		name           string
		given, missing []int
		scope, text    string
	}{
		{"every rank", []int{0, 1}, nil, "(2 ranks, 32 decode steps)", ""},
		{"one of TP4", []int{0}, seq(1, 3), "(1 rank of 4: no trace for ranks 1-3; 32 decode steps)",
			"No trace for ranks 1-3 of this run of 4 ranks: every figure is of rank 0 alone, and no collective can be split into transfer and wait."},
		{"one of TP2", []int{1}, []int{0}, "(1 rank of 2: no trace for rank 0; 32 decode steps)",
			"No trace for rank 0 of this run of 2 ranks: every figure is of rank 1 alone"},
		{"2 and 5 of 8", []int{2, 5}, []int{0, 1, 3, 4, 6, 7}, "(2 ranks of 8: no trace for ranks 0-1, 3-4, 6-7; 32 decode steps)",
			"No trace for ranks 0-1, 3-4, 6-7 of this run of 8 ranks: every figure is of ranks 2, 5 only"},
	}
	for _, tc := range tests {
		r := &analyze.Report{MissingRanks: tc.missing, Headline: &analyze.Headline{Bucket: analyze.AllReduce, Label: "AllReduce",
			Steps: 32, Ranks: len(tc.given), Phase: "decode"}}
		for _, g := range tc.given {
			r.Ranks = append(r.Ranks, analyze.Rank{Rank: g})
		}
		if h := HeadlineText(r); !strings.HasSuffix(h, tc.scope) {
			t.Errorf("%s: headline %q, want it to end %q", tc.name, h, tc.scope)
		}
		if m := MissingRanksText(r); !strings.HasPrefix(m, tc.text) || (tc.text == "") != (m == "") {
			t.Errorf("%s: %q, want %q", tc.name, m, tc.text)
		}
	}
}
