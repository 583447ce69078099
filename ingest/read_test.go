package ingest

import (
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"
)

// handTrace exercises field extraction: key orders, string pids, integer
// and long-fraction times, escapes, collective args, metadata after
// traceEvents.
const handTrace = `{
 "schemaVersion": 1,
 "traceEvents": [
  {"name": "process_name", "ph": "M", "pid": 7, "tid": 0, "args": {"name": "python3"}},
  {"name": "thread_name", "ph": "M", "pid": 7, "tid": 9, "args": {"name": "main \"thread\""}},
  {"args": {"grid": [512, 2, 1], "block": [128, 1, 1], "correlation": 11, "External id": 5, "stream": 7, "device": 1},
   "dur": 41.407, "ts": 6520618853487.683, "tid": 7, "pid": 1, "name": "void k<\"x\">\u00e9()", "cat": "kernel", "ph": "X"},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 3, "ts": 100, "dur": 2,
   "args": {"correlation": 12, "bytes": 4096}},
  {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 3, "ts": 101.00049, "dur": 0.0005,
   "args": {"correlation": 13, "bytes": 8}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 20, "ts": 200, "dur": 50,
   "args": {"correlation": 14, "stream": 20, "device": 0, "Collective name": "allreduce", "In msg nelems": 1024,
    "Out msg nelems": 1024, "dtype": "BFloat16", "Group size": 8, "Process Group Name": "0",
    "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Seq": 42}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 9, "ts": 90, "dur": 5,
   "args": {"correlation": 11, "External id": 5, "cbid": 211}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 7, "tid": 9, "ts": 95, "dur": 1, "args": {}},
  {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": "7", "tid": "9", "ts": 96, "dur": 1, "args": {"correlation": 15}},
  {"ph": "X", "cat": "user_annotation", "name": "execute_model", "pid": 7, "tid": 9, "ts": 80, "dur": 300},
  {"ph": "X", "cat": "gpu_user_annotation", "name": "execute_model", "pid": 0, "tid": 7, "ts": 81, "dur": 299},
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 9, "ts": 85, "dur": 10,
   "args": {"External id": 6, "Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 1024,
    "Out msg nelems": 1024, "Group size": 8, "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 9, "ts": 86, "dur": 1, "args": {"Input Dims": [[1, 2], [2, 3]]}},
  {"ph": "X", "cat": "python_function", "name": "forward", "pid": 7, "tid": 9, "ts": 87, "dur": 1, "args": {"Python id": 1}},
  {"ph": "i", "name": "Record Window End", "pid": "", "tid": "", "ts": 400, "s": "g"},
  {"ph": "s", "cat": "ac2g", "id": 11, "pid": 7, "tid": 9, "ts": 90},
  {}
 ],
 "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8, "nccl_version": "2.21.5",
   "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 2, "ranks": "[0, 1]"},
                 {"pg_name": "1", "pg_desc": "tp", "pg_size": 2, "ranks": [2, 3]}]},
 "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85000000000, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
 "baseTimeNanoseconds": 1711964646000000000,
 "displayTimeUnit": "ms",
 "vllm_version": "0.11.0",
 "with_stack": 1,
 "INFO": ["a", "b"]
}`

