package render

import (
	"strings"
	"testing"
)

// The ranks chart draws every rank up to maxRankBars; past that it draws
// the slowest and fastest ranks and says so, so a run of 10,000 ranks
// costs as much to draw as one of 32.
func TestRanksSummarisesManyRanks(t *testing.T) {
	for _, tc := range []struct {
		ranks, bars int
		note        bool
	}{
		{8, 8, false},
		{maxRankBars, maxRankBars, false},
		{maxRankBars + 1, maxRankBars, true},
		{2000, maxRankBars, true},
	} {
		r := fakeReport(tc.ranks, 4, 2)
		svg, err := Ranks(r, SVG)
		if err != nil {
			t.Fatalf("%d ranks: %v", tc.ranks, err)
		}
		_, _, texts := parseSVG(t, svg)
		ticks := 0
		for _, line := range strings.Split(texts, "\n") {
			if strings.HasPrefix(line, "rank ") {
				ticks++
			}
		}
		text := strings.ReplaceAll(texts, "\n", " ")
		if got := ticks; got != tc.bars {
			t.Errorf("%d ranks: %d rank labels, want %d bars", tc.ranks, got, tc.bars)
		}
		// fakeReport makes the last rank the slowest and rank 0 the fastest:
		// both are drawn whatever the number of ranks.
		for _, want := range []string{"rank 0", "rank " + rankID(tc.ranks-1)} {
			if !strings.Contains(text, want) {
				t.Errorf("%d ranks: no %q", tc.ranks, want)
			}
		}
		if note := strings.Contains(text, "showing the 16 with the most"); note != tc.note {
			t.Errorf("%d ranks: summary note %v, want %v", tc.ranks, note, tc.note)
		}
	}
}
