package crossrank

import "testing"

// BenchmarkAlign matches 8 ranks x 100k collectives (allreduce with
// collective args, a compute kernel before each, skewed arrivals) on a
// shared clock, the size the issue asks to handle under a second.
func BenchmarkAlign(b *testing.B) {
	ranks := []int{0, 1, 2, 3, 4, 5, 6, 7}
	s := scenario{world: 8, files: ranks, args: true, compute: true,
		instances: regular("allreduce", ranks, false, 100_000, t0, 40_000, 4096, skew)}
	traces := s.traces()
	b.ResetTimer()
	for b.Loop() {
		a, err := Align(traces, nil, Options{})
		if err != nil || a.Matched != 100_000 {
			b.Fatalf("matched %d, err %v", a.Matched, err)
		}
	}
}

// BenchmarkAlignEstimated is BenchmarkAlign with every rank on its own
// clock, so that each offset is estimated and the pairing done twice.
func BenchmarkAlignEstimated(b *testing.B) {
	ranks := []int{0, 1, 2, 3, 4, 5, 6, 7}
	shift := map[int]int64{}
	for _, r := range ranks {
		shift[r] = int64(r) * 1_000_020_000
	}
	s := scenario{world: 8, files: ranks, args: true, compute: true, shift: shift,
		instances: regular("allreduce", ranks, false, 100_000, t0, 40_000, 4096, skew)}
	traces := s.traces()
	b.ResetTimer()
	for b.Loop() {
		a, err := Align(traces, nil, Options{})
		if err != nil || a.Matched != 100_000 {
			b.Fatalf("matched %d, err %v", a.Matched, err)
		}
	}
}

// BenchmarkClassifyBaseline is the baseline for BenchmarkAlign: one pass
// over the same traces' GPU events calling Classify, the least any
// analysis of them pays.
func BenchmarkClassifyBaseline(b *testing.B) {
	ranks := []int{0, 1, 2, 3, 4, 5, 6, 7}
	s := scenario{world: 8, files: ranks, args: true, compute: true,
		instances: regular("allreduce", ranks, false, 100_000, t0, 40_000, 4096, skew)}
	traces := s.traces()
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for _, t := range traces {
			for _, ev := range t.GPU.All() {
				if _, ok := Classify(t, ev); ok {
					n++
				}
			}
		}
		if n != 800_000 {
			b.Fatalf("%d collectives", n)
		}
	}
}
