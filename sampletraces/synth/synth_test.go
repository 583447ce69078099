package synth

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kinetoscope/sampletraces"
)

// smallConfig is a quick configuration for tests.
func smallConfig(graph bool, k int) Config {
	c := DefaultConfig()
	c.Ranks, c.Layers, c.DecodeSteps, c.PythonFunctions, c.Seed, c.CUDAGraph = 3, 3, 3, k, 7, graph
	return c
}

// readTruth loads dir's truth.json.
func readTruth(t *testing.T, dir string) *Truth {
	t.Helper()
	var tr Truth
	if err := sampletraces.ReadJSON(filepath.Join(dir, TruthFile), &tr); err != nil {
		t.Fatal(err)
	}
	return &tr
}

func TestGenerateMatchesTruth(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*Config)
	}{
		{"eager", func(c *Config) {}},
		{"graph", func(c *Config) { c.CUDAGraph, c.PythonFunctions, c.Gzip = true, 2, false }},
		{"no-stack", func(c *Config) { c.PythonFunctions = 0 }},
		{"deep-stack", func(c *Config) { c.PythonFunctions, c.Ranks, c.Layers = 40, 2, 2 }},
		{"one-rank-one-layer", func(c *Config) { c.Ranks, c.Layers, c.PrefillSteps, c.DecodeSteps = 1, 1, 0, 1 }},
		{"prefill-only", func(c *Config) { c.DecodeSteps, c.PrefillSteps, c.CUDAGraph = 0, 2, true }},
		{"pynccl", func(c *Config) { c.CollectiveArgs = false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig(false, 3)
			tc.mut(&cfg)
			dir := t.TempDir()
			if _, err := Generate(dir, cfg, false); err != nil {
				t.Fatal(err)
			}
			tr := readTruth(t, dir)
			if !tr.Synthetic || len(tr.Ranks) != cfg.Ranks || len(tr.Steps) != cfg.PrefillSteps+cfg.DecodeSteps {
				t.Fatalf("truth header wrong: synthetic=%v ranks=%d steps=%d", tr.Synthetic, len(tr.Ranks), len(tr.Steps))
			}
			ends := map[int][]int64{}
			for _, rt := range tr.Ranks {
				ends[rt.Rank] = checkRankFile(t, dir, tr, rt)
			}
			for r := 1; r < cfg.Ranks; r++ {
				if !equalInts(ends[0], ends[r]) {
					t.Errorf("collective end times differ between rank 0 and rank %d", r)
				}
			}
		})
	}
}

// checkRankFile parses one rank's file and compares it with the truth; it
// returns the end times of the rank's collectives.
func checkRankFile(t *testing.T, dir string, tr *Truth, rt RankTruth) []int64 {
	t.Helper()
	p := parseTrace(t, filepath.Join(dir, rt.File))
	if p.top["kinetoscope_synthetic"] != true || !strings.Contains(p.top["traceName"].(string), "synthetic") {
		t.Errorf("rank %d: missing synthetic markers", rt.Rank)
	}
	di := p.top["distributedInfo"].(map[string]any)
	if num(t, di["rank"]) != int64(rt.Rank) || num(t, di["world_size"]) != int64(tr.Config.Ranks) {
		t.Errorf("rank %d: distributedInfo %v", rt.Rank, di)
	}
	byCat := map[string]int64{}
	for _, e := range p.events {
		byCat[cat(e)]++
	}
	if int64(len(p.events)) != rt.Events || !equalCounts(byCat, rt.EventsByCategory) {
		t.Errorf("rank %d: events %d %v, truth %d %v", rt.Rank, len(p.events), byCat, rt.Events, rt.EventsByCategory)
	}
	checkPerStep(t, tr, byCat)
	steps := stepsOf(t, p, tr)
	checkGPU(t, p, tr, rt, steps)
	checkLaunches(t, p, tr, rt.Rank)
	return collectiveEnds(t, p)
}

// checkPerStep checks the per-step counts of the truth against a file's
// event counts.
func checkPerStep(t *testing.T, tr *Truth, byCat map[string]int64) {
	t.Helper()
	want := map[string]int64{}
	for _, pc := range tr.PerStep {
		n := int64(pc.Steps)
		want["python_function"] += int64(pc.PythonFunctions) * n
		want["cpu_op"] += int64(pc.CPUOps) * n
		want["launch"] += int64(pc.Launches+1) * n
		want["kernel"] += int64(pc.Kernels) * n
		want["gpu_memcpy"] += int64(pc.Memcpys) * n
		want["user_annotation"] += n
		want["gpu_user_annotation"] += n
	}
	byCat["launch"] = byCat["cuda_runtime"] + byCat["cuda_driver"]
	for k, v := range want {
		if byCat[k] != v {
			t.Errorf("%s: file has %d, per-step truth gives %d", k, byCat[k], v)
		}
	}
}

