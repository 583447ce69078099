package analyze

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// refEvent is a GPU event or a CPU runtime/driver call read from the raw
// trace with encoding/json.
type refEvent struct {
	start, end int64 // ns
	name, cat  string
	corr       int64
	thread     string // pid/tid of a CPU call
	coll       string // "Collective name" arg
	stream     int    // args "stream" of a GPU event, else its tid
	order      int    // position in the file
}

// refTrace is one trace file read independently of ingest.
type refTrace struct {
	gpu    []refEvent
	launch map[int64]refEvent // by correlation
	syncs  map[string][]refEvent
	// replayStart is the first start of the GPU events of each graph
	// launch's correlation.
	replayStart map[int64]int64
	// lastProfilerStep is the start of the last ProfilerStep#N
	// annotation, 0 when there is none.
	lastProfilerStep int64
}

// refNS parses a trace time (microseconds, decimal text) into ns without
// going through float64.
func refNS(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if strings.ContainsAny(s, "eE") {
		f, _ := strconv.ParseFloat(s, 64)
		return int64(math.Round(f * 1e3))
	}
	frac = (frac + "000")[:3]
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	ns := w*1000 + f
	if neg {
		ns = -ns
	}
	return ns
}

func readRefTrace(t *testing.T, path string) *refTrace {
	t.Helper()
	var doc struct {
		TraceEvents []struct {
			Ph, Cat, Name string
			Ts, Dur       json.Number
			Pid, Tid      any
			Args          map[string]any
		} `json:"traceEvents"`
	}
	if err := sampletraces.ReadJSON(path, &doc); err != nil {
		t.Fatal(err)
	}
	rt := &refTrace{launch: make(map[int64]refEvent), syncs: make(map[string][]refEvent), replayStart: make(map[int64]int64)}
	for i, e := range doc.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		cat, name, args := e.Cat, e.Name, e.Args
		ev := refEvent{start: refNS(e.Ts.String()), name: name, cat: cat, order: i}
		ev.end = ev.start + refNS(e.Dur.String())
		if c, ok := args["correlation"].(float64); ok {
			ev.corr = int64(c)
		}
		if strings.HasPrefix(name, "ProfilerStep#") && cat == "user_annotation" {
			rt.lastProfilerStep = max(rt.lastProfilerStep, ev.start)
		}
		switch cat {
		case "kernel", "gpu_memcpy", "gpu_memset":
			ev.coll, _ = args["Collective name"].(string)
			if s, ok := args["stream"].(float64); ok {
				ev.stream = int(s)
			} else if s, ok := e.Tid.(float64); ok {
				ev.stream = int(s)
			}
			rt.gpu = append(rt.gpu, ev)
		case "cuda_runtime", "cuda_driver":
			ev.thread = fmt.Sprint(e.Pid, "/", e.Tid)
			if ev.corr > 0 {
				rt.launch[ev.corr] = ev
			}
			lower := name
			if strings.Contains(lower, "Synchronize") || lower == "cudaMemcpy" || lower == "hipMemcpy" || lower == "hipMemcpyWithStream" {
				rt.syncs[ev.thread] = append(rt.syncs[ev.thread], ev)
			}
		}
	}
	for _, g := range rt.gpu {
		if l, ok := rt.launch[g.corr]; ok && strings.Contains(l.name, "GraphLaunch") {
			if v, ok := rt.replayStart[g.corr]; !ok || g.start < v {
				rt.replayStart[g.corr] = g.start
			}
		}
	}
	return rt
}

// refAccount is the reference's account of one step.
type refAccount struct {
	span, compute, memory, comm, idle, boundary        int64
	hostLate, afterSync, graph, launchGap, unexplained int64
}

// refUnion returns the length of the union of the events' intervals.
func refUnion(evs []refEvent) int64 {
	evs = slices.Clone(evs)
	slices.SortFunc(evs, func(a, b refEvent) int { return cmp.Compare(a.start, b.start) })
	var total int64
	for i := 0; i < len(evs); {
		s, e := evs[i].start, evs[i].end
		for i++; i < len(evs) && evs[i].start <= e; i++ {
			e = max(e, evs[i].end)
		}
		total += e - s
	}
	return total
}

