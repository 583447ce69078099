package analyze

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// openCopy reads path afresh, so that a test may alter what it read.
func openCopy(t *testing.T, path string) *ingest.Set {
	t.Helper()
	set, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// mustAnalyze analyses set with opt.
func mustAnalyze(t *testing.T, set *ingest.Set, opt Options) *Report {
	t.Helper()
	r, err := Analyze(set, opt)
	if err != nil {
		t.Fatal(err)
	}
	if r.Headline == nil || r.Checks == nil || len(r.Checks.Ranks) != len(r.Ranks) {
		t.Fatalf("%s: headline %v, checks %v", set.Path, r.Headline, r.Checks)
	}
	t.Logf("caveats: %q", r.Headline.Caveats)
	return r
}

// caveatWith returns the headline caveat that holds every part, "" if none.
func caveatWith(r *Report, parts ...string) string {
	for _, c := range r.Headline.Caveats {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(c, p)
		}
		if all {
			return c
		}
	}
	return ""
}

// allSamples lists every bundled real sample and public trace.
func allSamples(t *testing.T) []string {
	t.Helper()
	paths := make([]string, 0, 32)
	for _, v := range sampletraces.RealAll() {
		paths = append(paths, testkit.Real(t, v))
	}
	pub, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil || len(pub) < 10 {
		t.Fatalf("public traces: %v, %d files", err, len(pub))
	}
	return append(paths, pub...)
}

// TestChecksQuietOnSamples: no check puts a caveat on the headline of a
// bundled or public trace (none has the problems) but the one the MI300X
// RCCL trace has, collectives launched before its profile began (see
// TestUnnamedCollectives), and the counts behind them agree with plain
// loops over the trace.
func TestChecksQuietOnSamples(t *testing.T) {
	for _, path := range allSamples(t) {
		set, r := analyzePath(t, path)
		var caveats []string
		if r.Headline != nil {
			caveats = r.Headline.Caveats
		}
		if filepath.Base(path) == "tracelens-mi300-resnet-rccl.json.gz" && len(caveats) == 1 &&
			strings.Contains(caveats[0], "launched before the profile began") {
			caveats = nil
		}
		if len(caveats) > 0 {
			t.Errorf("%s: caveats %q", path, caveats)
		}
		if r.Checks == nil || len(r.Checks.Ranks) != len(r.Ranks) {
			t.Fatalf("%s: checks %+v for %d ranks", path, r.Checks, len(r.Ranks))
		}
		for i, rc := range r.Checks.Ranks {
			tr := set.Traces[i]
			if got, want := rc.Timing.Overlaps, plainOverlaps(tr); got != want {
				t.Errorf("%s rank %d: %d overlaps; a plain loop finds %d", path, rc.Rank, got, want)
			}
			if rc.Truncation.CutStep != nil || rc.Truncation.DroppedRecords != 0 {
				t.Errorf("%s rank %d: truncation %+v", path, rc.Rank, rc.Truncation)
			}
		}
	}
}

// plainOverlaps counts, stream by stream in start order, the GPU events
// that start more than the tolerance before the latest end so far.
func plainOverlaps(tr *ingest.Trace) int {
	type key struct {
		dev    int16
		stream int32
	}
	by := map[key][]ingest.GPUEvent{}
	for _, ev := range tr.GPU.All() {
		k := key{ev.Device, ev.Stream}
		by[k] = append(by[k], *ev)
	}
	n := 0
	for _, evs := range by {
		slices.SortStableFunc(evs, func(a, b ingest.GPUEvent) int { return int(a.Start - b.Start) })
		end := evs[0].End()
		for _, ev := range evs[1:] {
			if ev.Start < end-overlapToleranceNS {
				n++
			}
			end = max(end, ev.End())
		}
	}
	return n
}

// busiestStream returns the GPU event indexes of tr's stream with the most
// events, in start order.
func busiestStream(tr *ingest.Trace) []int {
	count := map[int32]int{}
	best := int32(0)
	for _, ev := range tr.GPU.All() {
		count[ev.Stream]++
		if count[ev.Stream] > count[best] {
			best = ev.Stream
		}
	}
	var ix []int
	for i, ev := range tr.GPU.All() {
		if ev.Stream == best {
			ix = append(ix, i)
		}
	}
	slices.SortStableFunc(ix, func(a, b int) int { return int(tr.GPU.At(a).Start - tr.GPU.At(b).Start) })
	return ix
}

