package analyze

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// truthFile is the part of sampletraces/real/*/truth.json the tests use.
type truthFile struct {
	DecodeSteps int `json:"decode_steps"`
	PerRankStep struct {
		AllReduce int `json:"allreduce"`
		AllGather int `json:"allgather"`
	} `json:"per_rank_per_step"`
	Traces map[string]string `json:"traces"`
}

// TestRealTraces checks the analysis of the project's real TP-2 H200
// traces against what their generator knows by construction, and the
// AllReduce share of decode kernel time against an independent reading of
// the trace files.
func TestRealTraces(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		dir := testkit.Real(t, variant)
		var truth truthFile
		if err := sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth); err != nil {
			t.Fatal(err)
		}
		_, r := analyzePath(t, dir)
		if len(r.Ranks) != 2 || r.Collectives == nil || r.Collectives.Matched == 0 {
			t.Errorf("%s: %d ranks, collectives %+v", variant, len(r.Ranks), r.Collectives)
		}
		for _, rk := range r.Ranks {
			if rk.Decode.Steps != truth.DecodeSteps {
				t.Errorf("%s rank %d: %d decode steps, want %d", variant, rk.Rank, rk.Decode.Steps, truth.DecodeSteps)
			}
			for _, s := range rk.Steps {
				if s.Phase == PhaseDecode && (s.Buckets[AllReduce].Count != truth.PerRankStep.AllReduce || s.Buckets[AllGather].Count != truth.PerRankStep.AllGather) {
					t.Errorf("%s rank %d step %d: %d allreduce, %d allgather; want %d, %d", variant, rk.Rank, s.Index,
						s.Buckets[AllReduce].Count, s.Buckets[AllGather].Count, truth.PerRankStep.AllReduce, truth.PerRankStep.AllGather)
				}
			}
			if o := rk.Decode.Buckets[Other].ShareOfKernel; o >= 2 {
				t.Errorf("%s rank %d: other is %.2f%% of decode kernel time: %+v", variant, rk.Rank, o, rk.Unclassified)
			}
			want := independentAllReduceShare(t, filepath.Join(dir, filepath.Base(rk.File)))
			got := rk.Decode.Buckets[AllReduce].ShareOfKernel
			t.Logf("%s rank %d: AllReduce %.2f%% of decode kernel time (independent %.2f%%), other %.2f%%",
				variant, rk.Rank, got, want, rk.Decode.Buckets[Other].ShareOfKernel)
			if math.Abs(got-want) > 0.5 {
				t.Errorf("%s rank %d: AllReduce %.2f%% of decode kernel time, independent reading %.2f%%", variant, rk.Rank, got, want)
			}
		}
	}
}

// independentAllReduceShare returns the AllReduce share of decode GPU
// time of one trace in percent, from independentDecodeTimes.
func independentAllReduceShare(t *testing.T, path string) float64 {
	times, all := independentDecodeTimes(t, path)
	return 100 * times[AllReduce] / all
}

// independentFamily classifies the kernels of the real samples by their
// names alone, for the families that can lead a decode step there: NCCL's
// AllReduce and AllGather kernels and cuBLAS's GEMMs (nvjet_*, and the
// split-K reduction cuBLASLt runs after a split-K GEMM); "" for the rest.
func independentFamily(name string) BucketID {
	switch {
	case strings.HasPrefix(name, "ncclDevKernel_AllReduce"):
		return AllReduce
	case strings.HasPrefix(name, "ncclDevKernel_AllGather"):
		return AllGather
	case strings.HasPrefix(name, "nvjet_") || strings.Contains(strings.ToLower(name), "gemm") || strings.Contains(name, "cublasLt::splitKreduce"):
		return GEMM
	}
	return ""
}

// independentDecodeTimes reads a trace with encoding/json alone: steps
// start at the execute_context_* annotations, a GPU event belongs to the
// step in which its launch (same correlation) ran, decode steps schedule no
// context request. It returns the decode GPU time per independentFamily
// and in all, in us.
func independentDecodeTimes(t *testing.T, path string) (map[BucketID]float64, float64) {
	var tr rawTrace
	if err := sampletraces.ReadJSON(path, &tr); err != nil {
		t.Fatal(err)
	}
	st := readSteps(&tr)
	times := map[BucketID]float64{}
	var all float64
	for _, e := range tr.TraceEvents {
		if e.Cat != "kernel" && e.Cat != "gpu_memcpy" && e.Cat != "gpu_memset" {
			continue
		}
		if i := st.stepOf(e.Ts, e.Args); i < 0 || st.marks[i].phase != PhaseDecode {
			continue
		}
		all += e.Dur
		if f := independentFamily(e.Name); f != "" {
			times[f] += e.Dur
		}
	}
	if all == 0 {
		t.Fatalf("%s: no decode GPU time", path)
	}
	return times, all
}

