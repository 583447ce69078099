package crossrank

import (
	"strings"
	"testing"

	"kinetoscope/ingest"
)

func TestTimeBaseFor(t *testing.T) {
	const base = int64(1_711_964_646_000_000_000)
	tests := []struct {
		name     string
		base, ts int64
		want     int64
	}{
		{"epoch times, no base", 0, 1_682_725_898_094_377_000, 0},
		{"epoch times with a base", base, 1_682_725_898_094_377_000, 0},
		{"relative times", base, 4_458_676_388_068_751, base},
		{"relative times, no base", 0, 4_458_676_388_068_751, 0},
	}
	for _, tc := range tests {
		if got := timeBaseFor(tc.base, tc.ts); got != tc.want {
			t.Errorf("%s: timeBaseFor(%d, %d) = %d, want %d", tc.name, tc.base, tc.ts, got, tc.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	tests := map[string]string{
		"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)":         "allreduce",
		"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)": "sendrecv",
		"_allgather_base":                 "allgather",
		"reduce_scatter_tensor":           "reducescatter",
		"all_to_all":                      "alltoall",
		"ncclDevKernel_Broadcast_RING_LL": "broadcast",
		"ncclDevKernel_Generic":           "comm_other",
	}
	for name, want := range tests {
		if got := kindOf(name); got != want {
			t.Errorf("kindOf(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	tr := &ingest.Trace{Strings: ingest.NewStrings()}
	tr.Collectives = []ingest.CollectiveArgs{{Name: tr.Strings.Intern("allgather")}}
	tests := []struct {
		name string
		kind ingest.GPUKind
		coll int32
		want string
	}{
		{"ampere_bf16_s16816gemm", ingest.KindKernel, ingest.NoCollective, ""},
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL", ingest.KindKernel, ingest.NoCollective, "allreduce"},
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL", ingest.KindMemcpy, ingest.NoCollective, ""},
		{"ncclDevKernel_Generic", ingest.KindKernel, 0, "allgather"},
		{"NCCL_something", ingest.KindKernel, ingest.NoCollective, "comm_other"},
	}
	for _, tc := range tests {
		ev := &ingest.GPUEvent{Name: tr.Strings.Intern(tc.name), Kind: tc.kind, Coll: tc.coll}
		got, ok := defaultClassify(tr, 0, ev)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("classify(%q, %v) = %q, %v; want %q", tc.name, tc.kind, got, ok, tc.want)
		}
	}
}

func TestSingleRank(t *testing.T) {
	s := scenario{world: 1, files: []int{0}, instances: regular("allreduce", []int{0}, false, 10, t0, 50_000, 64, late1)}
	a, err := Align(s.traces(), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := a.Ranks[0]
	if a.Clock != ClockSingle || a.Note != SingleRankNote || a.Matched != 0 || r.Collectives != 10 || r.UnmatchedNS != r.KernelNS {
		t.Errorf("single rank: clock %q note %q matched %d, rank %+v", a.Clock, a.Note, a.Matched, r)
	}
	if _, ok := r.Split(s.index[[2]int{0, 0}]); ok {
		t.Error("a single rank's collective was split")
	}
}

func TestRankErrors(t *testing.T) {
	s := scenario{world: 2, files: pair, instances: regular("allreduce", pair, false, 5, t0, 50_000, 64, late1)}
	traces := s.traces()
	traces[1].Rank = 0
	if _, err := Align(traces, nil, Options{}); err == nil || !strings.Contains(err.Error(), "both rank 0") {
		t.Errorf("duplicate rank: err %v", err)
	}
	traces[0].Rank, traces[1].Rank = -1, -1
	a, err := Align(traces, nil, Options{})
	if err != nil || a.Matched != 5 || len(a.Warnings) != 1 {
		t.Errorf("unknown ranks: err %v, matched %d, warnings %q", err, a.Matched, a.Warnings)
	}
	if _, err := Align(nil, nil, Options{}); err == nil {
		t.Error("no traces: no error")
	}
	if _, err := Align([]*ingest.Trace{nil}, nil, Options{}); err == nil {
		t.Error("nil trace: no error")
	}
}

// TestSeqNumbers checks that sequence numbers keep apart collectives that
// end within the clock tolerance of each other: rank 1's clock runs one
// period (2 µs) ahead, so by time alone its k-th collective would pair with
// rank 0's (k+1)-th.
func TestSeqNumbers(t *testing.T) {
	for _, withSeq := range []bool{true, false} {
		s := scenario{world: 2, files: pair, args: true, shift: map[int]int64{1: 2_000},
			instances: regular("allreduce", pair, false, 20, t0, 2_000, 64, func(r, k int) int64 { return 0 })}
		traces := s.traces()
		if withSeq {
			for _, tr := range traces {
				for i := range tr.Collectives {
					tr.Collectives[i].SeqNum = int64(i + 1)
				}
			}
		}
		a, err := Align(traces, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Paired right, rank 1 arrives 2 µs late every time.
		right := a.Matched == 20 && a.Ranks[0].WaitNS == 20*2_000
		if right != withSeq {
			t.Errorf("with sequence numbers %v: matched %d, rank 0 waited %d ns", withSeq, a.Matched, a.Ranks[0].WaitNS)
		}
	}
}

// TestUnrelatedClocks aligns rank 0 of one run with rank 1 of another,
// whose collectives end at unrelated times: nothing may be paired.
func TestUnrelatedClocks(t *testing.T) {
	a := scenario{world: 2, files: pair, instances: regular("allreduce", pair, false, 50, t0, 2_000_000, 64, late1)}
	b := scenario{world: 2, files: pair, instances: regular("allreduce", pair, false, 50, t0, 2_000_000, 64,
		func(r, k int) int64 { return int64((k*7919+r*104729)%997) * 1_000 })}
	traces := []*ingest.Trace{a.traces()[0], b.traces()[1]}
	al, err := Align(traces, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if al.Matched != 0 || al.Unmatched != 100 || al.Clock != ClockUnknown {
		t.Errorf("matched %d unmatched %d clock %q, want 0 100 unknown", al.Matched, al.Unmatched, al.Clock)
	}
	checkMismatch(t, al.Mismatches, "could not be related")
}

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []int64
		want int64
	}{
		{nil, 0},
		{[]int64{5}, 5},
		{[]int64{3, 1}, 1},
		{[]int64{3, 1, 2}, 2},
		{[]int64{7, 7, 7, 1, 9, 7}, 7},
		{[]int64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 5},
		{[]int64{-4, 100, -4, -4, 100, 100, 0}, 0},
	}
	equal := make([]int64, 100_001) // all zero: must not take quadratic time
	tests = append(tests, struct {
		xs   []int64
		want int64
	}{equal, 0})
	for _, tc := range tests {
		xs := append([]int64(nil), tc.xs...)
		if got := median(xs); got != tc.want {
			t.Errorf("median(%v) = %d, want %d", tc.xs, got, tc.want)
		}
	}
}

// TestDisjointWindows gives the two ranks profiles of different windows of
// one run. With times relative to one baseTimeNanoseconds they are known to
// share a clock and nothing is paired; with epoch times nothing tells an
// offset from a different window, and the offset is estimated.
func TestDisjointWindows(t *testing.T) {
	for _, relative := range []bool{true, false} {
		drop := dropRange(0, 50, 100)
		for k := range 50 {
			drop[[2]int{1, k}] = true
		}
		s := scenario{world: 2, files: pair, args: true, relative: relative, drop: drop,
			instances: regular("allreduce", pair, false, 100, t0, 100_000, 64, skew)}
		a, err := Align(s.traces(), nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if relative && (a.Matched != 0 || a.Unmatched != 100 || a.Clock != ClockShared) {
			t.Errorf("one base: matched %d unmatched %d clock %q, want 0 100 shared", a.Matched, a.Unmatched, a.Clock)
		}
		if !relative && a.Clock != ClockEstimated {
			t.Errorf("epoch times: clock %q, want estimated", a.Clock)
		}
	}
}

// TestSeqNumbersLateStartOtherClock gives rank 1 another host's clock and
// a profiler that started 40 collectives late, past LookAhead, in a run of
// identical collectives: only the NCCL sequence numbers tell which of rank
// 0's collectives rank 1's first one is.
func TestSeqNumbersLateStartOtherClock(t *testing.T) {
	s := scenario{world: 2, files: pair, args: true, drop: dropRange(1, 0, 40), shift: map[int]int64{1: 3_000_000_000},
		instances: regular("allreduce", pair, false, 100, t0, 50_000, 64, skew)}
	traces := s.traces()
	for _, tr := range traces {
		first := 0
		if tr.Rank == 1 {
			first = 40
		}
		for i := range tr.Collectives {
			tr.Collectives[i].SeqNum = int64(first + i)
		}
	}
	a, err := Align(traces, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := s.want()
	if a.Matched != e.matched || a.Unmatched != e.unmatched || a.Clock != ClockEstimated {
		t.Errorf("matched %d unmatched %d clock %q, want %d %d estimated; %q", a.Matched, a.Unmatched, a.Clock, e.matched, e.unmatched, a.Mismatches)
	}
	if off := a.Ranks[1].OffsetNS; abs64(off+3_000_000_000) > 1_000 {
		t.Errorf("rank 1 offset %d, want about -3 s", off)
	}
	checkMismatch(t, a.Mismatches, "rank 0's first 40 collectives are before rank 1's window")
	checkSplits(t, &s, a, e, 1_000)
}
