package render

import (
	"fmt"
	"strings"

	"kinetoscope/analyze"
)

// MissingRanksText says which ranks of the run have no trace
// (Report.MissingRanks) and what that means for every figure, e.g. "No
// trace for ranks 1-3 of this run of 4 ranks: every figure is of rank 0
// alone, and no collective can be split into transfer and wait. Give
// every rank's file to see them all."; "" when every rank has a trace.
func MissingRanksText(r *analyze.Report) string {
	if len(r.MissingRanks) == 0 {
		return ""
	}
	given := make([]int, 0, len(r.Ranks))
	for _, rk := range r.Ranks {
		given = append(given, rk.Rank)
	}
	of := "of rank " + rankRanges(given) + " alone"
	if len(given) > 1 {
		of = "of ranks " + rankRanges(given) + " only"
	}
	return fmt.Sprintf("No trace for %s of this run of %s: every figure is %s, and no collective can be split into transfer and wait. Give every rank's file to see them all.",
		ranksText(r.MissingRanks), plural(len(r.Ranks)+len(r.MissingRanks), "rank"), of)
}

// rankScope is the headline's scope of ranks: "2 ranks", or with ranks
// missing "1 rank of 4: no trace for ranks 1-3".
func rankScope(r *analyze.Report, ranks int) string {
	s := plural(ranks, "rank")
	if len(r.MissingRanks) > 0 {
		s += fmt.Sprintf(" of %d: no trace for %s;", len(r.Ranks)+len(r.MissingRanks), ranksText(r.MissingRanks))
	} else {
		s += ","
	}
	return s
}

// ranksText names ranks in ranges: "rank 1", "ranks 1-3, 5".
func ranksText(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + rankRanges(ranks)
	}
	return "ranks " + rankRanges(ranks)
}

// rankRanges writes sorted ranks as ranges: "0-3, 6, 8-9".
func rankRanges(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		} else {
			parts = append(parts, rankNum(ranks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
