package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// refEvent is a trace event as the roofline reference reads it.
type refRoofEvent struct {
	Ph, Cat, Name string
	Pid, Tid      json.RawMessage
	Ts, Dur       json.Number
	Args          map[string]json.RawMessage
}

// refWork is the work of one op by the reference formulas.
type refWork struct {
	flops, bytes float64
	ok           bool
}

// refElem is the element size of a profiler dtype, written again.
var refElem = map[string]float64{"c10::BFloat16": 2, "c10::Half": 2, "float": 4, "long int": 8, "int": 4, "bool": 1,
	"c10::Float8_e4m3fn": 1, "signed char": 1, "unsigned char": 1, "double": 8}

// refOpWork is the work of one cpu_op by the formulas of issue #29 written
// out again: GEMM 2·M·N·K with A+B+C (+bias) bytes, attention
// 2·B·H·pairs·(D+Dv) with Q+K+V+O (+mask) bytes, pairs Sq·Sk or, causal
// with Sq = Sk, Sq·(Sq+1)/2.
func refOpWork(name string, dims [][]int64, types, concrete []string) refWork {
	numel := func(d []int64) float64 {
		n := 1.0
		for _, v := range d {
			n *= float64(v)
		}
		return n
	}
	tensorBytes := 0.0
	for i, d := range dims {
		if len(d) > 0 && i < len(types) {
			e, ok := refElem[types[i]]
			if !ok {
				return refWork{}
			}
			tensorBytes += numel(d) * e
		}
	}
	elem := func(i int) float64 { return refElem[types[i]] }
	is := func(i, rank int) bool { return i < len(dims) && len(dims[i]) == rank }
	switch name {
	case "aten::mm":
		if is(0, 2) && is(1, 2) {
			m, k, n := float64(dims[0][0]), float64(dims[0][1]), float64(dims[1][1])
			return refWork{2 * m * n * k, tensorBytes + m*n*elem(0), true}
		}
	case "aten::addmm": // bias, mat1, mat2
		if is(1, 2) && is(2, 2) {
			m, k, n := float64(dims[1][0]), float64(dims[1][1]), float64(dims[2][1])
			return refWork{2 * m * n * k, tensorBytes + m*n*elem(1), true}
		}
	case "aten::bmm":
		if is(0, 3) && is(1, 3) {
			b, m, k, n := float64(dims[0][0]), float64(dims[0][1]), float64(dims[0][2]), float64(dims[1][2])
			return refWork{2 * b * m * n * k, tensorBytes + b*m*n*elem(0), true}
		}
	case "aten::_cudnn_attention_forward", "aten::_flash_attention_forward", "aten::_scaled_dot_product_flash_attention",
		"aten::_scaled_dot_product_cudnn_attention", "aten::scaled_dot_product_attention":
		if !is(0, 4) || !is(1, 4) || !is(2, 4) {
			return refWork{}
		}
		q, k, v := dims[0], dims[1], dims[2]
		b, h, sq, sk, d, dv := q[0], q[1], q[2], k[2], q[3], v[3] // [B, H, S, D]
		causalAt := map[string]int{"aten::_cudnn_attention_forward": 10, "aten::_flash_attention_forward": 8,
			"aten::_scaled_dot_product_flash_attention": 4, "aten::_scaled_dot_product_cudnn_attention": 6,
			"aten::scaled_dot_product_attention": 5}[name]
		if name == "aten::_flash_attention_forward" { // [B, S, H, D]
			h, sq, sk = q[2], q[1], k[1]
		}
		causal := causalAt < len(concrete) && concrete[causalAt] == "True"
		pairs := float64(sq) * float64(sk)
		if causal {
			if sq != sk {
				return refWork{}
			}
			pairs = float64(sq) * float64(sq+1) / 2
		}
		out := float64(b*h*sq*dv) * elem(0)
		return refWork{2 * float64(b*h) * pairs * float64(d+dv), tensorBytes + out, true}
	}
	return refWork{}
}