// TestOverlapInjected: kernels made to overlap the one before them on the
// busiest stream of a real rank are counted with their overlapped time,
// whether the file lists them in time order or not; the headline warns
// only when the overlap is a real part of the kernel time.
func TestOverlapInjected(t *testing.T) {
	cases := []struct {
		every   int     // every n-th kernel of the stream overlaps its predecessor
		frac    float64 // by this fraction of its own duration
		reverse bool    // list the GPU events in reverse order
		caveat  bool
	}{
		{every: 3, frac: 0.5, caveat: true},
		{every: 3, frac: 0.5, reverse: true, caveat: true},
		{every: 400, frac: 0.5, caveat: false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("every%d_reverse%v", c.every, c.reverse), func(t *testing.T) {
			set := openCopy(t, testkit.Real(t, "profilerstep"))
			tr := set.Traces[0]
			ix := busiestStream(tr)
			n, wantNS := 0, int64(0)
			for k := c.every; k < len(ix); k += c.every {
				prev, ev := tr.GPU.At(ix[k-1]), tr.GPU.At(ix[k])
				ov := int64(float64(ev.Dur) * c.frac)
				if ov <= overlapToleranceNS || prev.End() > ev.Start {
					continue
				}
				prev.Dur = ev.Start + ov - prev.Start
				n++
				wantNS += ov
			}
			if c.reverse {
				reverseGPU(tr)
			}
			r := mustAnalyze(t, set, Options{})
			tc := r.Checks.Ranks[0].Timing
			if tc.Overlaps != n || fmt.Sprintf("%.3f", tc.OverlapUS) != fmt.Sprintf("%.3f", us(wantNS)) {
				t.Errorf("%d overlaps, %.3f us; want %d, %.3f us", tc.Overlaps, tc.OverlapUS, n, us(wantNS))
			}
			var inSteps float64
			for _, s := range r.Ranks[0].Steps {
				inSteps += s.OverlapUS
			}
			// Every GPU event of the sample is in a step, so the steps hold
			// all the overlap.
			if r.Ranks[0].Outside.Count != 0 || fmt.Sprintf("%.3f", inSteps) != fmt.Sprintf("%.3f", tc.OverlapUS) {
				t.Errorf("steps' overlap %.3f us (%d events outside steps), the check's %.3f us", inSteps, r.Ranks[0].Outside.Count, tc.OverlapUS)
			}
			if len(tc.Streams) != 1 || tc.Streams[0].Stream != int(tr.GPU.At(ix[0]).Stream) || tc.Worst == nil {
				t.Errorf("streams %+v, worst %+v", tc.Streams, tc.Worst)
			}
			want := fmt.Sprintf("%d kernels overlap on stream %d", tc.Streams[0].Overlaps, tr.GPU.At(ix[0]).Stream)
			if got := caveatWith(r, want, "kernel-time shares are unreliable here"); (got != "") != c.caveat {
				t.Errorf("caveat %q in %q: %v, want %v", want, r.Headline.Caveats, got != "", c.caveat)
			}
		})
	}
}

// reverseGPU lists tr's GPU events in reverse order.
func reverseGPU(tr *ingest.Trace) {
	var evs []ingest.GPUEvent
	for _, ev := range tr.GPU.All() {
		evs = append(evs, *ev)
	}
	slices.Reverse(evs)
	var c ingest.Chunks[ingest.GPUEvent]
	for _, ev := range evs {
		c.Append(ev)
	}
	tr.GPU = c
}

