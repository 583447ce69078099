package driver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/render"
)

// kinetoEvent is one Chrome-trace event as Kineto writes it.
type kinetoEvent struct {
	Ph   string         `json:"ph"`
	Cat  string         `json:"cat,omitempty"`
	Name string         `json:"name"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Args map[string]any `json:"args,omitempty"`
}

// fuzzKernels are kernel names of every bucket kind.
var fuzzKernels = []string{
	"ampere_bf16_s16816gemm_bf16_128x64", "Marlin<256, 1, 8, 8>", "flash_fwd_splitkv_kernel",
	"void at::native::vectorized_elementwise_kernel<4>", "fused_moe_kernel", "rms_norm_kernel", "my_custom_kernel",
}

// fuzzCollectives are NCCL kernels with their collective names.
var fuzzCollectives = [][2]string{
	{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "allreduce"},
	{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "_allgather_base"},
	{"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "_reduce_scatter_base"},
}

// fuzzRank writes Kineto events on one rank from fuzz bytes.
type fuzzRank struct {
	rank, world int
	cpu, gpu    float64 // next CPU and GPU times, µs
	corr        int
	events      []kinetoEvent
}

// kernel adds a GPU kernel (or memcpy) with the given correlation.
func (r *fuzzRank) kernel(cat, name string, corr int, dur float64, stream int, args map[string]any) {
	a := map[string]any{"device": r.rank, "stream": stream, "correlation": corr}
	for k, v := range args {
		a[k] = v
	}
	r.events = append(r.events, kinetoEvent{Ph: "X", Cat: cat, Name: name, Pid: r.rank, Tid: stream, Ts: r.gpu, Dur: dur, Args: a})
	r.gpu += dur + 0.5
}

// launch adds a CPU runtime call with a new correlation id and returns it.
func (r *fuzzRank) launch(name string) int {
	r.corr++
	r.events = append(r.events, kinetoEvent{Ph: "X", Cat: "cuda_runtime", Name: name, Pid: 1000 + r.rank, Tid: 1, Ts: r.cpu, Dur: 3,
		Args: map[string]any{"correlation": r.corr, "External id": r.corr}})
	r.cpu += 4
	r.gpu = max(r.gpu, r.cpu+2)
	return r.corr
}

// op adds what one fuzz byte (and the next) asks for.
func (r *fuzzRank) op(b, arg byte, step *int) {
	dur := 1 + float64(arg)
	switch b % 8 {
	case 0: // a launch and its kernel
		c := r.launch("cudaLaunchKernel")
		r.kernel("kernel", fuzzKernels[int(arg)%len(fuzzKernels)], c, dur, 7, nil)
	case 1: // a kernel with no launch
		r.kernel("kernel", fuzzKernels[int(arg)%len(fuzzKernels)], 0, dur, 7+int(arg%3), nil)
	case 2: // a CUDA graph launch and its kernels
		c := r.launch("cudaGraphLaunch")
		for i := range 1 + int(arg%4) {
			r.kernel("kernel", fuzzKernels[i%len(fuzzKernels)], c, dur, 20, nil)
		}
	case 3: // a collective, on its own stream
		coll := fuzzCollectives[int(arg)%len(fuzzCollectives)]
		c := r.launch("cudaLaunchKernel")
		r.kernel("kernel", coll[0], c, dur, 9, map[string]any{"Collective name": coll[1], "In msg nelems": 4096 * int(1+arg%8),
			"Out msg nelems": 4096, "Group size": r.world, "dtype": "BFloat16", "Process Group Name": "0", "Process Group Ranks": ranksText(r.world)})
	case 4: // a memcpy
		c := r.launch("cudaMemcpyAsync")
		r.kernel("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", c, dur, 7, map[string]any{"bytes": 1024 * int(arg)})
	case 5: // a step annotation over the next events
		*step++
		names := []string{"execute_model", "ProfilerStep#" + fmt.Sprint(*step), "execute_context_1(4)_generation_3(3)"}
		r.events = append(r.events, kinetoEvent{Ph: "X", Cat: "user_annotation", Name: names[int(arg)%len(names)], Pid: 1000 + r.rank, Tid: 1, Ts: r.cpu, Dur: 40 * dur})
	case 6: // a GPU annotation
		r.events = append(r.events, kinetoEvent{Ph: "X", Cat: "gpu_user_annotation", Name: "vllm::attention", Pid: r.rank, Tid: 7, Ts: r.gpu, Dur: dur})
	case 7: // time passes
		r.cpu += 10 * dur
	}
}

// ranksText is the Process Group Ranks text of world ranks.
func ranksText(world int) string {
	var s []string
	for i := range world {
		s = append(s, fmt.Sprint(i))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// writeFuzzRun writes one trace file per rank into dir, built from data:
// the first byte picks the ranks, then each pair of bytes is an op on the
// rank the first names.
func writeFuzzRun(t *testing.T, dir string, data []byte) {
	world := 1
	if len(data) > 0 {
		world = 1 + int(data[0]%4)
		data = data[1:]
	}
	ranks := make([]*fuzzRank, world)
	for i := range ranks {
		ranks[i] = &fuzzRank{rank: i, world: world}
	}
	steps := make([]int, world)
	for i := 0; i+1 < len(data); i += 2 {
		r := int(data[i]>>3) % world
		ranks[r].op(data[i], data[i+1], &steps[r])
	}
	for _, r := range ranks {
		doc := map[string]any{
			"schemaVersion":    1,
			"distributedInfo":  map[string]any{"backend": "nccl", "rank": r.rank, "world_size": world},
			"deviceProperties": []any{map[string]any{"id": r.rank, "name": "NVIDIA H100"}},
			"traceEvents":      r.events,
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank%d.pt.trace.json", r.rank)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzAnalyze analyses runs built from fuzzed but valid Kineto structures
// (launches, kernels, graph launches, collectives across ranks,
// annotations, in any order) and draws the report's charts (when the
// first byte's high bit is set): none may
// panic or hang, and a report must name every rank read.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{0, 5, 1, 0, 3, 0, 4, 3, 9, 0, 1, 5, 2})
	f.Add([]byte{0x83, 5, 0, 0, 9, 3, 12, 11, 4, 19, 4, 27, 4, 5, 1, 0, 1, 8, 1})
	f.Add([]byte{3, 5, 0, 13, 0, 21, 0, 29, 0, 3, 1, 11, 1, 19, 1, 27, 1, 2, 3, 10, 3, 5, 0, 3, 2, 11, 2, 19, 2, 27, 2})
	f.Add([]byte{1, 2, 2, 10, 2, 2, 3, 10, 3, 6, 1, 14, 1, 7, 9, 15, 9, 4, 1, 12, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		dir := t.TempDir()
		writeFuzzRun(t, dir, data)
		run, err := Analyze(ingest.FromPath(dir), Options{})
		if err != nil {
			return
		}
		if len(run.Report.Ranks) != len(run.Set.Traces) {
			t.Fatalf("%d ranks in the report, %d traces read", len(run.Report.Ranks), len(run.Set.Traces))
		}
		if len(data) > 0 && data[0]&0x80 != 0 { // charts cost much more than analysis: one input in two
			for _, k := range RunChartKinds() {
				run.Chart(ChartRequest{Kind: k, Format: render.SVG, Rank: -1, Step: -1})
			}
		}
	})
}
