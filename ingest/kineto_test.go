package ingest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// reordered writes the members of the JSON object ev, and those of its
// args object, in reverse key order, values as they are: no Kineto fast
// path applies to it.
func reordered(t *testing.T, ev string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ev), &m); err != nil {
		t.Fatalf("%s: %v", ev, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		v := string(m[k])
		if k == "args" && strings.HasPrefix(v, "{") {
			v = reordered(t, v)
		}
		fmt.Fprintf(&b, "%q:%s", k, v)
	}
	b.WriteString("}")
	return b.String()
}

// summary is what a trace kept, names resolved, for comparisons.
type summary struct {
	Counts      Counts
	GPU         []GPUEvent
	Launches    []Launch
	Annotations []Annotation
	CommOps     []CommOp
	Names       []string
	Threads     []Thread
}

func summarize(tr *Trace) summary {
	s := summary{Counts: tr.Counts, Threads: tr.Threads}
	s.Counts.Bytes, s.Counts.UncompressedBytes = 0, 0
	for _, g := range tr.GPU.All() {
		s.GPU = append(s.GPU, *g)
	}
	for _, l := range tr.Launches.All() {
		s.Launches = append(s.Launches, *l)
	}
	for _, a := range tr.Annotations.All() {
		s.Annotations = append(s.Annotations, *a)
	}
	for _, c := range tr.CommOps.All() {
		s.CommOps = append(s.CommOps, *c)
	}
	for id := range tr.Strings.Len() {
		s.Names = append(s.Names, tr.Strings.Get(StrID(id)))
	}
	return s
}