// TestRealHeadlineLeader: on every real multi-rank sample, the bucket that
// leads the headline (decode kernel time pooled over the ranks; the largest
// collective when communication as a whole exceeds the largest bucket) and
// its share equal an independent encoding/json computation.
func TestRealHeadlineLeader(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		dir := testkit.Real(t, variant)
		_, r := analyzePath(t, dir)
		pooled := map[BucketID]float64{}
		var all float64
		for _, rk := range r.Ranks {
			times, a := independentDecodeTimes(t, filepath.Join(dir, filepath.Base(rk.File)))
			for f, us := range times {
				pooled[f] += us
			}
			all += a
		}
		lead := GEMM
		if comm := pooled[AllReduce] + pooled[AllGather]; comm > pooled[GEMM] {
			lead = AllReduce
			if pooled[AllGather] > pooled[AllReduce] {
				lead = AllGather
			}
		}
		want := 100 * pooled[lead] / all
		h := r.Headline
		t.Logf("%s: headline %s %.2f%%, independent %s %.2f%%", variant, h.Bucket, h.ShareOfKernel, lead, want)
		if h.Bucket != lead || math.Abs(h.ShareOfKernel-want) > 0.5 {
			t.Errorf("%s: headline leads with %s at %.2f%% of decode kernel time; independent reading %s at %.2f%%",
				variant, h.Bucket, h.ShareOfKernel, lead, want)
		}
	}
}

// TestRealDecodeComm checks the decode transfer/wait split of the real TP-2
// runs: the transfer share net of wait agrees between the ranks within one
// percentage point, and the headline carries the mean of the ranks' split.
func TestRealDecodeComm(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		_, r := analyzePath(t, testkit.Real(t, variant))
		c0, c1 := r.Ranks[0].Decode.Comm, r.Ranks[1].Decode.Comm
		if c0 == nil || c1 == nil {
			t.Fatalf("%s: decode comm missing: %+v %+v", variant, c0, c1)
		}
		if d := math.Abs(c0.TransferShareNetOfWait - c1.TransferShareNetOfWait); d > 1 {
			t.Errorf("%s: transfer share net of wait %.2f%% vs %.2f%%", variant, c0.TransferShareNetOfWait, c1.TransferShareNetOfWait)
		}
		h := r.Headline
		if h == nil || h.Comm == nil {
			t.Fatalf("%s: headline without comm split: %+v", variant, h)
		}
		want := (c0.TransferShareNetOfWait + c1.TransferShareNetOfWait) / 2
		if math.Abs(h.Comm.TransferShareNetOfWait-want) > 1e-9 {
			t.Errorf("%s: headline transfer share %.3f, mean of ranks %.3f", variant, h.Comm.TransferShareNetOfWait, want)
		}
		if h.Comm.Straggler != r.Collectives.Straggler[0].Rank {
			t.Errorf("%s: headline straggler %d, collectives say %d", variant, h.Comm.Straggler, r.Collectives.Straggler[0].Rank)
		}
	}
}

// TestRealMissingRank analyses rank 0 of the real eager run alone: its
// collectives are reported unmatched with rank 1 named as missing, and no
// transfer/wait split is made up.
func TestRealMissingRank(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.Real(t, "eager"), "*rank0*.pt.trace.json.gz"))
	if err != nil || len(files) != 1 {
		t.Fatalf("rank 0 trace: %v %v", files, err)
	}
	_, r := analyzePath(t, files[0])
	c := r.Collectives
	if c == nil || c.Matched != 0 || c.Unmatched != 297 {
		t.Fatalf("collectives = %+v, want 0 matched and 297 unmatched", c)
	}
	if len(c.Mismatches) == 0 || !strings.Contains(c.Mismatches[0], "rank(s) 1") {
		t.Errorf("mismatches do not name the missing rank 1: %q", c.Mismatches)
	}
	if r.Ranks[0].Decode.Comm != nil || (r.Headline != nil && r.Headline.Comm != nil) {
		t.Errorf("a split was made up from one rank: %+v", r.Ranks[0].Decode.Comm)
	}
}

// TestRealGraphLaunchDelay: graph replays are measured apart from eager
// launches, from the cudaGraphLaunch to the replay's first kernel: one per
// decode step in cudagraph (32 a rank), none in eager, and never pooled
// into the eager launch delay.
func TestRealGraphLaunchDelay(t *testing.T) {
	for _, tc := range []struct {
		variant string
		replays int
	}{{"cudagraph", 32}, {"eager", 0}} {
		_, r := analyzePath(t, testkit.Real(t, tc.variant))
		for _, rk := range r.Ranks {
			g := rk.GraphLaunchDelay
			if g.Count != tc.replays || (g.Count > 0 && (g.P50US <= 0 || g.P99US < g.P50US)) {
				t.Errorf("%s rank %d: graph launch delay %+v, want %d replays", tc.variant, rk.Rank, g, tc.replays)
			}
			events := rk.Outside.Count
			for _, s := range rk.Steps {
				events += s.Kernels
			}
			// 83 of a decode step's kernels run in its graph (the sample's
			// README): none of them is an eager launch.
			if graphKernels := 83 * tc.replays; rk.LaunchDelay.Count > events-graphKernels {
				t.Errorf("%s rank %d: %d eager launch delays, but only %d of %d GPU events are eager", tc.variant, rk.Rank, rk.LaunchDelay.Count, events-graphKernels, events)
			}
		}
	}
}
