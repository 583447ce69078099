package diff_test

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
	"kinetoscope/render"
	"kinetoscope/sampletraces"
)

// protoDoc is the part of a Kineto trace the NCCL_PROTO test reads.
type protoDoc struct {
	TraceEvents []struct {
		Name string  `json:"name"`
		Cat  string  `json:"cat"`
		Ph   string  `json:"ph"`
		Ts   float64 `json:"ts"`
		Dur  float64 `json:"dur"`
		Args struct {
			Correlation *float64 `json:"correlation"`
			Block       []int    `json:"block"`
		} `json:"args"`
	} `json:"traceEvents"`
}

// collKernel is one NCCL kernel of a decode step.
type collKernel struct {
	name       string
	start, end float64
}

// protoRun is what the test reads from one run's traces with encoding/json,
// independently of ingest and analyze.
type protoRun struct {
	names  map[string]bool            // GPU event names (kernel, memcpy, memset)
	blocks map[string]map[string]bool // NCCL kernel name -> launch block shapes
	ranks  [][]collKernel             // per rank: decode-step NCCL kernels by start
	steps  int                        // decode steps per rank
}

// readProtoRun reads every rank trace of a run directory.
func readProtoRun(t *testing.T, dir string) protoRun {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no traces (%v)", dir, err)
	}
	sort.Strings(files)
	run := protoRun{names: map[string]bool{}, blocks: map[string]map[string]bool{}}
	for _, f := range files {
		var doc protoDoc
		if err := sampletraces.ReadJSON(f, &doc); err != nil {
			t.Fatal(err)
		}
		coll, steps := run.addRank(&doc)
		if run.steps != 0 && steps != run.steps {
			t.Fatalf("%s: %d decode steps, another rank has %d", f, steps, run.steps)
		}
		run.steps = steps
		run.ranks = append(run.ranks, coll)
	}
	if run.steps == 0 {
		t.Fatalf("%s: no decode steps", dir)
	}
	return run
}

// addRank records one rank's GPU event names and NCCL launch shapes and
// returns its decode-step NCCL kernels (attributed to a step by the time of
// their launch) and its number of decode steps.
func (r *protoRun) addRank(doc *protoDoc) ([]collKernel, int) {
	var windows [][2]float64
	launch := map[float64]float64{} // correlation -> launch time
	for _, e := range doc.TraceEvents {
		switch {
		case e.Cat == "user_annotation" && e.Ph == "X" && strings.HasPrefix(e.Name, "execute_context_0("):
			windows = append(windows, [2]float64{e.Ts, e.Ts + e.Dur})
		case (e.Cat == "cuda_runtime" || e.Cat == "cuda_driver") && e.Args.Correlation != nil:
			launch[*e.Args.Correlation] = e.Ts
		}
	}
	var coll []collKernel
	for _, e := range doc.TraceEvents {
		if e.Cat != "kernel" && e.Cat != "gpu_memcpy" && e.Cat != "gpu_memset" {
			continue
		}
		r.names[e.Name] = true
		if e.Cat != "kernel" || !strings.HasPrefix(e.Name, "ncclDevKernel_") {
			continue
		}
		if r.blocks[e.Name] == nil {
			r.blocks[e.Name] = map[string]bool{}
		}
		r.blocks[e.Name][fmt.Sprint(e.Args.Block)] = true
		if e.Args.Correlation == nil {
			continue
		}
		at, ok := launch[*e.Args.Correlation]
		if ok && inAny(at, windows) {
			coll = append(coll, collKernel{e.Name, e.Ts, e.Ts + e.Dur})
		}
	}
	sort.Slice(coll, func(i, j int) bool { return coll[i].start < coll[j].start })
	return coll, len(windows)
}

func inAny(ts float64, windows [][2]float64) bool {
	for _, w := range windows {
		if ts >= w[0] && ts <= w[1] {
			return true
		}
	}
	return false
}

// perStepUS is the summed duration of the decode-step NCCL kernels whose
// name holds sub, per step, mean over ranks.
func (r protoRun) perStepUS(sub string) float64 {
	sum := 0.0
	for _, ks := range r.ranks {
		for _, k := range ks {
			if strings.Contains(k.name, sub) {
				sum += k.end - k.start
			}
		}
	}
	return sum / float64(r.steps*len(r.ranks))
}

// transferUS is the collective time after the last rank arrived, per decode
// step, mean over ranks: the k-th collective of every rank is one
// collective, and each rank's part after the latest start is transfer.
func (r protoRun) transferUS(t *testing.T) float64 {
	t.Helper()
	n := len(r.ranks[0])
	for _, ks := range r.ranks {
		if len(ks) != n {
			t.Fatalf("decode collectives per rank differ: %d and %d", n, len(ks))
		}
	}
	sum := 0.0
	for i := range n {
		last := 0.0
		for _, ks := range r.ranks {
			last = math.Max(last, ks[i].start)
		}
		for _, ks := range r.ranks {
			sum += math.Max(0, ks[i].end-last)
		}
	}
	return sum / float64(r.steps*len(r.ranks))
}

// minus returns the names in a and not in b.
func minus(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if !b[k] {
			out[k] = true
		}
	}
	return out
}

// useNames returns the names of a kernel list as a set.
func useNames(ks []diff.KernelUse) map[string]bool {
	out := map[string]bool{}
	for _, k := range ks {
		out[k.Name] = true
	}
	return out
}