// kinetoEvents are events in the layouts of Kineto's writer, and near
// misses of them.
var kinetoEvents = []string{
	`{
    "ph": "X", "cat": "kernel", "name": "void k<\"x\">()", "pid": 0, "tid": 7,
    "ts": 5133109885544.956, "dur": 3.967,
    "args": {
      "External id": 18,      "queued": 0, "device": 0, "context": 1,      "stream": 7, "correlation": 44,      "grid": [512, 2, 1],      "block": [256, 1, 1]
    }
  }`,
	`{
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 652, "tid": 652,
    "ts": 5133109885499.017, "dur": 49.039,
    "args": {
      "External id": 9,      "cbid": 211, "correlation": 20
    }
  }`,
	`{
    "ph": "X", "cat": "kernel", "name": "ncclKernel", "pid": 0, "tid": 7,
    "ts": 5, "dur": 4,
    "args": {
      "External id": 18,      "queued": 0, "device": 1, "context": 1,      "stream": 7, "correlation": 45,      "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 1.5,      "grid": [2, 1, 1],      "block": [512, 1, 1],      "est. achieved occupancy %": 0,      "Collective name": "allreduce", "In msg nelems": 8, "Out msg nelems": 8, "Group size": 2, "dtype": "Float", "In split size": "[]", "Out split size": "[]", "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1]"
    }
  }`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
   "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 46, "grid": [1, 1, 1], "block": [32, 1, 1]}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
   "args": {"External id": 3, "device": 0, "stream": 7, "correlation": 47, "kind": "Dispatch Kernel", "grid": [1, 1, 1], "block": [32, 1, 1]}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
   "args": {"External id": 3, "queued": 0, "queued": 1, "device":  2, "stream" : 7, "correlation":48, "stream": 9}}`,
	`{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
   "args": {"External id": 4, "device": 0, "context": 1, "stream": 7, "correlation": 49, "bytes": 4096, "memory bandwidth (GB/s)": 1.5}}`,
	`{"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
   "args": {"device": 0, "context": 1, "stream": 7, "correlation": 50, "bytes": 64, "memory bandwidth (GB/s)": 0.5}}`,
	`{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 652, "tid": 652, "ts": 1, "dur": 2,
   "args": {"cbid": 41, "correlation": 51}}`,
	`{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 652, "tid": 652, "ts": 1, "dur": 2,
   "args": {"External id": 5, "cbid": 307, "correlation": 52}}`,
	`{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": "7", "tid": "9", "ts": 96, "dur": 1, "args": {"correlation": 15}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 9, "ts": 85, "dur": 10,
   "args": {"External id": 6, "Collective name": "allreduce", "Seq": 3}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 9, "ts": 86, "dur": 1, "args": {"Input Dims": [[1, 2]], "s": "}{"}}`,
	`{"ph": "X", "cat": "python_function", "name": "forward", "pid": 7, "tid": 9, "ts": 87, "dur": 1, "args": {"Python id": 1}}`,
	`{"ph": "X", "cat": "user_annotation", "name": "execute_model", "pid": 7, "tid": 9, "dur": 300, "ts": 80}`,
	`{"ph": "X", "cat": "gpu_user_annotation", "name": "step", "tid": 7, "pid": 0, "ts": 81, "dur": 299}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"correlation": 1}, "extra": {"a": [1]}}`,
	`{
    "ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5133109885544.956,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }`,
	`{"ph": "s", "id": "0x2c", "pid": 652, "tid": 652, "ts": 1, "cat": "async_cpu_to_gpu", "name": "async_gpu"}`,
	`{"ph": "s", "id": 1, "pid": 652, "tid": 652, "ts": 1, "name": "no cat yet", "cat": "ac2g"}`,
	`{"ph": "f", "id": 1, "pid": 652, "tid": 652, "ts": 1, "cat": "kernel", "name": "a flow of a kept category"}`,
	`{"ph": "f", "id": 1, "pid": 652, "tid": 652, "ts": 1}`,
	// Flow events: flowEvent's layouts, and near misses left to kinetoFlow.
	`{"ph":"f","id":44,"pid":0,"tid":7,"ts":5133109885544.956,"cat":"ac2g","name":"ac2g","bp":"e"}`,
	`{"ph":"s","id":123456789012,"pid":3113936,"tid":3126441,"ts":1661203463029548,"cat":"async_cpu_to_gpu","name":"async_gpu"}`,
	`{
    "ph": "t", "id": 44, "pid": 0, "tid": 7, "ts": 5133109885544.956,
    "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"
  }`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5133109885544.956, "cat": "some other", "name": "x"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5133109885544.956, "cat": "ac2g"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5133109885544.956, "cat": "ac2\u0067", "name": "escaped"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5133109885544.956, "cat": "a\"c", "name": "escaped"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": -5133109885544.956, "cat": "ac2g"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5.1e3, "cat": "ac2g"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7.5, "ts": 5, "cat": "ac2g"}`,
	`{"ph": "f", "id": 44, "pid": "0", "tid": 7, "ts": 5, "cat": "ac2g"}`,
	`{"ph": "f", "id": 44, "pid": 0,  "tid": 7, "ts": 5, "cat": "ac2g"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5 , "cat": "ac2g"}`,
	`{"ph":	"f", "id": 44, "pid": 0,` + "\n\t" + `"tid": 7, "ts": 5, "cat": "ac2g"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5, "cat": "", "name": "empty category"}`,
	`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5, "cat": "user_annotation", "name": "kept category"}`,
	`{"ph": "M", "id": 44, "pid": 0, "tid": 7, "ts": 5, "cat": "ac2g", "name": "thread_name"}`,
	// Kept events: numberMembers and the number args, and near misses.
	`{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":652,"tid":652,"ts":5133109885499.017,"dur":49.039,"args":{"External id":9,"cbid":211,"correlation":20}}`,
	`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1661203463029548,"dur":3,"args":{"External id":18,"queued":0,"device":0,"context":1,"stream":7,"correlation":44,"blocks per SM":7.757576,"grid":[512, 2, 1],"block":[256, 1, 1]}}`,
	`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 652, "tid": 652, "ts": 5.1e3, "dur": -49.039,
   "args": {"External id": -9, "cbid": 2.5e1, "correlation": 1234567890123456789012}}`,
	`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 652, "tid": 652, "ts": 5, "dur": 49.0,
   "args": {"External id": 9.5, "cbid": 7.0, "correlation": 123456789012345678}}`,
	`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 652, "tid": 652, "ts": 5, "dur": 4,
   "args": {"External id": "9", "cbid": true, "correlation": 1234567890123456789}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": "0", "tid": 7, "ts": 5, "dur": 4, "args": {"correlation": 1 }}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 4}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5,"dur": 4 , "args": {"correlation": 1}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0,` + "\n\t" + `"tid": 7, "ts": 5, "dur": 4, "args": {"correlation":` + "\n" + `1}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "dur": 4, "ts": 5, "args": {"correlation": 1}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 4e0, "args": {"correlation": 1}}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 4, "args": null, "x": 1}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 4, "args": [1, {"correlation": 2}]}`,
	`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 4, "args": {}, "name": "k2"}`,
	`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":4,"args":{"correlation":2,"stream":7},"extra":{"a":[1]}}`,
	`{"ph": "X", "cat": "gpu_user_annotation", "name": "step", "pid": 0, "tid": 7, "ts": 81, "dur": 299,
    "args": {"stream": 7, "correlation": 3}}`,
	// cpu_op and python_function events: eventName's layouts and near misses.
	`{"ph":"X","cat":"cpu_op","name":"aten::view","pid":652,"tid":652,"ts":5133109882446.553,"dur":8.139,"args":{"External id":5,"Concrete Inputs":["", "[-1]"],"Input Dims":[[4, 128], []],"Ev Idx":5}}`,
	`{"ph":"X","cat":"cpu_op","name":"aten::embedding","pid":652,"tid":652,"ts":5133109885345.644,"dur":211.883,"args":{"External id":11,"Input Dims":[[128256, 4096], [512], [], [], []],"Ev Idx":11}}`,
	`{
    "ph": "X", "cat": "cpu_op", "name": "aten::embedding", "pid": 652, "tid": 652,
    "ts": 5133109885345.644, "dur": 211.883,
    "args": {
      "External id": 11,"Record function id": 0, "Concrete Inputs": ["", "", "-1", "False", "False"], "Input Dims": [[128256, 4096], [512], [], [], []], "Ev Idx": 11
    }
  }`,
	`{
    "ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 652, "tid": 652,
    "ts": 5133109882524.689, "dur": 2545.320,
    "args": {
      "External id": 9,"Record function id": 0, "Concrete Inputs": ["", "", "True"], "Input Dims": [[512], [512], []], "Ev Idx": 9
    }
  }`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten::\"q\"", "pid": 7, "tid": 9, "ts": 86, "dur": 1, "args": {"s": "}"}}`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten\u003a:embedding", "pid": 7, "tid": 9, "ts": 86, "dur": 1}`,
	`{"ph": "X", "cat": "cpu_op", "name":  "aten::mm", "pid": 7, "tid": 9, "ts": 86, "dur": 1}`,
	`{"ph": "X", "cat": "cpu_op", "pid": 7, "name": "record_param_comms", "tid": 9, "ts": 86, "dur": 1}`,
	`{"ph": "X", "cat": "cpu_op", "name": "record_param_comms"}`,
	`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"a": {"b": "{"}}, "pid": 7}`,
	`{"ph":"X","cat":"python_function","name":"vllm/v1/worker/gpu_worker.py(263): execute_model","pid":7,"tid":9,"ts":87,"dur":1,"args":{"Python id":1}}`,
	`{
    "ph": "X", "cat": "python_function", "name": "tp_decode.py(482): main", "pid": 652, "tid": 652,
    "ts": 5133109880647.140, "dur": 248096.854,
    "args": {
      "Python parent id": 1, "Python id": 2, "Ev Idx": 13517
    }
  }`,
	`{"ph": "M", "id": 1, "name": "thread_name", "pid": 7, "tid": 9, "args": {"name": "main"}}`,
	`{"ph": "X", "cat": "kernel"}`,
}

