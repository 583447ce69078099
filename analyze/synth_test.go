package analyze

import (
	"math"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/sampletraces/synth"
)

// TestSynthTruth analyses small synthetic TP runs (eager and CUDA graph) and
// compares with what the generator knows by construction: every kernel's
// bucket, the steps and their phases, per-step bucket counts and times, and
// each rank's AllReduce wait.
func TestSynthTruth(t *testing.T) {
	cls, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, graph := range []bool{false, true} {
		cfg := synth.DefaultConfig()
		cfg.Ranks, cfg.Layers, cfg.DecodeSteps, cfg.PythonFunctions, cfg.Gzip, cfg.CUDAGraph = 2, 3, 3, 0, false, graph
		dir := t.TempDir()
		truth, err := synth.Generate(dir, cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range truth.KernelBuckets {
			kind := ingest.KindKernel
			if b == string(Memcpy) {
				kind = ingest.KindMemcpy
			}
			// sampling kernels such as softmax are sampling only in the
			// sampling phase of a step
			inPhase := b == string(Sampling) && cls.Match(name, kind, "", true) == Sampling
			if got := cls.Match(name, kind, "", false); got != BucketID(b) && !inPhase {
				t.Errorf("graph=%v: %.80q in %s, truth %s", graph, name, got, b)
			}
		}
		_, r := analyzePath(t, dir)
		if !r.Synthetic || len(r.Ranks) != cfg.Ranks {
			t.Fatalf("graph=%v: synthetic %v, %d ranks", graph, r.Synthetic, len(r.Ranks))
		}
		for i, rk := range r.Ranks {
			checkSynthRank(t, graph, rk, truth, truth.Ranks[i])
		}
	}
}

func checkSynthRank(t *testing.T, graph bool, rk Rank, truth *synth.Truth, rt synth.RankTruth) {
	t.Helper()
	var wait float64
	if len(rk.Steps) != len(truth.Steps) {
		t.Fatalf("graph=%v rank %d: %d steps, truth %d", graph, rk.Rank, len(rk.Steps), len(truth.Steps))
	}
	for i, s := range rk.Steps {
		ts := truth.Steps[i]
		if s.Phase != ts.Phase || s.Batch != ts.Batch {
			t.Errorf("graph=%v rank %d step %d: %s batch %d, truth %s batch %d", graph, rk.Rank, i, s.Phase, s.Batch, ts.Phase, ts.Batch)
		}
		for bi, b := range truth.BucketOrder {
			want := float64(rt.Steps[i].BucketNS[bi]) / 1e3
			if got := s.Buckets[BucketID(b)].US; math.Abs(got-want) > 1e-3 {
				t.Errorf("graph=%v rank %d step %d %s: %.3f us, truth %.3f", graph, rk.Rank, i, b, got, want)
			}
		}
		if want := truth.PerStep[ts.Phase].ByBucket[string(AllReduce)]; s.Buckets[AllReduce].Count != want {
			t.Errorf("graph=%v rank %d step %d: %d AllReduce, truth %d", graph, rk.Rank, i, s.Buckets[AllReduce].Count, want)
		}
		if s.Comm == nil {
			t.Fatalf("graph=%v rank %d step %d: no transfer/wait split", graph, rk.Rank, i)
		}
		wait += s.Comm.WaitUS
	}
	var want float64
	for _, c := range rt.Collectives {
		want += float64(c.WaitNS) / 1e3
	}
	if math.Abs(wait-want) > 1 {
		t.Errorf("graph=%v rank %d: collectives wait %.1f us, truth %.1f", graph, rk.Rank, wait, want)
	}
}