// sameSign reports whether a and b are both positive, both negative or both
// zero.
func sameSign(a, b float64) bool {
	return (a > 0) == (b > 0) && (a < 0) == (b < 0)
}

// TestCompareRealNCCLSimple diffs the real eager run against the same run
// with NCCL_PROTO=Simple and checks the diff against the traces read here.
func TestCompareRealNCCLSimple(t *testing.T) {
	eager, simple := testkit.Real(t, "eager"), testkit.Real(t, "nccl_simple")
	d, err := diff.Compare(analysePath(t, eager), analysePath(t, simple), diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base, head := readProtoRun(t, eager), readProtoRun(t, simple)
	text := render.DiffHeadlineText(d)
	t.Log(text)

	checkOneRunOnly(t, d, base, head)
	checkProtocolShows(t, base, head)
	checkAllReduce(t, d, base, head)
	checkTransfer(t, d, base, head)
	if want := "comm transfer 0.058 -> 0.223 ms/step"; !strings.Contains(text, want) {
		t.Errorf("headline %q does not carry the transfer change %q", text, want)
	}
}

// checkOneRunOnly: the kernels the diff lists in one run only are exactly
// the names found in one run's traces only, and every such name is an NCCL
// collective kernel (NCCL_PROTO is the only change).
func checkOneRunOnly(t *testing.T, d *diff.Diff, base, head protoRun) {
	t.Helper()
	if !d.Kernels.Complete {
		t.Error("kernel lists incomplete")
	}
	onlyBase, onlyHead := minus(base.names, head.names), minus(head.names, base.names)
	if got := useNames(d.Kernels.Removed); !sameKeys(got, onlyBase) {
		t.Errorf("removed kernels %v, traces hold in base only %v", got, onlyBase)
	}
	if got := useNames(d.Kernels.Added); !sameKeys(got, onlyHead) {
		t.Errorf("added kernels %v, traces hold in head only %v", got, onlyHead)
	}
	for _, set := range []map[string]bool{onlyBase, onlyHead} {
		for name := range set {
			if !strings.HasPrefix(name, "ncclDevKernel_") {
				t.Errorf("%q is in one run only but is no NCCL kernel", name)
			}
		}
	}
}

// checkProtocolShows: the NCCL kernels must show the protocol change, by
// name or, for a name in both runs, by launch shape; else the pair does not
// show NCCL_PROTO at all. NCCL 2.28 names its kernels after a representative
// protocol (RING_LL), so Simple shows in the block size (LL 512 threads,
// Simple 544).
func checkProtocolShows(t *testing.T, base, head protoRun) {
	t.Helper()
	bn, hn := nameSet(base.blocks), nameSet(head.blocks)
	shows := len(minus(bn, hn))+len(minus(hn, bn)) > 0
	for name, bb := range base.blocks {
		if hb, ok := head.blocks[name]; ok && !sameKeys(bb, hb) {
			shows = true
			t.Logf("%s: blocks %v -> %v", name, keys(bb), keys(hb))
		}
	}
	if !shows {
		t.Error("no NCCL kernel changed name or launch shape between the runs")
	}
}

// nameSet returns the keys of m as a set.
func nameSet(m map[string]map[string]bool) map[string]bool {
	out := map[string]bool{}
	for name := range m {
		out[name] = true
	}
	return out
}

// keys returns the keys of a set, sorted.
func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkAllReduce: the AllReduce bucket's ms per step on each side is the
// AllReduce kernel time read here, and its change has the same sign.
func checkAllReduce(t *testing.T, d *diff.Diff, base, head protoRun) {
	t.Helper()
	b, ok := d.Buckets[analyze.AllReduce]
	if !ok {
		t.Fatal("no AllReduce bucket in the diff")
	}
	wantBase, wantHead := base.perStepUS("AllReduce"), head.perStepUS("AllReduce")
	for _, c := range []struct {
		side      string
		got, want float64
	}{{"base", b.BaseUSPerStep, wantBase}, {"head", b.HeadUSPerStep, wantHead}} {
		if math.Abs(c.got-c.want) > 0.05*c.want {
			t.Errorf("%s AllReduce %.1f us/step, read here %.1f", c.side, c.got, c.want)
		}
	}
	if !sameSign(b.DeltaUS, wantHead-wantBase) {
		t.Errorf("AllReduce delta %+.1f us/step, read here %+.1f", b.DeltaUS, wantHead-wantBase)
	}
}

// checkTransfer: the cross-rank transfer on each side is within 10% of the
// one computed here from the aligned collectives, and its change has the
// same sign.
func checkTransfer(t *testing.T, d *diff.Diff, base, head protoRun) {
	t.Helper()
	if d.Comm == nil {
		t.Fatal("no transfer/wait comparison for two 2-rank runs")
	}
	wantBase, wantHead := base.transferUS(t), head.transferUS(t)
	if math.Abs(d.Comm.BaseTransferUS-wantBase) > 0.1*wantBase || math.Abs(d.Comm.HeadTransferUS-wantHead) > 0.1*wantHead {
		t.Errorf("transfer %.1f -> %.1f us/step, read here %.1f -> %.1f",
			d.Comm.BaseTransferUS, d.Comm.HeadTransferUS, wantBase, wantHead)
	}
	want := wantHead - wantBase
	if !sameSign(d.Comm.DeltaTransfer, want) {
		t.Errorf("transfer delta %+.1f us/step, read here %+.1f", d.Comm.DeltaTransfer, want)
	}
}