// TestImpossibleTiming: a kernel lasting longer than the trace, one moved
// far past its end, and GPU times shifted ahead of their launches are each
// counted and said in the headline; a kernel longer than its step is
// counted.
func TestImpossibleTiming(t *testing.T) {
	cases := []struct {
		name  string
		alter func(tr *ingest.Trace) (want func(TimingCheck) int, n int)
		text  string
	}{
		{"longer than the trace", func(tr *ingest.Trace) (func(TimingCheck) int, int) {
			lo, hi := cpuWindow(tr)
			tr.GPU.At(10).Dur = 2 * (hi - lo)
			return func(c TimingCheck) int { return c.LongerThanTrace }, 1
		}, "longer than the whole trace"},
		{"longer than its step", func(tr *ingest.Trace) (func(TimingCheck) int, int) {
			// A quarter of the trace is four of its sixteen steps.
			lo, hi := cpuWindow(tr)
			tr.GPU.At(tr.GPU.Len() / 2).Dur = (hi - lo) / 4
			return func(c TimingCheck) int { return c.LongerThanStep }, 1
		}, ""},
		{"outside the window", func(tr *ingest.Trace) (func(TimingCheck) int, int) {
			_, hi := cpuWindow(tr)
			for i := 20; i < 23; i++ {
				tr.GPU.At(i).Start = hi + 5*windowToleranceNS
			}
			return func(c TimingCheck) int { return c.OutsideWindow }, 3
		}, "outside the trace's CPU window"},
		{"before launch", func(tr *ingest.Trace) (func(TimingCheck) int, int) {
			const shift = 200_000 // 200 µs ahead of the CPU clock
			launch := map[int64]int64{}
			for _, l := range tr.Launches.All() {
				launch[l.Correlation] = l.Start
			}
			n := 0
			for _, ev := range tr.GPU.All() {
				ev.Start -= shift
				if ls, ok := launch[ev.Correlation]; ok && ev.Start < ls-beforeLaunchToleranceNS {
					n++
				}
			}
			return func(c TimingCheck) int { return c.BeforeLaunch }, n
		}, "start before their CPU launch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := openCopy(t, testkit.Real(t, "bare_eager"))
			get, n := c.alter(set.Traces[0])
			r := mustAnalyze(t, set, Options{})
			if got := get(r.Checks.Ranks[0].Timing); got != n || n == 0 {
				t.Errorf("%d counted, want %d (> 0): %+v", got, n, r.Checks.Ranks[0].Timing)
			}
			if c.text != "" && caveatWith(r, c.text) == "" {
				t.Errorf("no caveat with %q in %q", c.text, r.Headline.Caveats)
			}
		})
	}
}

// renameKernels renames, on every rank of set, the GPU events whose name
// holds old to name, and returns how many it renamed and their time.
func renameKernels(set *ingest.Set, old, name string) (n int, ns int64) {
	for _, tr := range set.Traces {
		id := tr.Strings.Intern(name)
		for _, ev := range tr.GPU.All() {
			if strings.Contains(tr.Name(ev.Name), old) {
				ev.Name = id
				n++
				ns += ev.Dur
			}
		}
	}
	return n, ns
}

// TestRenamedNCCLKernel: NCCL AllReduce kernels renamed as a custom NCCL
// build might name them match no communication rule; the check lists them
// on every rank with their calls and time, the headline says so with the
// --rules fix, and a rule for the name makes it quiet.
func TestRenamedNCCLKernel(t *testing.T) {
	const renamed = "ncclx_dev_all_reduce_ring_ll128_kernel"
	set := openCopy(t, testkit.Real(t, "eager"))
	n, ns := renameKernels(set, "AllReduce", renamed)
	if n == 0 {
		t.Fatal("no AllReduce kernel in the sample")
	}
	r := mustAnalyze(t, set, Options{})
	var calls int
	var time float64
	for _, rc := range r.Checks.Ranks {
		if len(rc.Rules.CommLike) != 1 || rc.Rules.CommLike[0].Name != renamed {
			t.Fatalf("rank %d: comm-like %+v", rc.Rank, rc.Rules.CommLike)
		}
		calls += rc.Rules.CommLike[0].Count
		time += rc.Rules.CommLike[0].US
	}
	if calls != n || fmt.Sprintf("%.3f", time) != fmt.Sprintf("%.3f", us(ns)) {
		t.Errorf("comm-like: %d calls, %.3f us; renamed %d, %.3f us", calls, time, n, us(ns))
	}
	if c := caveatWith(r, renamed, "like communication", "--rules", "bucket: allreduce"); c == "" {
		t.Errorf("no caveat naming %s in %q", renamed, r.Headline.Caveats)
	}
	fixed := mustAnalyze(t, set, Options{Rules: []Rule{{Bucket: AllReduce, Pattern: rulePattern(renamed)}}})
	for _, rc := range fixed.Checks.Ranks {
		if len(rc.Rules.CommLike) != 0 {
			t.Errorf("with a rule, rank %d: comm-like %+v", rc.Rank, rc.Rules.CommLike)
		}
	}
	if len(fixed.Headline.Caveats) != 0 {
		t.Errorf("with a rule: caveats %q", fixed.Headline.Caveats)
	}
}