// refRoofline sums, per phase, the work and kernel time of the kernels of
// one rank's trace linked to an op by the reference formulas: a kernel's
// External id names the op, its launch (by correlation) runs on the op's
// thread inside the op, and the launch (else the kernel) starts in a step
// of the report's rank (its StartUS to the next step's).
func refRoofline(t *testing.T, path string, rk *Rank, sums map[string]*[3]float64) {
	t.Helper()
	var doc struct {
		TraceEvents []refRoofEvent `json:"traceEvents"`
	}
	dec := json.NewDecoder(strings.NewReader(string(testkit.Gunzip(t, path))))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	type op struct {
		ev   *refRoofEvent
		work refWork
	}
	ops := map[string]op{}
	launches := map[string]*refRoofEvent{}
	for i := range doc.TraceEvents {
		e := &doc.TraceEvents[i]
		switch {
		case e.Ph == "X" && e.Cat == "cpu_op":
			var dims [][]int64
			var types, concrete []string
			if json.Unmarshal(e.Args["Input Dims"], &dims) != nil {
				dims = nil // a tensor list: not an op of the formulas
			}
			_ = json.Unmarshal(e.Args["Input type"], &types)
			_ = json.Unmarshal(e.Args["Concrete Inputs"], &concrete)
			ops[string(e.Args["External id"])] = op{e, refOpWork(e.Name, dims, types, concrete)}
		case e.Ph == "X" && (e.Cat == "cuda_runtime" || e.Cat == "cuda_driver"):
			launches[string(e.Args["correlation"])] = e
		}
	}
	starts := make([]int64, len(rk.Steps))
	for i, s := range rk.Steps {
		starts[i] = int64(math.Round(s.StartUS * 1000))
	}
	opNS := map[string]int64{}
	type linked struct {
		ext   string
		phase string
		dur   int64
	}
	var kernels []linked
	for i := range doc.TraceEvents {
		e := &doc.TraceEvents[i]
		if e.Ph != "X" || e.Cat != "kernel" {
			continue
		}
		ext := string(e.Args["External id"])
		o, ok := ops[ext]
		if !ok || ext == "" || ext == "0" {
			continue
		}
		ts := refNS(e.Ts.String())
		if l := launches[string(e.Args["correlation"])]; l != nil {
			lts := refNS(l.Ts.String())
			if string(l.Pid) != string(o.ev.Pid) || string(l.Tid) != string(o.ev.Tid) ||
				lts < refNS(o.ev.Ts.String()) || lts > refNS(o.ev.Ts.String())+refNS(o.ev.Dur.String()) {
				continue
			}
			ts = lts
		}
		s := sort.Search(len(starts), func(i int) bool { return starts[i] > ts }) - 1
		if s < 0 || rk.Steps[s].Truncated {
			continue
		}
		ph := rk.Steps[s].Phase
		if ph != PhasePrefill && ph != PhaseDecode && ph != PhaseMixed && ph != PhaseUnknown {
			continue
		}
		dur := refNS(e.Dur.String())
		opNS[ext] += dur
		kernels = append(kernels, linked{ext, ph, dur})
	}
	for _, k := range kernels {
		w := ops[k.ext].work
		if !w.ok {
			continue
		}
		if sums[k.phase] == nil {
			sums[k.phase] = &[3]float64{}
		}
		share := float64(k.dur) / float64(opNS[k.ext])
		sums[k.phase][0] += w.flops * share
		sums[k.phase][1] += w.bytes * share
		sums[k.phase][2] += float64(k.dur) / 1000
	}
}

// rooflinePaths are every real sample run and public trace.
func rooflinePaths(t *testing.T) []string {
	var paths []string
	for _, v := range sampletraces.RealVariants() {
		paths = append(paths, testkit.Real(t, v))
	}
	files, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no public traces: %v", err)
	}
	return append(paths, files...)
}

// TestRooflineMatchesReference checks, on every real and public trace,
// that the roofline's FLOPs, bytes and shaped kernel time per phase are
// those of the formulas written out again over an encoding/json decode of
// the trace, and that the rates are their quotients.
func TestRooflineMatchesReference(t *testing.T) {
	withWork := 0
	for _, path := range rooflinePaths(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, r := analyzePath(t, path)
			want := map[string]*[3]float64{}
			for i := range r.Ranks {
				refRoofline(t, r.Ranks[i].File, &r.Ranks[i], want)
			}
			got := map[string]*[3]float64{}
			if r.Roofline != nil {
				for _, row := range r.Roofline.Rows {
					if got[row.Phase] == nil {
						got[row.Phase] = &[3]float64{}
					}
					got[row.Phase][0] += row.FLOPs
					got[row.Phase][1] += row.Bytes
					got[row.Phase][2] += row.ShapedUS
					checkRates(t, row)
				}
			}
			for _, ph := range []string{PhasePrefill, PhaseDecode, PhaseMixed, PhaseUnknown} {
				g, w := got[ph], want[ph]
				if g == nil {
					g = &[3]float64{}
				}
				if w == nil {
					w = &[3]float64{}
				}
				for i, what := range []string{"FLOPs", "bytes", "shaped us"} {
					if !nearRel(g[i], w[i]) {
						t.Errorf("%s %s: got %g, the reference %g", ph, what, g[i], w[i])
					}
				}
				if w[0] > 0 {
					withWork++
				}
			}
		})
	}
	if withWork < 5 {
		t.Fatalf("only %d phases of the traces had work from shapes", withWork)
	}
}

