package ingest

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/big"
	"path/filepath"
	"testing"
)

// refCounts are what an independent decode with encoding/json finds.
type refCounts struct {
	ByCategory map[string]int64
	refTotals
}

// refTotals are the comparable totals of refCounts.
type refTotals struct {
	Events, Python                          int64
	Kernels, Memcpy, Memset                 int64
	Launches, Annotations, GPUAnnotations   int64
	CommOps, Collectives                    int64
	KernelDurNS, LaunchDurNS, AnnotDurNS    int64
	KernelStartNS                           int64 // sum, wraps harmlessly
	Correlations, KernelNameBytes, GridSum  int64
	Devices, WorldSize, Rank, ProcessGroups int64
}

// refDecode decodes a gzipped trace into maps and counts it the slow way.
func refDecode(t *testing.T, path string) refCounts {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(gunzipFile(t, path)))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	r := refCounts{ByCategory: map[string]int64{}, refTotals: refTotals{Rank: -1}}
	for _, e := range doc["traceEvents"].([]any) {
		refEvent(&r, e.(map[string]any))
	}
	if ds, ok := doc["deviceProperties"].([]any); ok {
		r.Devices = int64(len(ds))
	}
	if di, ok := doc["distributedInfo"].(map[string]any); ok {
		r.WorldSize = refInt(di["world_size"])
		if _, ok := di["rank"]; ok {
			r.Rank = refInt(di["rank"])
		}
		if pg, ok := di["pg_config"].([]any); ok {
			r.ProcessGroups = int64(len(pg))
		}
	}
	return r
}

// refNS converts a JSON number of microseconds to nanoseconds exactly.
func refNS(v any) int64 {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	q, ok := new(big.Rat).SetString(n.String())
	if !ok {
		return 0
	}
	q.Mul(q, big.NewRat(1000, 1))
	f, _ := q.Float64()
	if q.IsInt() {
		return q.Num().Int64()
	}
	return int64(f + 0.5)
}

func refInt(v any) int64 {
	n, _ := v.(json.Number)
	i, _ := n.Int64()
	return i
}

func refEvent(r *refCounts, e map[string]any) {
	r.Events++
	cat, _ := e["cat"].(string)
	r.ByCategory[cat]++
	ph, _ := e["ph"].(string)
	name, _ := e["name"].(string)
	args, _ := e["args"].(map[string]any)
	if cat == "python_function" {
		r.Python++
	}
	if ph != "X" {
		return
	}
	dur := refNS(e["dur"])
	switch cat {
	case "kernel", "gpu_memcpy", "gpu_memset":
		switch cat {
		case "kernel":
			r.Kernels++
		case "gpu_memcpy":
			r.Memcpy++
		default:
			r.Memset++
		}
		r.KernelDurNS += dur
		r.KernelStartNS += refNS(e["ts"])
		r.Correlations += refInt(args["correlation"])
		r.KernelNameBytes += int64(len(name))
		if g, ok := args["grid"].([]any); ok {
			for _, x := range g {
				r.GridSum += refInt(x)
			}
		}
		if _, ok := args["Collective name"]; ok {
			r.Collectives++
		}
	case "cuda_runtime", "cuda_driver":
		if _, ok := args["correlation"]; ok {
			r.Launches++
			r.LaunchDurNS += dur
		}
	case "user_annotation", "gpu_user_annotation":
		r.Annotations++
		if cat == "gpu_user_annotation" {
			r.GPUAnnotations++
		}
		r.AnnotDurNS += dur
	case "cpu_op":
		if name == "record_param_comms" {
			r.CommOps++
		}
	}
}

// streamCounts computes the same counts from the streamed model.
func streamCounts(tr *Trace) refCounts {
	r := refCounts{ByCategory: tr.Counts.ByCategory, refTotals: refTotals{
		Events: tr.Counts.Events, Python: tr.Counts.PythonFunctions,
		Launches: int64(tr.Launches.Len()),
		CommOps:  int64(tr.CommOps.Len()), Collectives: int64(len(tr.Collectives)),
		Devices: int64(len(tr.Meta.Devices)), WorldSize: int64(tr.Meta.Distributed.WorldSize),
		Rank: int64(tr.Meta.Distributed.Rank), ProcessGroups: int64(len(tr.Meta.Distributed.Groups)),
	}}
	for _, g := range tr.GPU.All() {
		switch g.Kind {
		case KindKernel:
			r.Kernels++
		case KindMemcpy:
			r.Memcpy++
		case KindMemset:
			r.Memset++
		}
		r.KernelDurNS += g.Dur
		r.KernelStartNS += g.Start
		r.Correlations += g.Correlation
		r.KernelNameBytes += int64(len(tr.Name(g.Name)))
		r.GridSum += int64(g.Grid[0]) + int64(g.Grid[1]) + int64(g.Grid[2])
	}
	for _, l := range tr.Launches.All() {
		r.LaunchDurNS += l.Dur
	}
	for _, a := range tr.Annotations.All() {
		r.Annotations++
		if a.GPU {
			r.GPUAnnotations++
		}
		r.AnnotDurNS += a.Dur
	}
	return r
}

func TestStreamMatchesReferenceDecode(t *testing.T) {
	for _, path := range publicTraces(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			tr, err := ReadFile(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, want := streamCounts(tr), refDecode(t, path)
			if !maps.Equal(got.ByCategory, want.ByCategory) {
				t.Errorf("by category:\n got %v\nwant %v", got.ByCategory, want.ByCategory)
			}
			if got.refTotals != want.refTotals {
				t.Errorf("counts:\n got %+v\nwant %+v", got.refTotals, want.refTotals)
			}
			if want.Kernels == 0 && tr.GPU.Len() != 0 {
				t.Errorf("GPU events in a trace without kernels")
			}
		})
	}
}