// TestOtherShare: GEMM kernels renamed past every rule leave their share of
// decode kernel time in Other, as a plain sum over the decode steps says;
// above the threshold the headline names the kernel and the --rules fix,
// below it (a higher OtherThreshold) it does not.
func TestOtherShare(t *testing.T) {
	const renamed = "mystery_kernel_x"
	set := openCopy(t, testkit.Real(t, "profilerstep"))
	if n, _ := renameKernels(set, "nvjet", renamed); n == 0 {
		t.Fatal("no nvjet kernel in the sample")
	}
	r := mustAnalyze(t, set, Options{})
	rc := r.Checks.Ranks[0].Rules
	var other, kernel float64
	for _, s := range r.Ranks[0].Steps {
		if s.Phase == PhaseDecode && !s.Truncated {
			other += s.Buckets[Other].US
			kernel += s.KernelUS
		}
	}
	if rc.Phase != PhaseDecode || fmt.Sprintf("%.6f", rc.OtherShare) != fmt.Sprintf("%.6f", 100*other/kernel) || rc.OtherShare <= DefaultOtherThreshold {
		t.Fatalf("other share %.3f%% (%s); plain sum %.3f%%", rc.OtherShare, rc.Phase, 100*other/kernel)
	}
	if len(rc.Top) == 0 || rc.Top[0].Name != renamed {
		t.Errorf("top unclassified %+v", rc.Top)
	}
	if caveatWith(r, "in Other", renamed, "--rules") == "" {
		t.Errorf("no Other caveat in %q", r.Headline.Caveats)
	}
	quiet := mustAnalyze(t, set, Options{OtherThreshold: rc.OtherShare + 1})
	if len(quiet.Headline.Caveats) != 0 {
		t.Errorf("threshold %.1f: caveats %q", rc.OtherShare+1, quiet.Headline.Caveats)
	}
}

// withTopLevel writes a copy of the gzip trace at path with member, a
// top-level "key": value member, added before its closing brace.
func withTopLevel(t *testing.T, path, member string) string {
	t.Helper()
	raw := testkit.Gunzip(t, path)
	end := bytes.LastIndexByte(raw, '}')
	out := append(append(append([]byte(nil), raw[:end]...), ", "+member+"\n"...), raw[end:]...)
	dst := filepath.Join(t.TempDir(), "rank0.pt.trace.json")
	if err := os.WriteFile(dst, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestProfilerDroppedRecords: Kineto's own warnings in the trace (the
// top-level WARNING array of builds without glog) that it dropped records
// or stopped tracing are read, summed and said in the headline.
func TestProfilerDroppedRecords(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.Real(t, "profilerstep"), "*.pt.trace.json.gz"))
	if err != nil || len(files) != 1 {
		t.Fatalf("%v %v", files, err)
	}
	cases := []struct {
		member  string
		dropped int64
		caveat  string
	}{
		{`"WARNING": ["Dropped 1234 activity records", "CUPTI Callback failed to init, skipping teardown", "Dropped 6 activity records"]`, 1240, "dropped 1240 activity records"},
		{`"WARNING": ["Exceeded max GPU buffer count (33 > 32) - terminating tracing"]`, 0, "says it lost events"},
		{`"WARNING": ["GPU trace is empty!"], "ERROR": []`, 0, ""},
	}
	for _, c := range cases {
		set := openCopy(t, withTopLevel(t, files[0], c.member))
		r := mustAnalyze(t, set, Options{})
		tc := r.Checks.Ranks[0].Truncation
		if tc.DroppedRecords != c.dropped || (c.caveat == "") != (len(tc.Messages) == 0) {
			t.Errorf("%s: dropped %d, messages %q; want %d", c.member, tc.DroppedRecords, tc.Messages, c.dropped)
		}
		if got := caveatWith(r, "the profiler"); (c.caveat == "" && got != "") || (c.caveat != "" && !strings.Contains(got, c.caveat)) {
			t.Errorf("%s: caveat %q, want one with %q", c.member, got, c.caveat)
		}
	}
}

