package crossrank

import (
	"testing"

	"kinetoscope/ingest"
)

// benchTraces builds 8 ranks x 100k allreduces with collective args, a
// compute kernel before each and skewed arrivals; rank r's clock is shifted
// by r*shift ns.
func benchTraces(shift int64) []*ingest.Trace {
	ranks := []int{0, 1, 2, 3, 4, 5, 6, 7}
	shifts := map[int]int64{}
	for _, r := range ranks {
		shifts[r] = int64(r) * shift
	}
	s := scenario{world: 8, files: ranks, args: true, compute: true, shift: shifts,
		instances: regular("allreduce", ranks, false, 100_000, t0, 40_000, 4096, skew)}
	return s.traces()
}

func benchAlign(b *testing.B, shift int64) {
	traces := benchTraces(shift)
	b.ResetTimer()
	for b.Loop() {
		a, err := Align(traces, nil, Options{})
		if err != nil || a.Matched != 100_000 {
			b.Fatalf("matched %d, err %v", a.Matched, err)
		}
	}
}

// BenchmarkAlign matches 8 ranks x 100k collectives on a shared clock, the
// size the issue asks to handle under a second on one core.
func BenchmarkAlign(b *testing.B) { benchAlign(b, 0) }

// BenchmarkAlignEstimated is BenchmarkAlign with every rank on its own
// clock, so that each offset is estimated and the pairing done twice.
func BenchmarkAlignEstimated(b *testing.B) { benchAlign(b, 1_000_020_000) }

// BenchmarkClassifyBaseline is the baseline for BenchmarkAlign: one pass
// over the same traces' GPU events calling defaultClassify, the least any
// analysis of them pays.
func BenchmarkClassifyBaseline(b *testing.B) {
	traces := benchTraces(0)
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for _, t := range traces {
			for _, ev := range t.GPU.All() {
				if _, ok := defaultClassify(t, 0, ev); ok {
					n++
				}
			}
		}
		if n != 800_000 {
			b.Fatalf("%d collectives", n)
		}
	}
}

// BenchmarkAlignRealEager aligns the real two-GPU eager H200 run.
func BenchmarkAlignRealEager(b *testing.B) {
	var traces []*ingest.Trace
	for _, p := range realPaths(b, "eager") {
		t, err := ingest.ReadFile(p, ingest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		traces = append(traces, t)
	}
	b.ResetTimer()
	for b.Loop() {
		if a, err := Align(traces, nil, Options{}); err != nil || a.Matched != 297 {
			b.Fatalf("matched %d, err %v", a.Matched, err)
		}
	}
}

// BenchmarkReadRealEager is the baseline for BenchmarkAlignRealEager:
// reading the same two traces with ingest.
func BenchmarkReadRealEager(b *testing.B) {
	paths := realPaths(b, "eager")
	for b.Loop() {
		for _, p := range paths {
			if _, err := ingest.ReadFile(p, ingest.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