func TestReadHandTrace(t *testing.T) {
	tr, err := Read(strings.NewReader(handTrace), "hand.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Rank != 3 || tr.RankSource != "distributedInfo" || tr.WorldSize() != 8 {
		t.Errorf("rank %d (%s) world %d", tr.Rank, tr.RankSource, tr.WorldSize())
	}
	if tr.Counts.Events != 17 || tr.Counts.PythonFunctions != 1 || tr.Counts.ByCategory[""] != 4 ||
		tr.Counts.ByCategory["cpu_op"] != 2 {
		t.Errorf("counts %+v", tr.Counts)
	}
	if tr.GPU.Len() != 4 {
		t.Fatalf("GPU events %d, want 4", tr.GPU.Len())
	}
	k := tr.GPU.At(0)
	want := GPUEvent{Start: 6520618853487683, Dur: 41407, Correlation: 11, ExternalID: 5, Stream: 7, Device: 1,
		Kind: KindKernel, Coll: NoCollective, Grid: [3]int32{512, 2, 1}, Block: [3]int32{128, 1, 1}, Name: k.Name}
	if *k != want || tr.Name(k.Name) != "void k<\"x\">\u00e9()" {
		t.Errorf("kernel %+v %q", *k, tr.Name(k.Name))
	}
	if m := tr.GPU.At(1); m.Kind != KindMemcpy || m.Bytes != 4096 || m.Start != 100000 || m.Device != 0 || m.Stream != 3 {
		t.Errorf("memcpy %+v", *m)
	}
	if m := tr.GPU.At(2); m.Kind != KindMemset || m.Start != 101000 || m.Dur != 1 {
		t.Errorf("memset %+v", *m)
	}
	nc := tr.GPU.At(3)
	if nc.Coll != 0 || len(tr.Collectives) != 1 {
		t.Fatalf("collective index %d of %d", nc.Coll, len(tr.Collectives))
	}
	c := tr.Collectives[0]
	if tr.Name(c.Name) != "allreduce" || c.InNelems != 1024 || tr.Name(c.Dtype) != "BFloat16" || c.GroupSize != 8 ||
		tr.Name(c.PGRanks) != "[0, 1, 2, 3, 4, 5, 6, 7]" || c.SeqNum != 42 {
		t.Errorf("collective %+v", c)
	}
	if tr.Launches.Len() != 2 {
		t.Fatalf("launches %d, want 2 (the sync has no correlation)", tr.Launches.Len())
	}
	l0, l1 := tr.Launches.At(0), tr.Launches.At(1)
	if l0.Correlation != 11 || l0.Kind != LaunchRuntime || tr.Threads[l0.Thread].Name != `main "thread"` ||
		l1.Kind != LaunchDriver || l1.Correlation != 15 {
		t.Errorf("launches %+v %+v threads %+v", *l0, *l1, tr.Threads)
	}
	if tr.Annotations.Len() != 2 || tr.Annotations.At(0).GPU || !tr.Annotations.At(1).GPU || tr.Annotations.At(1).Thread != 7 {
		t.Errorf("annotations %d", tr.Annotations.Len())
	}
	if tr.CommOps.Len() != 1 || tr.CommOps.At(0).Args.SeqNum != -1 || tr.Name(tr.CommOps.At(0).Args.PGRanks) != "[0, 1]" {
		t.Errorf("comm ops %d", tr.CommOps.Len())
	}
	m := tr.Meta
	if m.BaseTimeNS != 1711964646000000000 || m.SchemaVersion != "1" || m.DisplayTimeUnit != "ms" ||
		m.Versions["vllm_version"] != "0.11.0" || m.Other["with_stack"] != "1" || len(m.Devices) != 1 ||
		m.Devices[0].NumSMs != 132 || m.Distributed.NCCLVersion != "2.21.5" {
		t.Errorf("meta %+v", m)
	}
	if g := m.Distributed.Groups; len(g) != 2 || len(g[0].Ranks) != 2 || g[1].Ranks[1] != 3 {
		t.Errorf("groups %+v", g)
	}
	if tr.ProcessNames["7"] != "python3" {
		t.Errorf("process names %v", tr.ProcessNames)
	}
}

func TestReadGzipAndBareArray(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"correlation":1}}]`))
	zw.Close()
	tr, err := Read(&buf, "rank-4.json.gz", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.GPU.Len() != 1 || tr.Rank != 4 || tr.RankSource != "filename" || tr.Counts.Bytes == tr.Counts.UncompressedBytes {
		t.Errorf("gpu %d rank %d %s counts %+v", tr.GPU.Len(), tr.Rank, tr.RankSource, tr.Counts)
	}
}

func TestReadUnknownRankWarns(t *testing.T) {
	tr, err := Read(strings.NewReader(`{"traceEvents":[]}`), "host_123.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Rank != -1 || len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0], "rank unknown") {
		t.Errorf("rank %d warnings %v", tr.Rank, tr.Warnings)
	}
}

func TestReadRankConflictWarns(t *testing.T) {
	tr, err := Read(strings.NewReader(`{"distributedInfo": {"rank": 2}, "traceEvents": []}`), "x_rank5.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Rank != 2 || len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0], "file name says rank 5") {
		t.Errorf("rank %d warnings %v", tr.Rank, tr.Warnings)
	}
}

func TestReadProgress(t *testing.T) {
	path := publicTrace(t, "hta-diff-control-a100.json.gz")
	var calls []Progress
	tr, err := readTraceFile(t, path, Options{Progress: func(p Progress) { calls = append(calls, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 2 {
		t.Fatalf("%d progress calls", len(calls))
	}
	for i := 1; i < len(calls); i++ {
		if calls[i].UncompressedBytes < calls[i-1].UncompressedBytes || calls[i].Events < calls[i-1].Events {
			t.Errorf("progress went backwards: %+v then %+v", calls[i-1], calls[i])
		}
	}
	last := calls[len(calls)-1]
	if !last.Done || last.Events != tr.Counts.Events || last.UncompressedBytes != tr.Counts.UncompressedBytes ||
		last.TotalBytes != tr.Counts.Bytes || last.Path != path {
		t.Errorf("last progress %+v, counts %+v", last, tr.Counts)
	}
}

// readTraceFile is ReadFile with small blocks, so that progress comes often.
func readTraceFile(t *testing.T, path string, opt Options) (*Trace, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	return readTrace(f, path, st.Size(), opt, 1<<16)
}