// nearRel says whether two sums agree to 1e-9 of their size.
func nearRel(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// checkRates checks that a row's rates are its sums' quotients and its
// kernel counts add up.
func checkRates(t *testing.T, row RooflineRow) {
	t.Helper()
	gap := 0
	for _, g := range row.Unshaped {
		gap += g.Kernels
	}
	if row.ShapedKernels+gap != row.Kernels {
		t.Errorf("%s %s: %d shaped + %d without a figure != %d kernels", row.Phase, row.Bucket, row.ShapedKernels, gap, row.Kernels)
	}
	if row.ShapedUS > 0 && (!nearRel(row.TFLOPS, row.FLOPs/row.ShapedUS/1e6) || !nearRel(row.TBPerS, row.Bytes/row.ShapedUS/1e6)) {
		t.Errorf("%s %s: rates %g TFLOP/s %g TB/s for %g FLOPs %g bytes in %g us", row.Phase, row.Bucket,
			row.TFLOPS, row.TBPerS, row.FLOPs, row.Bytes, row.ShapedUS)
	}
}

// TestRooflineOneGEMMByHand checks the units on one GEMM of bare_eager: a
// decode step's QKV projection, aten::mm of A [4, 4096] and B [4096, 6144]
// in BF16:
//
//	FLOPs = 2·M·N·K = 2·4·6144·4096 = 201,326,592
//	bytes = (M·K + K·N + M·N)·2 = (16,384 + 25,165,824 + 24,576)·2 = 50,413,568
//	intensity = 201,326,592 / 50,413,568 = 3.99 FLOPs a byte
//
// and its kernels' time T (microseconds) gives 50,413,568 / (T·1e-6) /
// 1e12 TB/s: the trace's first such op ran 16.16 us, 3.12 TB/s, 65% of
// the H200's 4.8 TB/s.
func TestRooflineOneGEMMByHand(t *testing.T) {
	set, _ := analyzePath(t, testkit.Real(t, "bare_eager"))
	tr := set.Traces[0]
	var op *ingest.ShapedOp
	for _, o := range tr.Shapes.Ops.All() {
		if tr.Name(o.Name) == "aten::mm" && fmt.Sprint(o.Inputs[0].Dims, o.Inputs[1].Dims) == "[4 4096] [4096 6144]" {
			op = o
			break
		}
	}
	if op == nil {
		t.Fatal("no aten::mm [4, 4096] x [4096, 6144] in bare_eager")
	}
	w := workOf(tr, op)
	if w.flops != 201326592 || w.bytes != 50413568 || w.dtype != PeakBF16 {
		t.Fatalf("work %+v, want 201326592 FLOPs, 50413568 bytes, bf16", w)
	}
	var ns int64
	for _, ev := range tr.GPU.All() {
		if ev.ExternalID == op.ExternalID && ev.Kind == ingest.KindKernel {
			ns += ev.Dur
		}
	}
	tbps := 50413568 / (float64(ns) * 1e-9) / 1e12
	if ns == 0 || tbps < 0.5 || tbps > 4.8 {
		t.Fatalf("%d ns of kernels: %.2f TB/s, not a rate an H200 runs a decode GEMM at", ns, tbps)
	}
	t.Logf("aten::mm [4,4096]x[4096,6144]: %d ns, %.2f TB/s, %.1f%% of 4.8 TB/s", ns, tbps, 100*tbps/4.8)
}

// TestGPUPeakTable checks the peak each traced GPU name gets, and the
// table's figures against the datasheet ratios (dense BF16 twice TF32,
// FP8 twice BF16 where given).
func TestGPUPeakTable(t *testing.T) {
	cases := []struct {
		device string
		mem    int64
		want   string
		hbm    float64
	}{
		{"NVIDIA H200", 150109880320, "H200 SXM", 4.8},
		{"NVIDIA H100 80GB HBM3", 85018279936, "H100 SXM", 3.35},
		{"NVIDIA H100 PCIe", 85018279936, "H100 PCIe", 2.0},
		{"NVIDIA H100 NVL", 100e9, "H100 NVL", 3.9},
		{"NVIDIA A100-PG509-200", 42505273344, "A100 40GB SXM", 1.555},
		{"NVIDIA A100-SXM4-80GB", 85e9, "A100 80GB SXM", 2.039},
		{"NVIDIA A100 80GB PCIe", 85e9, "A100 80GB PCIe", 1.935},
		{"NVIDIA B200", 190e9, "B200", 8},
		{"NVIDIA RTX PRO 6000 Blackwell Server Edition", 100e9, "RTX PRO 6000 Blackwell", 1.792},
		{"NVIDIA L40S", 48e9, "L40S", 0.864},
		{"AMD Instinct MI300X", 206141652992, "MI300X", 5.3},
		{"AMD Instinct MI300X VF", 205571227648, "MI300X", 5.3},
		{"AMD Instinct MI325X", 270e9, "MI325X", 6},
		{"AMD Instinct MI355X", 300e9, "MI355X", 8},
		{"Tesla V100-SXM2-16GB", 16945512448, "V100 SXM2", 0.9},
	}
	for _, tc := range cases {
		p := deviceGPUPeak(tc.device, tc.mem)
		if p == nil || p.Name != tc.want || p.HBMTBPerS != tc.hbm || p.Cite == "" {
			t.Errorf("%s: got %+v, want %s at %g TB/s", tc.device, p, tc.want, tc.hbm)
			continue
		}
		if b, f := p.TFLOPS[PeakBF16], p.TFLOPS[PeakTF32]; f > 0 && math.Abs(b/f-2) > 0.05 {
			t.Errorf("%s: BF16 %g is not twice TF32 %g", tc.device, b, f)
		}
		if b, f := p.TFLOPS[PeakBF16], p.TFLOPS[PeakFP8]; f > 0 && math.Abs(f/b-2) > 0.05 {
			t.Errorf("%s: FP8 %g is not twice BF16 %g", tc.device, f, b)
		}
	}
	if p := deviceGPUPeak("NVIDIA GeForce GTX 1080", 8e9); p != nil {
		t.Errorf("a GPU the table lacks got %+v", p)
	}
}

// TestParseGPUPeak checks --gpu-peak over the device's figures and its
// errors.
func TestParseGPUPeak(t *testing.T) {
	base := deviceGPUPeak("NVIDIA H200", 150e9)
	cases := []struct {
		spec, err string
		hbm, bf16 float64
		fp8       float64
	}{
		{spec: "hbm=4.0TB/s", hbm: 4, bf16: 989.4, fp8: 1978.9},
		{spec: "bf16=800TFLOPs, fp8=1600", hbm: 4.8, bf16: 800, fp8: 1600},
		{spec: "fp16=700", hbm: 4.8, bf16: 700, fp8: 1978.9},
		{spec: "hbm=fast", err: "want a positive number of TB/s"},
		{spec: "bf17=3", err: `unknown key "bf17"`},
		{spec: "hbm", err: "is not key=value"},
		{spec: "hbm=-1", err: "positive"},
	}
	for _, tc := range cases {
		p, err := ParseGPUPeak(tc.spec, base)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.spec, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.spec, err)
		case p.HBMTBPerS != tc.hbm || p.TFLOPS[PeakBF16] != tc.bf16 || p.TFLOPS[PeakFP8] != tc.fp8 || !strings.HasPrefix(p.Source, "--gpu-peak"):
			t.Errorf("%q: got %+v", tc.spec, p)
		}
	}
	if base.TFLOPS[PeakBF16] != 989.4 {
		t.Errorf("ParseGPUPeak changed its base: %+v", base)
	}
}

