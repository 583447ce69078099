package analyze

import (
	"math"
	"testing"

	"kinetoscope/ingest"
)

const us1 = 1000 // ns per µs

// handTrace is three vLLM steps (prefill, decode, decode): eager kernels,
// a CUDA-graph replay that runs long after its launch, sampling after the
// last GEMM, and a GPU annotation that must not count.
func handTrace() *traceBuilder {
	b := newTraceBuilder()
	b.annotate("execute_context_1(100)_generation_0(0)", 1000*us1, 500*us1)
	b.annotate("execute_context_0(0)_generation_2(2)", 5000*us1, 500*us1)
	b.annotate("execute_context_0(0)_generation_2(2)", 9000*us1, 500*us1)
	b.t.Annotations.Append(ingest.Annotation{Start: 1000 * us1, Dur: 100000 * us1, Name: b.id("gpu range"), GPU: true})
	argmax := "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >()"
	softmax := "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>()"
	// before the first step
	b.launched("fill_kernel_before", 500*us1, 600*us1, 50*us1)
	// step 0 (prefill); the argmax is launched after the annotation ends
	b.launched("nvjet_tst_a", 1100*us1, 1200*us1, 300*us1)
	b.launched("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1150*us1, 1500*us1, 200*us1)
	b.launched(argmax, 1600*us1, 1800*us1, 10*us1)
	// step 1 (decode): one graph launch whose kernels run after step 2 began
	g := b.launch("cudaGraphLaunch", 5100*us1)
	b.kernel(softmax, ingest.KindKernel, g, 9550*us1, 10*us1)
	b.kernel("nvjet_tst_b", ingest.KindKernel, g, 9600*us1, 100*us1)
	b.kernel("void vllm::rms_norm_kernel<c10::BFloat16, 8>()", ingest.KindKernel, g, 9650*us1, 90*us1)
	b.kernel(argmax, ingest.KindKernel, g, 9800*us1, 10*us1)
	// step 2 (decode)
	b.launched("mystery_kernel", 9100*us1, 10000*us1, 40*us1)
	b.kernel("Memcpy DtoD (Device -> Device)", ingest.KindMemcpy, b.launch("cudaMemcpyAsync", 9200*us1), 10050*us1, 10*us1)
	return b
}

func TestAnalyzeHandTrace(t *testing.T) {
	r, err := Analyze(handTrace().set(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rk := r.Ranks[0]
	if rk.StepSource != SourceVLLM || len(rk.Steps) != 3 {
		t.Fatalf("steps: %s, %d; want vllm, 3", rk.StepSource, len(rk.Steps))
	}
	checkHandSteps(t, rk.Steps)
	if rk.Outside != (BucketStat{US: 50, Count: 1}) {
		t.Errorf("outside: %+v, want 50 us in 1 event", rk.Outside)
	}
	d := rk.Decode
	if d.Steps != 2 || d.KernelUS != 260 || d.SpanUS != 320 || d.SpanMeanUS != 160 || d.SpanP90US != 260 {
		t.Errorf("decode phase: %+v", d)
	}
	g := d.Buckets[GEMM]
	if g.USPerStep != 50 || g.CallsPerStep != 0.5 || math.Abs(g.ShareOfKernel-100.0*100/260) > 1e-9 || math.Abs(g.ShareOfSpan-100.0*100/320) > 1e-9 {
		t.Errorf("decode gemm: %+v", g)
	}
	if rk.Prefill == nil || rk.Prefill.Steps != 1 {
		t.Errorf("prefill phase: %+v", rk.Prefill)
	}
	if h := r.Headline; h == nil || h.Bucket != GEMM || h.Phase != PhaseDecode || h.Steps != 2 {
		t.Errorf("headline: %+v", r.Headline)
	}
	if len(rk.Unclassified) != 1 || rk.Unclassified[0].Name != "mystery_kernel" || rk.Unclassified[0].US != 40 {
		t.Errorf("unclassified: %+v", rk.Unclassified)
	}
	if top := rk.TopKernels[GEMM]; len(top) != 1 || top[0].Name != "nvjet_tst_b" || top[0].P50US != 100 {
		t.Errorf("top decode GEMM kernels: %+v", top)
	}
	if rk.LaunchDelay.Count != 6 {
		t.Errorf("launch delays: %d, want 6 (graph replays excluded)", rk.LaunchDelay.Count)
	}
}

// checkHandSteps checks the three steps of handTrace: kernel, busy, span and
// idle time, event and graph counts, and time and calls per bucket.
func checkHandSteps(t *testing.T, steps []Step) {
	t.Helper()
	type bk = map[BucketID]BucketStat
	want := []struct {
		phase                    string
		kernel, busy, span, idle float64
		events, graphs           int
		buckets                  bk
	}{
		{PhasePrefill, 510, 510, 610, 100, 3, 0, bk{GEMM: {300, 1}, AllReduce: {200, 1}, Sampling: {10, 1}}},
		{PhaseDecode, 210, 160, 260, 100, 4, 1, bk{Elementwise: {10, 1}, GEMM: {100, 1}, Norm: {90, 1}, Sampling: {10, 1}}},
		{PhaseDecode, 50, 50, 60, 10, 2, 0, bk{Other: {40, 1}, Memcpy: {10, 1}}},
	}
	for i, w := range want {
		s := steps[i]
		if s.Phase != w.phase || s.KernelUS != w.kernel || s.BusyUS != w.busy || s.SpanUS != w.span ||
			s.IdleUS != w.idle || s.Kernels != w.events || s.GraphLaunches != w.graphs {
			t.Errorf("step %d: got %s kernel %.0f busy %.0f span %.0f idle %.0f events %d graphs %d, want %+v",
				i, s.Phase, s.KernelUS, s.BusyUS, s.SpanUS, s.IdleUS, s.Kernels, s.GraphLaunches, w)
		}
		if len(s.Buckets) != len(w.buckets) {
			t.Errorf("step %d: buckets %v, want %v", i, s.Buckets, w.buckets)
		}
		for id, b := range w.buckets {
			if s.Buckets[id] != b {
				t.Errorf("step %d bucket %s: %+v, want %+v", i, id, s.Buckets[id], b)
			}
		}
	}
}

// TestCollectiveNames checks every source of a generic collective's name.
func TestCollectiveNames(t *testing.T) {
	b := newTraceBuilder()
	tr := b.t
	generic := "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"
	// by External id
	c := b.launch("hipExtLaunchKernel", 100)
	tr.Launches.At(int(c - 1)).ExternalID = 77
	tr.CommOps.Append(ingest.CommOp{Start: 90, Dur: 5, ExternalID: 77, Args: ingest.CollectiveArgs{Name: b.id("allreduce")}})
	b.kernel(generic, ingest.KindKernel, c, 1000, 10)
	// by a record_param_comms op holding the launch
	tr.CommOps.Append(ingest.CommOp{Start: 290, Dur: 20, Args: ingest.CollectiveArgs{Name: b.id("broadcast")}})
	b.kernel(generic, ingest.KindKernel, b.launch("hipExtLaunchKernel", 300), 1100, 10)
	// by an nccl: annotation holding the launch
	b.annotate("nccl:_allgather_base", 490, 20)
	b.kernel(generic, ingest.KindKernel, b.launch("hipExtLaunchKernel", 500), 1200, 10)
	// by the kernel's own args
	tr.Collectives = append(tr.Collectives, ingest.CollectiveArgs{Name: b.id("_reduce_scatter_base")})
	b.kernel(generic, ingest.KindKernel, b.launch("hipExtLaunchKernel", 700), 1300, 10)
	tr.GPU.At(3).Coll = 0
	// no source at all
	b.kernel(generic, ingest.KindKernel, 999, 1400, 10)
	want := []BucketID{AllReduce, Broadcast, AllGather, ReduceScatter, CommOther}
	got := eventBuckets(t, tr)
	for i, w := range want {
		if got[i] != w {
			t.Errorf("event %d: %s, want %s", i, got[i], w)
		}
	}
	r, err := Analyze(b.set(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := r.Ranks[0].Steps[0].Buckets
	for _, w := range want {
		if all[w].Count != 1 {
			t.Errorf("analysis bucket %s: %+v, want 1 event", w, all[w])
		}
	}
}

// TestStepEvents: the events of the hand trace's graph-replay step, with
// the buckets Analyze gave them (the argmax after the last GEMM is
// sampling, the softmax before it is not), and errors for what is not there.
func TestStepEvents(t *testing.T) {
	set := handTrace().set()
	evs, err := StepEvents(set, Options{}, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		start  int64
		bucket BucketID
	}{{9550 * us1, Elementwise}, {9600 * us1, GEMM}, {9650 * us1, Norm}, {9800 * us1, Sampling}}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		if evs[i].StartNS != w.start || evs[i].Bucket != w.bucket || evs[i].Correlation != evs[0].Correlation {
			t.Errorf("event %d: %+v, want start %d in %s, the graph launch's correlation", i, evs[i], w.start, w.bucket)
		}
	}
	for _, bad := range []struct{ rank, step int }{{1, 0}, {0, 3}, {0, -1}} {
		if _, err := StepEvents(set, Options{}, bad.rank, bad.step); err == nil {
			t.Errorf("rank %d step %d: no error", bad.rank, bad.step)
		}
	}
	if _, err := StepEvents(nil, Options{}, 0, 0); err == nil {
		t.Error("nil set: no error")
	}
}

// eventBuckets returns the bucket of each GPU event of tr, from the pass
// Analyze runs.
func eventBuckets(t *testing.T, tr *ingest.Trace) []BucketID {
	t.Helper()
	cls, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := stepPass(tr, cls, nil)
	out := make([]BucketID, len(p.bucketOf))
	for i, b := range p.bucketOf {
		out[i] = p.tab.ids[b]
	}
	return out
}
