package diff

import (
	"strconv"
	"testing"

	"kinetoscope/analyze"
)

// benchReport is a run of 8 ranks with n decode steps each, every bucket
// used, as a large profile would be.
func benchReport(n int, span float64) *analyze.Report {
	var ranks []analyze.Rank
	for r := range 8 {
		steps := decodeSteps(n, span, span/2, span/4, span/50)
		for i := range steps {
			for _, b := range analyze.Buckets() {
				if _, ok := steps[i].buckets[b.ID]; !ok {
					steps[i].buckets[b.ID] = float64(10 + i%7)
				}
			}
		}
		ranks = append(ranks, makeRank(r, "H100", steps, nil))
	}
	return makeReport("bench", ranks...)
}

func BenchmarkCompare(b *testing.B) {
	for _, n := range []int{100, 1000} {
		base, head := benchReport(n, 20000), benchReport(n, 19000)
		b.Run(strconv.Itoa(n)+"steps", func(b *testing.B) {
			for b.Loop() {
				if _, err := Compare(base, head, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
