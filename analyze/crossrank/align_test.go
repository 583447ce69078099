package crossrank

import (
	"math/rand/v2"
	"strings"
	"testing"
)

const t0 = int64(1_700_000_000_000_000_000) // an epoch time in ns

var (
	pair  = []int{0, 1}
	quad  = []int{0, 1, 2, 3}
	late1 = func(r, k int) int64 {
		if r == 1 {
			return 30_000
		}
		return 0
	}
	skew = func(r, k int) int64 { return int64((r*5+k*3)%7) * 6_000 }
)

func dropRange(rank, from, to int) map[[2]int]bool {
	m := map[[2]int]bool{}
	for k := from; k < to; k++ {
		m[[2]int{rank, k}] = true
	}
	return m
}

func concat(xs ...[]instance) []instance {
	var out []instance
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

func TestAlign(t *testing.T) {
	tests := []struct {
		name     string
		s        scenario
		clock    string
		mismatch string // a substring of some mismatch; "" for none
		tolNS    int64  // allowed split error
		offsets  map[int]int64
	}{
		{name: "shared clock", clock: ClockShared, s: scenario{world: 2, files: pair, args: true,
			instances: regular("allreduce", pair, false, 50, t0, 100_000, 4096, late1)}},
		{name: "no args, relative times", clock: ClockShared, s: scenario{world: 2, files: pair, relative: true, compute: true,
			instances: regular("allreduce", pair, false, 50, t0, 100_000, 4096, skew)}},
		{name: "skew on four ranks", clock: ClockShared, s: scenario{world: 4, files: quad, args: true,
			instances: regular("allreduce", quad, false, 60, t0, 100_000, 4096, skew)}},
		{name: "missing rank file", clock: ClockShared, mismatch: "no trace for member rank(s) 2,",
			s: scenario{world: 4, files: []int{0, 1, 3}, args: true,
				instances: regular("allreduce", quad, false, 20, t0, 100_000, 4096, skew)}},
		{name: "rank cut short", clock: ClockShared, mismatch: "unmatched 0:20 1:0",
			s: scenario{world: 2, files: pair, drop: dropRange(1, 30, 50),
				instances: regular("allreduce", pair, false, 50, t0, 100_000, 4096, skew)}},
		{name: "rank starts late", clock: ClockShared, mismatch: "unmatched 0:3 1:0",
			s: scenario{world: 2, files: pair, drop: dropRange(1, 0, 3),
				instances: regular("allreduce", pair, false, 50, t0, 20_000, 4096, skew)}},
		{name: "one lost in the middle", clock: ClockShared, mismatch: "unmatched 0:0 1:1",
			s: scenario{world: 2, files: pair, drop: dropRange(0, 20, 21),
				instances: regular("allreduce", pair, false, 50, t0, 20_000, 4096, late1)}},
		{name: "size mismatch", clock: ClockShared, mismatch: "they differ",
			s: scenario{world: 2, files: pair, args: true, size: map[[2]int]int64{{1, 10}: 999},
				instances: regular("allreduce", pair, false, 50, t0, 100_000, 4096, skew)}},
		{name: "two process groups", clock: ClockShared, s: scenario{world: 4, files: quad, args: true,
			instances: concat(
				regular("allreduce", []int{0, 1}, true, 40, t0, 50_000, 1024, skew),
				regular("allreduce", []int{2, 3}, true, 40, t0+3_000, 50_000, 1024, late1),
				regular("allgather", quad, false, 10, t0+10_000_000, 100_000, 512, skew))}},
		{name: "offset clocks", clock: ClockEstimated, tolNS: 1000,
			offsets: map[int]int64{1: -5_000_000_000, 2: 0, 3: 2_000_000_000},
			s: scenario{world: 4, files: quad, args: true, shift: map[int]int64{1: 5_000_000_000, 3: -2_000_000_000},
				instances: regular("allreduce", quad, false, 60, t0, 100_000, 4096, skew)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			traces := tc.s.traces()
			a, err := Align(traces, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			e := tc.s.want()
			if a.Matched != e.matched || a.Unmatched != e.unmatched {
				t.Errorf("matched %d unmatched %d, want %d %d; mismatches %q", a.Matched, a.Unmatched, e.matched, e.unmatched, a.Mismatches)
			}
			if a.Clock != tc.clock {
				t.Errorf("clock %q, want %q", a.Clock, tc.clock)
			}
			checkMismatch(t, a.Mismatches, tc.mismatch)
			checkSplits(t, &tc.s, a, e, tc.tolNS)
			checkStragglers(t, a, e, tc.tolNS)
			for i, r := range a.Ranks {
				if want, ok := tc.offsets[r.Rank]; ok && abs64(r.OffsetNS-want) > 1000 {
					t.Errorf("rank %d offset %d, want %d", r.Rank, r.OffsetNS, want)
				}
				if r.KernelNS != r.TransferNS+r.WaitNS+r.UnmatchedNS {
					t.Errorf("trace %d: kernel %d != transfer %d + wait %d + unmatched %d", i, r.KernelNS, r.TransferNS, r.WaitNS, r.UnmatchedNS)
				}
			}
		})
	}
}

func checkMismatch(t *testing.T, got []string, want string) {
	t.Helper()
	if want == "" {
		if len(got) > 0 {
			t.Errorf("unexpected mismatches %q", got)
		}
		return
	}
	for _, m := range got {
		if strings.Contains(m, want) {
			return
		}
	}
	t.Errorf("mismatches %q lack %q", got, want)
}

// checkSplits compares every event's split with the expected one and
// checks that unmatched events have none.
func checkSplits(t *testing.T, s *scenario, a *Alignment, e expected, tol int64) {
	t.Helper()
	for _, r := range a.Ranks {
		want := e.split[r.Rank]
		if r.Matched != len(want) {
			t.Errorf("rank %d: %d matched, want %d", r.Rank, r.Matched, len(want))
		}
		for key, idx := range s.index {
			if key[0] != r.Rank {
				continue
			}
			got, ok := r.Split(idx)
			w, wok := want[key[1]]
			if ok != wok {
				t.Errorf("rank %d instance %d: matched %v, want %v", r.Rank, key[1], ok, wok)
				continue
			}
			if abs64(got.WaitNS-w.WaitNS) > tol || abs64(got.TransferNS-w.TransferNS) > tol {
				t.Errorf("rank %d instance %d: split %+v, want %+v", r.Rank, key[1], got, w)
			}
		}
	}
}

func checkStragglers(t *testing.T, a *Alignment, e expected, tol int64) {
	t.Helper()
	if len(a.Stragglers) != len(e.late) {
		t.Errorf("stragglers %+v, want %+v", a.Stragglers, e.late)
		return
	}
	for _, s := range a.Stragglers {
		w := e.late[s.Rank]
		if s.LateCount != w.LateCount || abs64(s.LateNS-w.LateNS) > tol*int64(w.LateCount) {
			t.Errorf("straggler %+v, want %+v", s, w)
		}
	}
}

// TestAlignRandomDamage drops random collectives on random ranks of
// four-rank runs with random arrivals and checks, against the truth, that
// exactly the complete instances are matched and split right. Kernels of
// send/recv need not overlap in time, so only the ends keep apart the
// collectives that lost their partners on either side.
func TestAlignRandomDamage(t *testing.T) {
	kinds := []string{"allreduce", "sendrecv"}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		drop := map[[2]int]bool{}
		for range rng.IntN(12) {
			drop[[2]int{rng.IntN(4), rng.IntN(80)}] = true
		}
		lateness := func(r, k int) int64 { return int64((r*7919+k*104729+int(seed)*31)%40) * 1_000 }
		s := scenario{world: 4, files: quad, args: seed%2 == 0, drop: drop, relative: seed%3 == 0,
			instances: regular(kinds[seed%2], quad, false, 80, t0, 60_000+int64(seed)*1_000, 4096, lateness)}
		a, err := Align(s.traces(), nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		e := s.want()
		if a.Matched != e.matched || a.Unmatched != e.unmatched {
			t.Errorf("seed %d: matched %d unmatched %d, want %d %d", seed, a.Matched, a.Unmatched, e.matched, e.unmatched)
		}
		checkSplits(t, &s, a, e, 0)
	}
}