// stepsOf checks the step annotations against the truth and returns their
// [start, end) windows.
func stepsOf(t *testing.T, p *parsed, tr *Truth) [][2]int64 {
	t.Helper()
	var steps [][2]int64
	for _, e := range p.events {
		if cat(e) != "user_annotation" {
			continue
		}
		s := usNS(t, e["ts"])
		i := len(steps)
		if i >= len(tr.Steps) || e["name"] != tr.Steps[i].Name || s != tr.Steps[i].StartNS || s+usNS(t, e["dur"]) != tr.Steps[i].EndNS {
			t.Fatalf("annotation %d (%v at %d) does not match truth", i, e["name"], s)
		}
		steps = append(steps, [2]int64{s, s + usNS(t, e["dur"])})
	}
	if len(steps) != len(tr.Steps) {
		t.Fatalf("%d annotations, truth has %d steps", len(steps), len(tr.Steps))
	}
	return steps
}

// checkGPU sums GPU events per step and bucket and compares with the truth.
func checkGPU(t *testing.T, p *parsed, tr *Truth, rt RankTruth, steps [][2]int64) {
	t.Helper()
	bidx := bucketIndex()
	ns := make([][]int64, len(steps))
	counts := make([]map[string]int, len(steps))
	for i := range ns {
		ns[i] = make([]int64, len(bidx))
		counts[i] = map[string]int{}
	}
	for _, e := range p.events {
		if c := cat(e); c != "kernel" && c != "gpu_memcpy" {
			continue
		}
		ts, dur := usNS(t, e["ts"]), usNS(t, e["dur"])
		i := sort.Search(len(steps), func(i int) bool { return steps[i][1] > ts })
		if i == len(steps) || ts < steps[i][0] || ts+dur > steps[i][1] {
			t.Fatalf("GPU event %v at %d outside every step", e["name"], ts)
		}
		b, ok := tr.KernelBuckets[e["name"].(string)]
		if !ok {
			t.Fatalf("GPU event %v not in kernel_buckets", e["name"])
		}
		ns[i][bidx[b]] += dur
		counts[i][b]++
		if b == "allreduce" || b == "allgather" {
			checkCollArgs(t, e, tr.Config.Ranks, tr.Config.CollectiveArgs)
		}
	}
	for i, st := range rt.Steps {
		if !equalInts(ns[i], st.BucketNS) {
			t.Errorf("rank %d step %d: bucket ns %v, truth %v", rt.Rank, i, ns[i], st.BucketNS)
		}
		want := tr.PerStep[tr.Steps[i].Phase].ByBucket
		if !equalCounts(toInt64(counts[i]), toInt64(want)) {
			t.Errorf("rank %d step %d: events by bucket %v, truth %v", rt.Rank, i, counts[i], want)
		}
	}
}

// checkCollArgs checks the collective args of an NCCL kernel: present and
// right, or absent.
func checkCollArgs(t *testing.T, e map[string]any, ranks int, want bool) {
	t.Helper()
	a := args(e)
	if !want {
		if a["Collective name"] != nil {
			t.Errorf("NCCL kernel has collective args: %v", a)
		}
		return
	}
	if a["Collective name"] == nil || num(t, a["In msg nelems"]) <= 0 || num(t, a["Group size"]) != int64(ranks) ||
		a["dtype"] != "BFloat16" || a["Process Group Name"] == nil || a["Process Group Ranks"] == nil {
		t.Errorf("NCCL kernel without collective args: %v", a)
	}
}

// checkLaunches checks that every GPU event has a launch with its
// correlation id, launched no later than it starts, and a flow pair.
func checkLaunches(t *testing.T, p *parsed, tr *Truth, rank int) {
	t.Helper()
	launch := map[int64]int64{}
	graphs := 0
	flows := map[string]int{}
	for _, e := range p.events {
		switch cat(e) {
		case "cuda_runtime", "cuda_driver":
			launch[num(t, args(e)["correlation"])] = usNS(t, e["ts"])
			if e["name"] == apiGraphLaunch {
				graphs++
			}
		case "ac2g":
			flows[e["ph"].(string)]++
		}
	}
	gpu := 0
	for _, e := range p.events {
		if c := cat(e); c == "kernel" || c == "gpu_memcpy" {
			gpu++
			ls, ok := launch[num(t, args(e)["correlation"])]
			if !ok || ls > usNS(t, e["ts"]) {
				t.Fatalf("rank %d: GPU event %v has no earlier launch", rank, e["name"])
			}
		}
	}
	if flows["f"] != gpu {
		t.Errorf("rank %d: %d flow ends for %d GPU events", rank, flows["f"], gpu)
	}
	if want := tr.PerStep["decode"].GraphLaunches * tr.PerStep["decode"].Steps; graphs != want {
		t.Errorf("rank %d: %d graph launches, want %d", rank, graphs, want)
	}
}

// collectiveEnds returns the end time of every NCCL kernel in order.
func collectiveEnds(t *testing.T, p *parsed) []int64 {
	var ends []int64
	for _, e := range p.events {
		if cat(e) == "kernel" && strings.HasPrefix(e["name"].(string), "ncclDevKernel_") {
			ends = append(ends, usNS(t, e["ts"])+usNS(t, e["dur"]))
		}
	}
	return ends
}

func equalInts(a, b []int64) bool {
	return len(a) == len(b) && (len(a) == 0 || bytes.Equal(int64Bytes(a), int64Bytes(b)))
}

func int64Bytes(a []int64) []byte {
	b, _ := json.Marshal(a)
	return b
}

func toInt64(m map[string]int) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		out[k] = int64(v)
	}
	return out
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