// TestKinetoFastPaths checks that events in Kineto's layout, read by the
// fast paths, give what the same events with their members reordered give
// through the general key loop.
func TestKinetoFastPaths(t *testing.T) {
	for _, ev := range kinetoEvents {
		fast := `{"traceEvents": [` + ev + `]}`
		slow := `{"traceEvents": [` + reordered(t, ev) + `]}`
		a, err := Read(strings.NewReader(fast), "fast.json", Options{})
		if err != nil {
			t.Fatalf("%s: %v", fast, err)
		}
		b, err := Read(strings.NewReader(slow), "slow.json", Options{})
		if err != nil {
			t.Fatalf("%s: %v", slow, err)
		}
		if sa, sb := summarize(a), summarize(b); !reflect.DeepEqual(sa, sb) {
			t.Errorf("%s:\nfast paths %+v\ngeneral    %+v", ev, sa, sb)
		}
	}
}

// TestFastPathErrors checks that text the fast paths do not read gives the
// error the general parse gives. (What follows a member that decides the
// event is dropped is only balanced, not checked: see SkipRest.)
func TestFastPathErrors(t *testing.T) {
	for _, ev := range []string{
		`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5, "cat": "ac2g" x, "name": "a"}`,
		`{"ph":"f","id":44,"pid":0,"tid":7,"ts":5,"cat":"ac2g"]`,
		`{"ph": "f", "id": 44, "pid": 0, "tid": 7, "ts": 5 x, "cat": "ac2g"}`,
		`{"ph": "f", "id": 44, "pid": 0 "tid": 7, "ts": 5, "cat": "ac2g"}`,
		`{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7`,
		`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 4, "args": {"correlation": 1 x}}`,
		`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 4, "args": {"correlation": 1} x}`,
		`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":4,"args":{"correlation":1,}}`,
	} {
		if _, err := Read(strings.NewReader(`{"traceEvents": [`+ev+`]}`), "bad.json", Options{}); err == nil {
			t.Errorf("%s: no error", ev)
		}
	}
}

// TestLaunchDims checks that launchDims, where it reads an array, reads
// what Value and dims read, and leaves the rest to them.
func TestLaunchDims(t *testing.T) {
	for _, tc := range []struct {
		text string
		fast bool
	}{
		{"[512, 2, 1],      ", true},
		{"[512,2,1]}        ", true},
		{"[123456789, 999999999, 1]}        ", true},
		{"[1234567890, 1, 1]}       ", false},
		{"[512,  2, 1]}     ", false},
		{"[ 512, 2, 1]}     ", false},
		{"[512, 2]}         ", false},
		{"[512, 2, 1, 1]}   ", false},
		{"[512, -2, 1]}     ", false},
		{"[512, 2.5, 1]}    ", false},
		{"[512, 2, 1 ]}     ", false},
		{`"[512, 2, 1]"}    `, false},
		{"[512, 2, 1]", false}, // too near the end
	} {
		s := bytesScanner([]byte(tc.text))
		var raw []byte
		end, err := s.Value(0, &raw)
		d, e := s.launchDims(0)
		if (e >= 0) != tc.fast || e >= 0 && (err != nil || e != end || d != dims(raw)) {
			t.Errorf("launchDims(%q) = %v, %d; Value %q, %d, %v; dims %v", tc.text, d, e, raw, end, err, dims(raw))
		}
	}
}