// cutAfter drops every event of tr that starts at or after ts and ends
// the annotations that were still open there, as a profile stopped at ts.
func cutAfter(tr *ingest.Trace, ts int64) {
	var gpu ingest.Chunks[ingest.GPUEvent]
	for _, ev := range tr.GPU.All() {
		if ev.Start < ts {
			gpu.Append(*ev)
		}
	}
	var launches ingest.Chunks[ingest.Launch]
	for _, l := range tr.Launches.All() {
		if l.Start < ts {
			launches.Append(*l)
		}
	}
	var anns ingest.Chunks[ingest.Annotation]
	for _, a := range tr.Annotations.All() {
		if a.Start < ts {
			b := *a
			b.Dur = min(b.Dur, ts-b.Start)
			anns.Append(b)
		}
	}
	tr.GPU, tr.Launches, tr.Annotations = gpu, launches, anns
}

// TestCutTail: a real trace stopped halfway through its last decode step
// has that step marked cut and left out of the decode figures, which then
// equal those of the other decode steps (a plain mean); the whole trace has
// no cut step.
func TestCutTail(t *testing.T) {
	path := testkit.Real(t, "eager")
	_, whole := analyzePath(t, path)
	set := openCopy(t, path)
	for i, tr := range set.Traces {
		steps := whole.Ranks[i].Steps
		last := steps[len(steps)-1]
		next := int64(1e3*last.StartUS) + int64(1e3*(last.StartUS-steps[len(steps)-2].StartUS)/2)
		cutAfter(tr, next)
	}
	r := mustAnalyze(t, set, Options{})
	for i, rk := range r.Ranks {
		cs := r.Checks.Ranks[i].Truncation.CutStep
		n := len(rk.Steps)
		if cs == nil || cs.Index != n-1 || !rk.Steps[n-1].Truncated {
			t.Fatalf("rank %d: cut step %+v of %d steps", rk.Rank, cs, n)
		}
		var span float64
		k := 0
		for _, s := range whole.Ranks[i].Steps[:n-1] {
			if s.Phase == PhaseDecode {
				span += s.SpanUS
				k++
			}
		}
		if rk.Decode.Steps != k || fmt.Sprintf("%.3f", rk.Decode.SpanMeanUS) != fmt.Sprintf("%.3f", span/float64(k)) {
			t.Errorf("rank %d: %d decode steps, span mean %.3f; the other steps: %d, %.3f", rk.Rank, rk.Decode.Steps, rk.Decode.SpanMeanUS, k, span/float64(k))
		}
		var transfer float64
		for _, s := range whole.Ranks[i].Steps[:n-1] {
			if s.Phase == PhaseDecode && s.Comm != nil {
				transfer += s.Comm.TransferUS
			}
		}
		if c := rk.Decode.Comm; c == nil || fmt.Sprintf("%.3f", c.TransferUS) != fmt.Sprintf("%.3f", transfer) {
			t.Errorf("rank %d: decode comm %+v, the other steps' transfer %.3f us", rk.Rank, c, transfer)
		}
		for _, lf := range rk.Layers {
			if lf.Phase == PhaseDecode && lf.Steps+lf.Unfolded != k {
				t.Errorf("rank %d: decode layers over %d+%d steps, want %d", rk.Rank, lf.Steps, lf.Unfolded, k)
			}
		}
	}
	for _, row := range r.Bandwidth.Rows {
		for _, w := range whole.Bandwidth.Rows {
			if row.Phase == PhaseDecode && w.Phase == row.Phase && w.Bucket == row.Bucket && w.Bytes == row.Bytes && row.CallsPerStep != w.CallsPerStep {
				t.Errorf("decode %s %d bytes: %.2f calls/step, the whole trace %.2f", row.Bucket, row.Bytes, row.CallsPerStep, w.CallsPerStep)
			}
		}
	}
	if caveatWith(r, fmt.Sprintf("the profile ends inside step %d", len(r.Ranks[0].Steps)-1), "left out") == "" {
		t.Errorf("no cut caveat in %q", r.Headline.Caveats)
	}
	for i := range whole.Ranks {
		if whole.Checks.Ranks[i].Truncation.CutStep != nil {
			t.Errorf("whole trace, rank %d: cut step %+v", i, whole.Checks.Ranks[i].Truncation.CutStep)
		}
	}
}