// TestRooflineWithGPUPeak checks that a stored report held against a
// slower GPU gets a higher share of peak and a longer speed of light, and
// the report given is left as it was.
func TestRooflineWithGPUPeak(t *testing.T) {
	_, r := analyzePath(t, testkit.Real(t, "bare_eager"))
	before, _ := json.Marshal(r)
	slow, err := WithGPUPeak(r, "hbm=2.4,bf16=494.7")
	if err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(r)
	if string(before) != string(after) {
		t.Fatal("WithGPUPeak changed the report it was given")
	}
	for i, row := range slow.Roofline.Rows {
		orig := r.Roofline.Rows[i]
		if orig.Bound == BoundMemory && !nearRel(row.PeakShare, 2*orig.PeakShare) && row.Bound == BoundMemory {
			t.Errorf("%s %s: share %g at half the bandwidth, %g before", row.Phase, row.Bucket, row.PeakShare, orig.PeakShare)
		}
	}
	if s, o := slow.Roofline.SpeedOfLight, r.Roofline.SpeedOfLight; s == nil || o == nil || s.EstimateUS <= o.EstimateUS {
		t.Errorf("speed of light %+v at half the peaks, %+v before", s, o)
	}
}

// TestRooflineCountsUnshaped checks that the graph-replayed decode GEMMs
// of the cudagraph sample have no figure, counted under the graph reason,
// and that every GEMM kernel of its decode steps is counted.
func TestRooflineCountsUnshaped(t *testing.T) {
	_, r := analyzePath(t, testkit.Real(t, "cudagraph"))
	if r.Roofline == nil {
		t.Fatal("no roofline")
	}
	gemm := 0
	for i := range r.Ranks {
		gemm += r.Ranks[i].Decode.Buckets[GEMM].Count
	}
	for _, row := range r.Roofline.Rows {
		if row.Phase != PhaseDecode || row.Bucket != GEMM {
			continue
		}
		if row.Kernels != gemm {
			t.Errorf("decode GEMM row counts %d kernels, the phase %d", row.Kernels, gemm)
		}
		graph := 0
		for _, g := range row.Unshaped {
			if g.Reason == GapGraph {
				graph = g.Kernels
			}
		}
		if graph == 0 || row.ShapedKernels+graph != row.Kernels {
			t.Errorf("decode GEMM: %d shaped, %d replayed from graphs of %d: %+v", row.ShapedKernels, graph, row.Kernels, row.Unshaped)
		}
		return
	}
	t.Fatalf("no decode GEMM row: %+v", r.Roofline.Rows)
}