// refStep accounts for one step's events with plain loops: unions of the
// events of each group for busy time (compute first, then memory, then
// communication), and each gap of the union of all classified by the event
// that ends it and its launch.
func refStep(rt *refTrace, evs []refEvent, group func(refEvent) Group, gapNS int64) refAccount {
	var a refAccount
	first, last := evs[0].start, evs[0].end
	var comp, compMem []refEvent
	for _, e := range evs {
		first, last = min(first, e.start), max(last, e.end)
		switch group(e) {
		case GroupCompute:
			comp = append(comp, e)
			compMem = append(compMem, e)
		case GroupMemory:
			compMem = append(compMem, e)
		}
	}
	a.span = last - first
	busy := refUnion(evs)
	a.compute = refUnion(comp)
	a.memory = refUnion(compMem) - a.compute
	a.comm = busy - a.compute - a.memory
	a.idle = a.span - busy
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(x, y refEvent) int { return cmp.Compare(x.start, y.start) })
	end := sorted[0].end
	for _, e := range sorted[1:] {
		if e.start > end {
			a.classify(rt, end, e, gapNS)
		}
		end = max(end, e.end)
	}
	return a
}

func (a *refAccount) classify(rt *refTrace, idleFrom int64, next refEvent, gapNS int64) {
	d := next.start - idleFrom
	l, ok := rt.launch[next.corr]
	blocked := false
	if ok {
		for _, s := range rt.syncs[l.thread] {
			blocked = blocked || (s.start < l.start && s.end >= idleFrom)
		}
	}
	switch {
	case !ok:
		a.unexplained += d
	case l.start > idleFrom && blocked:
		a.afterSync += d
	case l.start > idleFrom:
		a.hostLate += d
	case strings.Contains(l.name, "GraphLaunch") && rt.replayStart[next.corr] == next.start:
		a.graph += d
	case d <= gapNS:
		a.launchGap += d
	default:
		a.unexplained += d
	}
}

// refSteps cuts rt's GPU events into the report's steps by the CPU start
// of their launch (their own start without one), as the report's steps
// start (Step.StartUS).
func refSteps(rt *refTrace, steps []Step) [][]refEvent {
	starts := make([]int64, len(steps))
	for i, s := range steps {
		starts[i] = int64(math.Round(s.StartUS * 1e3))
	}
	out := make([][]refEvent, len(steps))
	launchTS := func(g refEvent) int64 {
		if l, ok := rt.launch[g.corr]; ok {
			return l.start
		}
		return g.start
	}
	for _, g := range rt.gpu {
		if i := sort64(starts, launchTS(g)); i >= 0 {
			out[i] = append(out[i], g)
		}
	}
	// An inferred last step ends where the profile cut its cycle short
	// (a time the report does not give): the events launched last are
	// outside it.
	if n := len(steps); n > 0 && len(out[n-1]) > steps[n-1].Kernels {
		last := out[n-1]
		slices.SortStableFunc(last, func(a, b refEvent) int { return cmp.Compare(launchTS(a), launchTS(b)) })
		out[n-1] = last[:steps[n-1].Kernels]
	}
	return out
}

// sort64 returns the index of the last start <= ts, -1 when none is.
func sort64(starts []int64, ts int64) int {
	i := -1
	for k, s := range starts {
		if s <= ts {
			i = k
		}
	}
	return i
}

// accountTraces lists every real sample directory and every public trace
// with GPU events.
func accountTraces(t *testing.T) []string {
	var paths []string
	for _, v := range sampletraces.RealAll() {
		paths = append(paths, testkit.Real(t, v))
	}
	pub, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil || len(pub) == 0 {
		t.Fatalf("public traces: %v", err)
	}
	for _, p := range pub {
		// Two HTA traces have no GPU event (CPU only): no step to account.
		if !strings.Contains(p, "non-gpu") && !strings.Contains(p, "no-distributed-info") {
			paths = append(paths, p)
		}
	}
	return paths
}

