package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// pyncclTrace writes the real MI300X RCCL trace as vLLM's pynccl path
// would have left it: no record_param_comms ops, no nccl:NAME annotations
// (CPU or GPU), no collective args on the kernels, and the c10d op that
// launched each AllReduce renamed to vLLM's custom op vllm::all_reduce
// (the broadcasts keep their c10d::broadcast_, which names nothing). It
// returns the path and, from the raw events, the correlation ids of the
// ncclDevKernel_Generic kernels whose launch lies inside a vllm::all_reduce
// op on the launching thread, and the number of Generic kernels.
func pyncclTrace(t *testing.T) (path string, inOp map[float64]bool, generic int) {
	t.Helper()
	var doc map[string]any
	testkit.Must(t, json.Unmarshal(testkit.Gunzip(t, testkit.Public(t, "tracelens-mi300-resnet-rccl.json.gz")), &doc))
	var kept []any
	type span struct{ tid, ts, end float64 }
	var ops []span
	launches := map[float64]map[string]any{} // correlation -> runtime event
	for _, e := range doc["traceEvents"].([]any) {
		ev := e.(map[string]any)
		name, _ := ev["name"].(string)
		cat, _ := ev["cat"].(string)
		args, _ := ev["args"].(map[string]any)
		switch {
		case name == "record_param_comms", strings.HasPrefix(name, "nccl:"):
			continue
		case cat == "cpu_op" && name == "c10d::allreduce_":
			ev["name"] = "vllm::all_reduce"
			tid, _ := ev["tid"].(float64)
			ts, dur := ev["ts"].(float64), ev["dur"].(float64)
			ops = append(ops, span{tid, ts, ts + dur})
		case cat == "kernel":
			for _, k := range []string{"Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype",
				"In split size", "Out split size", "Process Group Name", "Process Group Description", "Process Group Ranks", "Seq"} {
				delete(args, k)
			}
		case cat == "cuda_runtime" && args != nil:
			if c, ok := args["correlation"].(float64); ok {
				launches[c] = ev
			}
		}
		kept = append(kept, ev)
	}
	doc["traceEvents"] = kept
	inOp = map[float64]bool{}
	for _, e := range kept {
		ev := e.(map[string]any)
		if ev["cat"] != "kernel" || !strings.HasPrefix(ev["name"].(string), "ncclDevKernel_Generic") {
			continue
		}
		generic++
		c := ev["args"].(map[string]any)["correlation"].(float64)
		l, ok := launches[c]
		if !ok {
			continue
		}
		tid, _ := l["tid"].(float64)
		for _, o := range ops {
			if o.tid == tid && o.ts <= l["ts"].(float64) && l["ts"].(float64) <= o.end {
				inOp[c] = true
			}
		}
	}
	data, err := json.Marshal(doc)
	testkit.Must(t, err)
	path = filepath.Join(t.TempDir(), "pynccl-rank0.json")
	testkit.Must(t, os.WriteFile(path, data, 0o644))
	return path, inOp, generic
}

// TestGenericByLaunchingOp: RCCL's Generic kernels that only the launching
// custom op names (vLLM's pynccl path: no record_param_comms, no
// nccl:NAME annotation, no args) are AllReduce; the others stay Other comm.
func TestGenericByLaunchingOp(t *testing.T) {
	path, inOp, generic := pyncclTrace(t)
	if len(inOp) == 0 || len(inOp) == generic {
		t.Fatalf("the altered trace has %d Generic kernels, %d in vllm::all_reduce: want some in, some not", generic, len(inOp))
	}
	set, err := ingest.Open(path, ingest.Options{})
	testkit.Must(t, err)
	tr := set.Traces[0]
	if tr.CommOps.Len() != 0 {
		t.Fatalf("%d record_param_comms ops kept; the altered trace has none", tr.CommOps.Len())
	}
	buckets := eventBuckets(t, tr)
	seen := 0
	for i, ev := range tr.GPU.All() {
		if !strings.HasPrefix(tr.Name(ev.Name), "ncclDevKernel_Generic") {
			continue
		}
		seen++
		want := CommOther
		if inOp[float64(ev.Correlation)] {
			want = AllReduce
		}
		if buckets[i] != want {
			t.Errorf("Generic kernel of correlation %d (launch in vllm::all_reduce: %v) in %s, want %s",
				ev.Correlation, inOp[float64(ev.Correlation)], buckets[i], want)
		}
	}
	if seen != generic {
		t.Errorf("%d Generic kernels read, the trace has %d", seen, generic)
	}
}

// TestUnnamedCollectives: the checks list the Generic kernels whose
// collective nothing in the trace names, with those launched before the
// profile began, and the headline says so. On the real MI300X trace they
// are the Generic kernels without collective args whose correlation no
// runtime call has (counted from the raw events); on its pynccl-shaped
// rewrite, also the broadcasts, launched in the trace by an op that names
// nothing.
func TestUnnamedCollectives(t *testing.T) {
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Cat  string         `json:"cat"`
			Dur  float64        `json:"dur"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	testkit.Must(t, json.Unmarshal(testkit.Gunzip(t, testkit.Public(t, "tracelens-mi300-resnet-rccl.json.gz")), &doc))
	launched := map[float64]bool{}
	for _, e := range doc.TraceEvents {
		if e.Cat == "cuda_runtime" {
			if c, ok := e.Args["correlation"].(float64); ok {
				launched[c] = true
			}
		}
	}
	var want UnnamedCollective
	for _, e := range doc.TraceEvents {
		if e.Cat != "kernel" || !strings.HasPrefix(e.Name, "ncclDevKernel_Generic") || e.Args["Collective name"] != nil {
			continue
		}
		if c, _ := e.Args["correlation"].(float64); !launched[c] {
			want.Name, want.Count, want.NoLaunch, want.US = e.Name, want.Count+1, want.NoLaunch+1, want.US+e.Dur
		}
	}
	if want.Count == 0 {
		t.Fatal("the MI300X trace has no Generic kernel launched before it: the test checks nothing")
	}
	altered, inOp, generic := pyncclTrace(t)
	for _, tc := range []struct {
		path            string
		count, noLaunch int
	}{
		{testkit.Public(t, "tracelens-mi300-resnet-rccl.json.gz"), want.Count, want.NoLaunch},
		{altered, generic - len(inOp), want.NoLaunch},
	} {
		_, r := analyzePath(t, tc.path)
		got := r.Checks.Ranks[0].Rules.UnnamedCollectives
		if len(got) != 1 || got[0].Name != want.Name || got[0].Count != tc.count || got[0].NoLaunch != tc.noLaunch {
			t.Errorf("%s: unnamed collectives %+v; want %d calls of %s, %d launched before the trace", filepath.Base(tc.path), got, tc.count, want.Name, tc.noLaunch)
		}
		if tc.count == want.Count && len(got) == 1 && math.Abs(got[0].US-want.US) > 0.01 {
			t.Errorf("%s: %.3f us, want %.3f", filepath.Base(tc.path), got[0].US, want.US)
		}
		if c := strings.Join(r.Headline.Caveats, "; "); !strings.Contains(c, fmt.Sprintf("%d calls of %s", tc.count, want.Name)) ||
			!strings.Contains(c, fmt.Sprintf("%d of them were launched before the profile began", tc.noLaunch)) {
			t.Errorf("%s: caveats %q; want the unnamed collectives", filepath.Base(tc.path), c)
		}
	}
}
