package synth

import (
	"hash/fnv"
	"strconv"
)

// baseTimeNS is the baseTimeNanoseconds of every synthetic trace
// (2025-11-30T00:00:00Z); ts values are microseconds after it.
const baseTimeNS = 1764460800000000000

// traceID returns a stable 32-hex-digit trace id for a rank.
func traceID(cfg *Config, rank int) string {
	h := fnv.New128a()
	h.Write([]byte("kinetoscope-synthetic/" + cfg.Model + "/" + strconv.FormatUint(cfg.Seed, 10) + "/" + strconv.Itoa(rank)))
	const hexd = "0123456789ABCDEF"
	var out []byte
	for _, c := range h.Sum(nil) {
		out = append(out, hexd[c>>4], hexd[c&15])
	}
	return string(out)
}

// header writes the top-level metadata and opens traceEvents.
func (w *rankWriter) header() {
	w.raw("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [")
	for d := 0; d < max(w.cfg.Ranks, 1); d++ {
		if d > 0 {
			w.raw(",")
		}
		w.raw("\n    {\n      \"id\": " + strconv.Itoa(d) + `, "name": "NVIDIA H200 NVL", "totalGlobalMem": 150109880320,` +
			"\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048," +
			"\n      \"regsPerBlock\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": 132" +
			"\n    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, \"sharedMemPerMultiprocessor\": 233472\n    }")
	}
	w.raw("\n  ],\n  \"cupti_version\": 26,\n  \"cuda_runtime_version\": 12080,\n  \"cuda_driver_version\": 12080,")
	w.raw("\n  \"kinetoscope_synthetic\": true,\n  \"kinetoscope_note\": \"synthetic trace written by kinetoscope synth (model " +
		w.cfg.Model + ", seed " + strconv.FormatUint(w.cfg.Seed, 10) + "); not a real profile\",")
	w.raw("\n  \"distributedInfo\": " + w.distributedInfo() + ",")
	w.raw("\n  \"record_shapes\": 0,\n  \"profile_memory\": 0,\n  \"with_stack\": " + strconv.Itoa(boolInt(w.cfg.PythonFunctions > 0)) +
		",\n  \"with_flops\": 0,\n  \"trace_id\": \"" + traceID(w.cfg, w.rank) + "\"," +
		"\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " + strconv.FormatInt(baseTimeNS, 10) + ",\n  \"traceEvents\": [")
}

// distributedInfo formats the distributedInfo object on one line.
func (w *rankWriter) distributedInfo() string {
	n := strconv.Itoa(w.cfg.Ranks)
	pg := func(name, desc, backend string) string {
		return `{"pg_name": "` + name + `", "pg_desc": "` + desc + `", "backend_config": "` + backend +
			`", "pg_size": ` + n + `, "ranks": ` + w.pgRank + `}`
	}
	return `{"backend": "nccl", "rank": ` + strconv.Itoa(w.rank) + `, "world_size": ` + n +
		`, "pg_count": 2, "pg_config": [` + pg("0", "default_pg", "cuda:nccl") + ", " +
		pg("1", "undefined", "cpu:gloo,cuda:gloo") + `], "nccl_version": "2.27.3"}`
}

// boolInt returns 1 for true.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// footer writes Kineto's trailing metadata events and closes the file.
func (w *rankWriter) footer(name string, first, last int64) {
	cpu, gpu := strconv.Itoa(w.cpuPID), strconv.Itoa(w.rank)
	w.meta("process_name", cpu, "0", first, `"name": "python3.12"`)
	w.meta("process_labels", cpu, "0", first, `"labels": "CPU"`)
	w.meta("process_sort_index", cpu, "0", first, `"sort_index": `+cpu)
	w.meta("process_name", gpu, "0", first, `"name": "python3.12"`)
	w.meta("process_labels", gpu, "0", first, `"labels": "GPU `+gpu+`"`)
	w.meta("process_sort_index", gpu, "0", first, `"sort_index": `+strconv.Itoa(16777216+w.rank))
	w.meta("thread_name", gpu, strconv.Itoa(gpuStream), first, `"name": "stream `+strconv.Itoa(gpuStream)+` "`)
	w.meta("thread_sort_index", gpu, strconv.Itoa(gpuStream), first, `"sort_index": `+strconv.Itoa(gpuStream))
	w.meta("thread_name", cpu, cpu, first, `"name": "thread `+cpu+` (python3.12)"`)
	w.meta("thread_sort_index", cpu, cpu, first, `"sort_index": `+cpu)
	w.next(catTrace)
	w.b = append(w.b, `"ph": "X", "cat": "Trace", "ts": `...)
	w.b = appendUS(w.b, first)
	w.b = append(w.b, `, "dur": `...)
	w.b = appendUS(w.b, last-first)
	w.raw(",\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      \"Op count\": 0\n    }")
	w.end()
	w.meta("process_sort_index", `"Spans"`, "0", first, `"sort_index": 536870912`)
	w.instant("Iteration Start: PyTorch Profiler", `"Traces"`, `"Trace PyTorch Profiler"`, first)
	w.instant("Record Window End", `""`, `""`, last)
	w.raw("\n  ],\n  \"traceName\": \"" + name + "\"\n}\n")
}

// meta writes an "M" metadata event; pid and tid are JSON values.
func (w *rankWriter) meta(name, pid, tid string, ts int64, args string) {
	w.next(catNone)
	w.raw(`"name": "` + name + `", "ph": "M", "ts": `)
	w.b = appendUS(w.b, ts)
	w.raw(`, "pid": ` + pid + `, "tid": ` + tid + ",\n    \"args\": {\n      " + args + "\n    }")
	w.end()
}

// instant writes a global "i" event; pid and tid are JSON values.
func (w *rankWriter) instant(name, pid, tid string, ts int64) {
	w.next(catNone)
	w.raw(`"name": "` + name + `", "ph": "i", "s": "g",` + "\n    \"pid\": " + pid + `, "tid": ` + tid + `, "ts": `)
	w.b = appendUS(w.b, ts)
	w.end()
}