// TestRooflineBorrowsFromEagerStep alters the eager sample as if one
// decode step of each rank had been replayed from a CUDA graph (its
// kernels' launches renamed cudaGraphLaunch, their External ids cleared,
// so no op links them) and checks that the step borrows the shapes of an
// eager decode step with the same tokens and kernel sequence: the decode
// rows' FLOPs and bytes are those of the unaltered trace, the altered
// step's linked kernels counted as borrowed. A step whose sequence differs
// in one kernel name borrows nothing.
func TestRooflineBorrowsFromEagerStep(t *testing.T) {
	path := testkit.Real(t, "eager")
	_, want := analyzePath(t, path)
	alter := func(rename bool) *Report {
		set, err := ingest.Open(path, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for ri, tr := range set.Traces {
			replayStep(t, tr, &want.Ranks[ri], 3, rename)
		}
		r, err := Analyze(set, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sums := func(r *Report) (flops, bytes float64, borrowed, shaped int) {
		for _, row := range r.Roofline.Rows {
			if row.Phase == PhaseDecode {
				flops, bytes, borrowed, shaped = flops+row.FLOPs, bytes+row.Bytes, borrowed+row.BorrowedKernels, shaped+row.ShapedKernels
			}
		}
		return
	}
	wf, wb, _, ws := sums(want)
	gf, gb, borrowed, gs := sums(alter(false))
	if !nearRel(gf, wf) || !nearRel(gb, wb) || gs != ws || borrowed == 0 {
		t.Errorf("replayed step: %g FLOPs %g bytes, %d shaped (%d borrowed); unaltered %g FLOPs %g bytes, %d shaped",
			gf, gb, gs, borrowed, wf, wb, ws)
	}
	nf, _, nborrowed, ns := sums(alter(true))
	if nborrowed != 0 || ns >= ws || nf >= wf {
		t.Errorf("a replay differing in one kernel name borrowed %d kernels (%d shaped, %g FLOPs; unaltered %d, %g)", nborrowed, ns, nf, ws, wf)
	}
}

// replayStep makes step s of tr look replayed from a CUDA graph: its
// kernels' launches become cudaGraphLaunch calls and the kernels lose
// their External ids; with rename, its first kernel also gets another
// name.
func replayStep(t *testing.T, tr *ingest.Trace, rk *Rank, s int, rename bool) {
	t.Helper()
	if rk.Steps[s].Phase != PhaseDecode || rk.Steps[s].Tokens == 0 {
		t.Fatalf("step %d is %s with %d tokens", s, rk.Steps[s].Phase, rk.Steps[s].Tokens)
	}
	start := int64(math.Round(rk.Steps[s].StartUS * 1000))
	end := int64(math.Round(rk.Steps[s+1].StartUS * 1000))
	graph := tr.Strings.Intern("cudaGraphLaunch")
	byCorr := map[int64]*ingest.Launch{}
	for _, l := range tr.Launches.All() {
		byCorr[l.Correlation] = l
	}
	first := true
	for _, ev := range tr.GPU.All() {
		l := byCorr[ev.Correlation]
		if ev.Kind != ingest.KindKernel || l == nil || l.Start < start || l.Start >= end {
			continue
		}
		l.Name, ev.ExternalID = graph, 0
		if rename && first {
			ev.Name, first = tr.Strings.Intern("a kernel no eager step ran"), false
		}
	}
}