// TestAccountReference checks the account of every step of every real
// sample and public trace against the reference above, read with
// encoding/json: compute, memory and communication busy time, idle by
// cause and the step boundary, and that the parts add up to the span.
func TestAccountReference(t *testing.T) {
	cls, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	group := func(e refEvent) Group {
		b, _ := BucketByID(cls.Match(e.name, gpuKind(e.cat), e.coll, false))
		return b.Group
	}
	for _, path := range accountTraces(t) {
		set, r := analyzePath(t, path)
		if r.Account == nil || r.Account.LaunchGapUS != DefaultLaunchGapUS {
			t.Errorf("%s: account options %+v", path, r.Account)
		}
		checked := 0
		for ri, rk := range r.Ranks {
			rt := readRefTrace(t, set.Traces[ri].Path)
			byStep := refSteps(rt, rk.Steps)
			prevEnd := int64(math.MinInt64)
			for si, s := range rk.Steps {
				evs := byStep[si]
				if len(evs) == 0 || s.Account == nil {
					if (len(evs) == 0) != (s.Account == nil) && s.Kernels > 0 {
						t.Errorf("%s rank %d step %d: %d reference events, account %v", path, rk.Rank, s.Index, len(evs), s.Account)
					}
					continue
				}
				if len(evs) != s.Kernels {
					t.Errorf("%s rank %d step %d: reference has %d events, the step %d", path, rk.Rank, s.Index, len(evs), s.Kernels)
					continue
				}
				ref := refStep(rt, evs, group, int64(DefaultLaunchGapUS*1e3))
				first := evs[0].start
				for _, e := range evs {
					first = min(first, e.start)
				}
				if prevEnd != math.MinInt64 && first > prevEnd {
					ref.boundary = first - prevEnd
				}
				for _, e := range evs {
					prevEnd = max(prevEnd, e.end)
				}
				compareAccount(t, fmt.Sprintf("%s rank %d step %d", filepath.Base(path), rk.Rank, s.Index), s.Account, ref)
				checked++
			}
		}
		t.Logf("%s: %d step accounts checked", filepath.Base(path), checked)
		if checked == 0 {
			t.Errorf("%s: no step account checked", path)
		}
	}
}

func gpuKind(cat string) ingest.GPUKind {
	switch cat {
	case "gpu_memcpy":
		return ingest.KindMemcpy
	case "gpu_memset":
		return ingest.KindMemset
	}
	return ingest.KindKernel
}

// compareAccount fails t when a's figures differ from ref's by more than
// a nanosecond a gap (rounding of us figures), or its parts do not add up
// to the span within 0.1%.
func compareAccount(t *testing.T, what string, a *Account, ref refAccount) {
	t.Helper()
	tol := 0.002 * float64(max(1, len(a.Compute)+8))
	check := func(name string, got float64, want int64) {
		if math.Abs(got-us(want)) > tol+1e-6*us(ref.span) {
			t.Errorf("%s: %s %.3f us, reference %.3f us", what, name, got, us(want))
		}
	}
	check("span", a.SpanUS, ref.span)
	check("compute", a.ComputeUS, ref.compute)
	check("memory", a.MemoryUS, ref.memory)
	check("communication", a.TransferUS+a.WaitUS+a.CommUnsplitUS, ref.comm)
	check("idle", a.IdleUS, ref.idle)
	check("host late", a.Idle.HostLateUS, ref.hostLate)
	check("after sync", a.Idle.AfterSyncUS, ref.afterSync)
	check("graph launch", a.Idle.GraphLaunchUS, ref.graph)
	check("launch gap", a.Idle.LaunchGapUS, ref.launchGap)
	check("unexplained", a.Idle.UnexplainedUS, ref.unexplained)
	check("boundary", a.BoundaryUS, ref.boundary)
	if sum := a.Sum(); math.Abs(sum-a.SpanUS) > 0.001*a.SpanUS {
		t.Errorf("%s: parts add up to %.3f us, span %.3f us", what, sum, a.SpanUS)
	}
	var c float64
	for _, v := range a.Compute {
		c += v
	}
	if math.Abs(c-a.ComputeUS) > tol {
		t.Errorf("%s: compute buckets add up to %.3f us, compute %.3f us", what, c, a.ComputeUS)
	}
}

// TestSyncCallsKept checks that ingest keeps every synchronising runtime
// call the account relies on (Trace.Launches holds the calls with a
// correlation id; sync calls carry one): the raw trace's count of each,
// read with encoding/json, equals the kept count.
func TestSyncCallsKept(t *testing.T) {
	for _, sample := range []string{"host_sync_item", "eager", "bare_eager"} {
		set, _ := analyzePath(t, testkit.Real(t, sample))
		for _, tr := range set.Traces {
			rt := readRefTrace(t, tr.Path)
			want := map[string]int{}
			for _, ls := range rt.syncs {
				for _, l := range ls {
					want[l.name]++
				}
			}
			got := map[string]int{}
			for _, l := range tr.Launches.All() {
				if n := tr.Name(l.Name); isSyncCall(n) {
					got[n]++
				}
			}
			if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: sync calls kept %v, in the trace %v", tr.Path, got, want)
			}
		}
	}
}
