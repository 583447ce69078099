package crossrank

import (
	"math"
	"path/filepath"
	"sort"
	"testing"

	"kinetoscope/sampletraces"
)

// truthFile is the part of sampletraces/real/*/truth.json the test uses.
type truthFile struct {
	WorldSize      int `json:"world_size"`
	StepsTotal     int `json:"steps_total"`
	PerRankPerStep struct {
		Collectives int `json:"collectives"`
	} `json:"per_rank_per_step"`
}

// independent is the transfer/wait split computed from the raw JSON by the
// test alone: NCCL kernels per rank in start order, paired by index.
type independent struct {
	n                  int
	kernel, xfer, wait []float64 // ns, by rank
	late               []int     // instances where the rank started last
}

func computeIndependent(t *testing.T, paths []string) independent {
	t.Helper()
	var ks [][]rawEvent
	var bases []int64
	for _, p := range paths {
		raw := readRaw(t, p)
		k := raw.ncclKernels()
		sort.SliceStable(k, func(i, j int) bool { return k[i].TS < k[j].TS })
		ks = append(ks, k)
		base := int64(0)
		if raw.BaseTimeNanoseconds > 0 && k[0].TS < 1e14 { // µs since boot, not since 1970
			base = raw.BaseTimeNanoseconds
		}
		bases = append(bases, base)
	}
	// Times are taken relative to the first rank's base: added in float64,
	// a base of 1.8e18 ns would round them to 256 ns.
	for q := len(bases) - 1; q >= 0; q-- {
		bases[q] -= bases[0]
	}
	r := len(paths)
	ind := independent{n: len(ks[0]), kernel: make([]float64, r), xfer: make([]float64, r),
		wait: make([]float64, r), late: make([]int, r)}
	for q := range ks {
		if len(ks[q]) != ind.n {
			t.Fatalf("%s has %d NCCL kernels, %s %d", paths[q], len(ks[q]), paths[0], ind.n)
		}
	}
	for i := range ind.n {
		arrival, firstEnd, last := math.Inf(-1), math.Inf(1), -1
		for q := range ks {
			start := float64(bases[q]) + ks[q][i].TS*1000
			if start > arrival {
				arrival, last = start, q
			}
			firstEnd = math.Min(firstEnd, start+ks[q][i].Dur*1000)
		}
		ind.late[last]++
		xfer := math.Max(firstEnd-arrival, 0)
		for q := range ks {
			d := ks[q][i].Dur * 1000
			ind.kernel[q] += d
			ind.xfer[q] += xfer
			ind.wait[q] += d - xfer
		}
	}
	return ind
}

func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*math.Abs(want) }

// TestRealH200 aligns the project's real two-GPU H200 traces (eager, CUDA
// graph, NCCL through host memory) and checks the result against truth.json
// and against the independent computation.
func TestRealH200(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		t.Run(variant, func(t *testing.T) {
			paths := realPaths(t, variant)
			var truth truthFile
			if err := sampletraces.ReadJSON(filepath.Join(filepath.Dir(paths[0]), "truth.json"), &truth); err != nil {
				t.Fatal(err)
			}
			a, err := Align(readTraces(t, paths...), nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := truth.StepsTotal * truth.PerRankPerStep.Collectives
			if a.Matched != want || a.Unmatched != 0 || a.Clock != ClockShared {
				t.Errorf("matched %d unmatched %d clock %q, want %d 0 shared; %q", a.Matched, a.Unmatched, a.Clock, want, a.Mismatches)
			}
			checkIndependent(t, a, computeIndependent(t, paths))
		})
	}
}

func checkIndependent(t *testing.T, a *Alignment, ind independent) {
	t.Helper()
	if ind.n != a.Matched {
		t.Errorf("independent count %d, matched %d", ind.n, a.Matched)
	}
	for q, r := range a.Ranks {
		kernel, xfer, wait := float64(r.KernelNS), float64(r.TransferNS), float64(r.WaitNS)
		t.Logf("rank %d: %d collectives, kernel %.1f µs = transfer %.1f + wait %.1f", r.Rank, r.Collectives, kernel/1e3, xfer/1e3, wait/1e3)
		if !within(xfer, ind.xfer[q], 0.001) || !within(wait, ind.wait[q], 0.001) || !within(kernel, ind.kernel[q], 0.001) {
			t.Errorf("rank %d: kernel %.0f transfer %.0f wait %.0f ns, independent %.0f %.0f %.0f",
				r.Rank, kernel, xfer, wait, ind.kernel[q], ind.xfer[q], ind.wait[q])
		}
		if !within(xfer+wait, kernel, 0.01) {
			t.Errorf("rank %d: transfer + wait %.0f, kernel %.0f ns", r.Rank, xfer+wait, kernel)
		}
		if !within(xfer, float64(a.Ranks[0].TransferNS), 0.01) {
			t.Errorf("rank %d transfer %.0f, rank %d %.0f ns", r.Rank, xfer, a.Ranks[0].Rank, float64(a.Ranks[0].TransferNS))
		}
	}
	if len(a.Stragglers) == 0 {
		t.Fatal("no straggler")
	}
	top := a.Stragglers[0]
	t.Logf("straggler: rank %d, last %d times, %.1f µs later than the other", top.Rank, top.LateCount, float64(top.LateNS)/1e3)
	if top.LateCount != ind.late[top.Rank] || top.LateCount < ind.late[1-top.Rank] {
		t.Errorf("straggler %+v, independent late counts %v", top, ind.late)
	}
}