// shiftAll moves every time of tr through f.
func shiftAll(tr *ingest.Trace, f func(int64) int64) {
	for _, ev := range tr.GPU.All() {
		s, e := f(ev.Start), f(ev.End())
		ev.Start, ev.Dur = s, e-s
	}
	for _, l := range tr.Launches.All() {
		s, e := f(l.Start), f(l.Start+l.Dur)
		l.Start, l.Dur = s, e-s
	}
	for _, a := range tr.Annotations.All() {
		s, e := f(a.Start), f(a.Start+a.Dur)
		a.Start, a.Dur = s, e-s
	}
	for _, a := range tr.PythonCalls.All() {
		s, e := f(a.Start), f(a.Start+a.Dur)
		a.Start, a.Dur = s, e-s
	}
	for _, a := range tr.CommOps.All() {
		a.Start = f(a.Start)
	}
	for _, a := range tr.Embeddings.All() {
		a.Start = f(a.Start)
	}
}

// TestClockOffset: rank 1 of a real two-rank trace moved 3 s ahead while
// it still claims rank 0's clock (one baseTimeNanoseconds) pairs none of its
// collectives: the check names it with the 3 s gap its collectives show
// paired by order; so does a clock that drifts. The same offset on a clock
// of its own is estimated and fixed by the alignment, and nothing is said.
func TestClockOffset(t *testing.T) {
	const refNS = 5133128600000000 // within the sample's time range
	cases := []struct {
		name    string
		f       func(int64) int64
		ownBase bool
		gapUS   float64 // the order gap wanted, within 1 ms; 0: no problem
	}{
		{"3 s on the shared clock", func(x int64) int64 { return x + 3e9 }, false, 3e6},
		{"3 s on its own clock", func(x int64) int64 { return x + 3e9 }, true, 0},
		{"drift 1e-3 on the shared clock", func(x int64) int64 { return x + (x-refNS)/1000 }, false, -18.6e3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set := openCopy(t, testkit.Real(t, "eager"))
			if c.ownBase {
				set.Traces[1].Meta.BaseTimeNS++
			}
			shiftAll(set.Traces[1], c.f)
			r := mustAnalyze(t, set, Options{})
			if c.gapUS == 0 {
				if len(r.Checks.Clock) != 0 || len(r.Headline.Caveats) != 0 {
					t.Errorf("clock %+v, caveats %q", r.Checks.Clock, r.Headline.Caveats)
				}
				if off := r.Collectives.ClockOffsetsUS[1]; math.Abs(off+3e6) > 1e3 {
					t.Errorf("estimated offset %.0f us, want -3e6", off)
				}
				return
			}
			if len(r.Checks.Clock) != 1 || r.Checks.Clock[0].Rank != 1 || math.Abs(r.Checks.Clock[0].OrderGapUS-c.gapUS) > 1e3 {
				t.Fatalf("clock %+v; want rank 1 with an order gap of %.0f us", r.Checks.Clock, c.gapUS)
			}
			if caveatWith(r, "the clock of rank 1 disagrees", "paired by order") == "" {
				t.Errorf("no clock caveat in %q", r.Headline.Caveats)
			}
		})
	}
}
