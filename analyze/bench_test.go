package analyze

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"kinetoscope/ingest"
)

// benchKernels is a decode step's kernel mix (names from real traces),
// repeated per layer.
var benchKernels = []string{
	"void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)",
	"nvjet_tst_128x64_64x8_1x1_v_bz_coopA_NNT",
	"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
	"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)",
	"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> > > > > >(flash::FlashAttnFwdSm90::Params)",
	"nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT",
	"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
	"void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, (vllm::moe::ScoringFunc)0>(float const*, bool const*, float*, int, int*, int*, int, int, int, float const*)",
	"void marlin_moe_wna16::Marlin<(vllm::ScalarType::Id)4, 256, 1, 8, 8, 4, false, 4, 8, false>(int4 const*, int4 const*, int4*, int4*)",
	"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)",
	"void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)",
	"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}

// writeBenchTrace writes a vLLM-style eager decode trace of about mb
// megabytes: per step an execute_* annotation, then per kernel a cpu_op,
// a cudaLaunchKernel and the kernel.
func writeBenchTrace(tb testing.TB, path string, mb int) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprint(w, `{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":2},"deviceProperties":[{"id":0,"name":"NVIDIA H200"}],"traceEvents":[`)
	ts, corr, gpu := int64(1_000_000), int64(1), int64(1_000_000)
	first := true
	sep := func() {
		if !first {
			w.WriteByte(',')
		}
		first = false
	}
	for step := 0; w.Buffered()+int(fileSize(f)) < mb<<20; step++ {
		sep()
		fmt.Fprintf(w, `{"ph":"X","cat":"user_annotation","name":"execute_context_0(0)_generation_64(64)","pid":1,"tid":1,"ts":%d.000,"dur":9000.000,"args":{"External id":%d}}`, ts, corr)
		for layer := 0; layer < 40; layer++ {
			for _, k := range benchKernels {
				ts += 3
				gpu = max(gpu, ts+20) + 2
				sep()
				fmt.Fprintf(w, `{"ph":"X","cat":"cpu_op","name":"vllm::op","pid":1,"tid":1,"ts":%d.250,"dur":2.500,"args":{"External id":%d,"Sequence number":%d}},`, ts, corr, corr)
				fmt.Fprintf(w, `{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d.500,"dur":1.750,"args":{"External id":%d,"cbid":211,"correlation":%d}},`, ts, corr, corr)
				fmt.Fprintf(w, `{"ph":"X","cat":"kernel","name":%s,"pid":0,"tid":7,"ts":%d.125,"dur":%d.375,"args":{"External id":%d,"queued":0,"device":0,"context":1,"stream":7,"correlation":%d,"registers per thread":128,"shared memory":0,"blocks per SM":1.0,"warps per SM":4.0,"grid":[132,1,1],"block":[128,1,1],"est. achieved occupancy %%":6}}`,
					strconv.Quote(k), gpu, 5+corr%40, corr, corr)
				gpu += 5 + corr%40
				corr++
			}
		}
		ts = max(ts, gpu) + 100
	}
	fmt.Fprint(w, `]}`)
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// cpuTime returns the process's user and system CPU time in ns: a fairer
// figure than wall time on a shared machine.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func fileSize(f *os.File) int64 {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// BenchmarkAnalyzeVsIngest measures ingest and analysis of one generated
// trace of KINETOSCOPE_BENCH_MB megabytes (default 64): compare the two
// ns/op figures of the same run. Analysis must add at most 25% to ingest.
func BenchmarkAnalyzeVsIngest(b *testing.B) {
	mb := 64
	if s := os.Getenv("KINETOSCOPE_BENCH_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	path := filepath.Join(b.TempDir(), "bench.json")
	writeBenchTrace(b, path, mb)
	var set *ingest.Set
	b.Run("ingest", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			var err error
			if set, err = ingest.Open(path, ingest.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("analyze", func(b *testing.B) {
		if set == nil {
			var err error
			if set, err = ingest.Open(path, ingest.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		benchAnalyze(b, set)
		b.ReportMetric(float64(set.Traces[0].GPU.Len()), "kernels")
	})
}

// BenchmarkAnalyzeFile measures analysis alone of the trace file or
// directory in $KINETOSCOPE_BENCH_TRACE (a real-shaped large trace:
// kinetoscope bench --repeat builds one), or of the bundled real eager run:
// compare it with ingest's figure for the same file.
func BenchmarkAnalyzeFile(b *testing.B) {
	benchAnalyze(b, benchTraceSet(b))
}

// benchTraceSet reads $KINETOSCOPE_BENCH_TRACE, else the bundled real eager
// run.
func benchTraceSet(b *testing.B) *ingest.Set {
	path := os.Getenv("KINETOSCOPE_BENCH_TRACE")
	if path == "" {
		path = filepath.Join("..", "sampletraces", "real", "eager")
	}
	set, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return set
}

// benchAnalyze runs Analyze on set b.N times and reports the CPU time an
// analysis takes.
func benchAnalyze(b *testing.B, set *ingest.Set) {
	c0 := cpuTime()
	for b.Loop() {
		if _, err := Analyze(set, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkClassifyNames classifies each distinct GPU event name of the
// public traces once, as a trace's analysis does: the fixed cost of
// classification, which on real traces of ordinary size can exceed the
// time to read them.
func BenchmarkClassifyNames(b *testing.B) {
	type named struct {
		name string
		kind ingest.GPUKind
	}
	var names []named
	files, err := filepath.Glob("../sampletraces/public/*.json.gz")
	if err != nil || len(files) == 0 {
		b.Fatalf("no public traces: %v", err)
	}
	for _, f := range files {
		tr, err := ingest.ReadFile(f, ingest.Options{})
		if err != nil {
			continue
		}
		seen := map[ingest.StrID]bool{}
		for _, e := range tr.GPU.All() {
			if !seen[e.Name] {
				seen[e.Name] = true
				names = append(names, named{tr.Name(e.Name), e.Kind})
			}
		}
	}
	c, err := NewClassifier(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, n := range names {
			c.Match(n.name, n.kind, "", false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/name")
}

// BenchmarkChecks measures the checks of the data (Report.Checks) against
// the whole analysis of the same trace in the same run: sub-benchmark
// analyze is Analyze, checks the per-rank checks over the analysed passes
// plus the cross-rank ones. The trace is KINETOSCOPE_BENCH_TRACE, else the
// real eager sample.
func BenchmarkChecks(b *testing.B) {
	set := benchTraceSet(b)
	b.Run("analyze", func(b *testing.B) { benchAnalyze(b, set) })
	cls, re, err := prepare(Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := &Report{Ranks: make([]Rank, len(set.Traces))}
	passes := make([]*rankPass, len(set.Traces))
	for i, t := range set.Traces {
		r.Ranks[i], passes[i] = analyzeTrace(t, set.Captures, cls, re, Options{}, nil)
	}
	r.Headline = headline(r.Ranks)
	b.Run("checks", func(b *testing.B) {
		c0 := cpuTime()
		for b.Loop() {
			for i, p := range passes {
				p.checks = checkRank(p, &r.Ranks[i])
			}
			checkData(r, passes, nil, Options{})
		}
		b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
	})
}
