package crossrank

import (
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// rawTrace is a trace file read with encoding/json alone, independently of
// ingest.
type rawTrace struct {
	BaseTimeNanoseconds int64      `json:"baseTimeNanoseconds"`
	Events              []rawEvent `json:"traceEvents"`
}

type rawEvent struct {
	Ph   string  `json:"ph"`
	Cat  string  `json:"cat"`
	Name string  `json:"name"`
	TS   float64 `json:"ts"`
	Dur  float64 `json:"dur"`
}

func readRaw(t *testing.T, path string) *rawTrace {
	t.Helper()
	var rt rawTrace
	if err := sampletraces.ReadJSON(path, &rt); err != nil {
		t.Fatal(err)
	}
	return &rt
}

// ncclKernels returns the trace's NCCL kernels in file order.
func (rt *rawTrace) ncclKernels() []rawEvent {
	var out []rawEvent
	for _, e := range rt.Events {
		if e.Ph == "X" && e.Cat == "kernel" && strings.Contains(strings.ToLower(e.Name), "nccl") {
			out = append(out, e)
		}
	}
	return out
}

func readTraces(t *testing.T, paths ...string) []*ingest.Trace {
	t.Helper()
	var ts []*ingest.Trace
	for _, p := range paths {
		tr, err := ingest.ReadFile(p, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tr)
	}
	return ts
}

// TestPublicSampledPair reads two ranks of a 128-rank job whose trace
// events were sampled: the SendRecv kernels carry no process group, so the
// group is all 128 ranks and nothing may be paired.
func TestPublicSampledPair(t *testing.T) {
	paths := []string{testkit.Public(t, "hta-sampled-rank-0.json.gz"), testkit.Public(t, "hta-sampled-rank-1.json.gz")}
	a, err := Align(readTraces(t, paths...), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i, p := range paths {
		n := len(readRaw(t, p).ncclKernels())
		want += n
		if r := a.Ranks[i]; r.Collectives != n || r.Matched != 0 || r.Rank != i {
			t.Errorf("%s: rank %d, %d collectives (%d matched), want %d, none matched", p, r.Rank, r.Collectives, r.Matched, n)
		}
	}
	if a.Matched != 0 || a.Unmatched != want {
		t.Errorf("matched %d unmatched %d, want 0 %d", a.Matched, a.Unmatched, want)
	}
	checkMismatch(t, a.Mismatches, "no trace for member rank(s) 2-127")
}

// TestPublicSingleRank reads rank 0 of a two-rank run alone, with times
// relative to baseTimeNanoseconds.
func TestPublicSingleRank(t *testing.T) {
	path := testkit.Public(t, "hta-nccl-allreduce-broadcast-rank0.json.gz")
	a, err := Align(readTraces(t, path), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw := readRaw(t, path)
	ks := raw.ncclKernels()
	var durNS int64
	for _, k := range ks {
		durNS += int64(k.Dur*1000 + 0.5)
	}
	r := a.Ranks[0]
	if a.Clock != ClockSingle || a.Note != SingleRankNote {
		t.Errorf("clock %q note %q", a.Clock, a.Note)
	}
	if r.Collectives != len(ks) || abs64(r.KernelNS-durNS) > int64(len(ks)) || r.UnmatchedNS != r.KernelNS {
		t.Errorf("rank %+v, want %d collectives, %d ns", r, len(ks), durNS)
	}
	if r.TimeBaseNS != raw.BaseTimeNanoseconds || raw.BaseTimeNanoseconds == 0 {
		t.Errorf("time base %d, want baseTimeNanoseconds %d", r.TimeBaseNS, raw.BaseTimeNanoseconds)
	}
}

// TestRealDamaged damages one rank of the real eager H200 run (its
// profiler stopped early or started late, one collective lost, file
// missing) and checks that what is left is reported unmatched with the
// right reason and the rest paired exactly as in the whole run.
func TestRealDamaged(t *testing.T) {
	whole, full := alignRealEager(t)
	const n = 297 // collectives per rank
	tests := []struct {
		name      string
		rank      int // the damaged rank; the other keeps its event indices
		damage    func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int)
		matched   int
		mismatch  string
		singleOut bool // the damaged rank's file is left out
	}{
		{name: "cut short", rank: 1, damage: earlyStop(1, 47), matched: 250,
			mismatch: "rank 0's last 47 collectives are after rank 1's window"},
		{name: "started late", rank: 1, damage: lateStart(1, 5), matched: 292,
			mismatch: "rank 0's first 5 collectives are before rank 1's window"},
		{name: "one lost", rank: 0, damage: dropOne(0, 100), matched: 296,
			mismatch: "unmatched 0:0 1:1; 1 of rank 1's inside rank 0's window has no counterpart on rank 0"},
		{name: "file missing", rank: 1, singleOut: true, matched: 0,
			mismatch: "only rank 0 of 0-1 has a trace: no trace for rank(s) 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			traces := []*ingest.Trace{whole[0], whole[1]}
			if tc.singleOut {
				traces = traces[:1]
			} else {
				traces, _ = tc.damage(traces)
			}
			a, err := Align(traces, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			left := n - tc.matched
			if tc.damage != nil {
				left = 2*n - 2*tc.matched - (n - len(collectiveIndices(traces[tc.rank])))
			}
			if a.Matched != tc.matched || a.Unmatched != left {
				t.Errorf("matched %d unmatched %d, want %d %d", a.Matched, a.Unmatched, tc.matched, left)
			}
			checkMismatch(t, a.Mismatches, tc.mismatch)
			q := 1 - tc.rank
			if tc.singleOut {
				return
			}
			for gi, s := range a.Ranks[q].All() {
				if w, _ := full.Ranks[q].Split(gi); w != s {
					t.Errorf("rank %d event %d: split %+v, whole run %+v", q, gi, s, w)
				}
			}
		})
	}
}

// collectiveIndices returns the GPU event indices of t's collectives.
func collectiveIndices(t *ingest.Trace) []int {
	var out []int
	for i, ev := range t.GPU.All() {
		if _, ok := defaultClassify(t, 0, ev); ok {
			out = append(out, i)
		}
	}
	return out
}

// otherHost returns a copy of t as if recorded on another host: its GPU
// events moved by d ns on a clock that started one second later (base one
// second on), so its absolute times are d + 1 s ahead.
func otherHost(t *ingest.Trace, d int64) *ingest.Trace {
	c := *t
	c.Meta.BaseTimeNS += 1_000_000_000
	c.GPU = ingest.Chunks[ingest.GPUEvent]{}
	for _, ev := range t.GPU.All() {
		e := *ev
		e.Start += d
		c.GPU.Append(e)
	}
	return &c
}

// TestRealOtherClock moves rank 1 of the real eager run onto another
// host's clock, 4.7 s ahead: the offset must be estimated within 5 µs, every collective
// matched, and each instance's split move by at most twice the offset's
// error (the arrival and the first end each move by at most the error).
func TestRealOtherClock(t *testing.T) {
	whole, full := alignRealEager(t)
	const d = 3_700_123_457
	a, err := Align([]*ingest.Trace{whole[0], otherHost(whole[1], d)}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Clock != ClockEstimated || a.Matched != full.Matched || a.Unmatched != 0 {
		t.Errorf("clock %q matched %d unmatched %d, want estimated %d 0", a.Clock, a.Matched, a.Unmatched, full.Matched)
	}
	e := abs64(a.Ranks[1].OffsetNS + d + 1_000_000_000)
	if e > 5_000 {
		t.Errorf("rank 1 offset %d, want about %d", a.Ranks[1].OffsetNS, -d-1_000_000_000)
	}
	bound := 2 * e * int64(a.Matched)
	t.Logf("offset error %d ns; transfer %d ns, shared clock %d ns", e, a.Ranks[0].TransferNS, full.Ranks[0].TransferNS)
	for q, r := range a.Ranks {
		f := full.Ranks[q]
		if abs64(r.TransferNS-f.TransferNS) > bound || abs64(r.WaitNS-f.WaitNS) > bound || r.KernelNS != f.KernelNS {
			t.Errorf("rank %d: transfer %d wait %d, shared clock %d %d (bound %d)", r.Rank, r.TransferNS, r.WaitNS, f.TransferNS, f.WaitNS, bound)
		}
	}
}

// realPaths returns the two rank files of a real H200 run.
func realPaths(t testing.TB, variant string) []string {
	t.Helper()
	dir := testkit.Real(t, variant)
	paths, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(paths) != 2 {
		t.Fatalf("%s: traces %v, %v", dir, paths, err)
	}
	return paths
}

// alignRealEager reads and aligns the real eager run.
func alignRealEager(t *testing.T) ([]*ingest.Trace, *Alignment) {
	t.Helper()
	whole := readTraces(t, realPaths(t, "eager")...)
	full, err := Align(whole, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return whole, full
}
