package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
	"kinetoscope/sampletraces/synth"
)

// line1 is a straight line fitted by the normal equations written out:
// y = a + b x, with R², the residual standard deviation and b's standard
// error.
type line1 struct{ a, b, r2, resid, se float64 }

func normalLine(x, y []float64) line1 {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	b := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	a := (sy - b*sx) / n
	var ssr, sst, sxc float64
	for i := range x {
		r := y[i] - a - b*x[i]
		ssr += r * r
		sst += (y[i] - sy/n) * (y[i] - sy/n)
		sxc += (x[i] - sx/n) * (x[i] - sx/n)
	}
	s := math.Sqrt(ssr / (n - 2))
	return line1{a: a, b: b, r2: 1 - ssr/sst, resid: s, se: s / math.Sqrt(sxc)}
}

// normalPlane fits y = a + b x1 + c x2 by the 3x3 normal equations,
// solved by Cramer's rule.
func normalPlane(x1, x2, y []float64) (a, b, c float64) {
	var m [3][3]float64
	var v [3]float64
	for i := range y {
		row := [3]float64{1, x1[i], x2[i]}
		for j := range 3 {
			for k := range 3 {
				m[j][k] += row[j] * row[k]
			}
			v[j] += row[j] * y[i]
		}
	}
	det := func(m [3][3]float64) float64 {
		return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	}
	d := det(m)
	var out [3]float64
	for col := range 3 {
		mc := m
		for j := range 3 {
			mc[j][col] = v[j]
		}
		out[col] = det(mc) / d
	}
	return out[0], out[1], out[2]
}

func closeTo(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestFitLineNormalEquations: fitLine's coefficients, R², residual spread
// and standard error agree with the normal equations written out, with one
// regressor and with two; the verdict follows the slopes.
func TestFitLineNormalEquations(t *testing.T) {
	// a deterministic wiggle, so that the fits are not exact
	wiggle := func(i int) float64 { return float64((i*7919)%13) - 6 }
	tests := []struct {
		name    string
		x1, x2  func(i int) float64
		y       func(i int, x1, x2 float64) float64
		verdict string
	}{
		{"grows with batch", func(i int) float64 { return float64(1 + i%9) }, nil,
			func(i int, x1, _ float64) float64 { return 100 + 12*x1 + wiggle(i) }, "grows with batch"},
		{"flat", func(i int) float64 { return float64(1 + i%9) }, nil,
			func(i int, _, _ float64) float64 { return 500 + wiggle(i) }, "flat"},
		{"batch and context", func(i int) float64 { return float64(1 + i%8) }, func(i int) float64 { return float64(100 * (1 + (i*3)%11)) },
			func(i int, x1, x2 float64) float64 { return 50 + 3*x1 + 0.2*x2 + wiggle(i)/10 }, "grows with batch and context"},
		{"falls with context", func(i int) float64 { return float64(1 + i%8) }, func(i int) float64 { return float64(100 * (1 + (i*3)%11)) },
			func(i int, x1, x2 float64) float64 { return 900 - 0.5*x2 + wiggle(i)/10 }, "falls with context"},
	}
	for _, tc := range tests {
		const n = 40
		var x1, x2, y []float64
		var rows [][]float64
		for i := range n {
			a := tc.x1(i)
			b := 0.0
			row := []float64{a}
			if tc.x2 != nil {
				b = tc.x2(i)
				row = append(row, b)
				x2 = append(x2, b)
			}
			x1 = append(x1, a)
			y = append(y, tc.y(i, a, b))
			rows = append(rows, row)
		}
		names := []string{RegBatch}
		if tc.x2 != nil {
			names = append(names, RegContext)
		}
		f := fitLine("span", describeRegressors(names, rows), rows, y)
		if f.Verdict != tc.verdict {
			t.Errorf("%s: verdict %q, want %q", tc.name, f.Verdict, tc.verdict)
		}
		if tc.x2 == nil {
			want := normalLine(x1, y)
			if !closeTo(f.InterceptUS, want.a, 1e-9) || !closeTo(f.Slopes[0].USPer, want.b, 1e-9) || !closeTo(f.R2, max(0, want.r2), 1e-9) ||
				!closeTo(f.ResidualUS, want.resid, 1e-9) || !closeTo(f.Slopes[0].StdErrUS, want.se, 1e-9) {
				t.Errorf("%s: fit a=%g b=%g r2=%g resid=%g se=%g, normal equations %+v", tc.name,
					f.InterceptUS, f.Slopes[0].USPer, f.R2, f.ResidualUS, f.Slopes[0].StdErrUS, want)
			}
			continue
		}
		a, b, c := normalPlane(x1, x2, y)
		if !closeTo(f.InterceptUS, a, 1e-9) || !closeTo(f.Slopes[0].USPer, b, 1e-9) || !closeTo(f.Slopes[1].USPer, c, 1e-9) {
			t.Errorf("%s: fit %g + %g x1 + %g x2, normal equations %g + %g x1 + %g x2", tc.name,
				f.InterceptUS, f.Slopes[0].USPer, f.Slopes[1].USPer, a, b, c)
		}
	}
}

// TestCostModelNotFitted: fewer than MinCostPoints steps or distinct
// workloads, no workload at all, a workload that does not vary, and a
// context that moves with the batch: no fit (or the context left out),
// and the notes say why.
func TestCostModelNotFitted(t *testing.T) {
	step := func(batch, tokens, context int, span float64) Step {
		return Step{Phase: PhaseDecode, Batch: batch, Tokens: tokens, Context: context, SpanUS: span, Kernels: 1,
			Buckets: map[BucketID]BucketStat{GEMM: {US: span / 2, Count: 1}}}
	}
	tests := []struct {
		name  string
		steps []Step
		fits  bool
		regs  []string
		note  string
	}{
		{"two steps", []Step{step(1, 1, 0, 10), step(2, 2, 0, 20)}, false, nil, "not fitted: 2 steps"},
		{"two distinct batches", []Step{step(1, 0, 0, 10), step(2, 0, 0, 20), step(2, 0, 0, 21), step(1, 0, 0, 11)}, false, []string{RegBatch}, "2 distinct workload points"},
		{"no workload", []Step{step(0, 0, 0, 10), step(0, 0, 0, 20), step(0, 0, 0, 30)}, false, nil, "neither the tokens nor the requests"},
		{"batch does not vary", []Step{step(4, 4, 0, 10), step(4, 4, 0, 20), step(4, 4, 0, 30)}, false, nil, "tokens left out: 4 in every step"},
		{"context moves with the batch", []Step{step(1, 1, 100, 10), step(2, 2, 200, 20), step(3, 3, 300, 31), step(4, 4, 400, 39)}, true, []string{RegTokens}, "context left out: it moves with tokens"},
		{"batch and context", []Step{step(1, 1, 100, 10), step(2, 2, 900, 20), step(3, 3, 300, 31), step(4, 4, 1600, 39), step(5, 5, 200, 52)}, true, []string{RegTokens, RegContext}, ""},
	}
	for _, tc := range tests {
		ms := costModels(tc.steps)
		if len(ms) != 1 {
			t.Fatalf("%s: %d models, want 1", tc.name, len(ms))
		}
		cm := ms[0]
		var regs []string
		for _, r := range cm.Regressors {
			regs = append(regs, r.Name)
		}
		notes := strings.Join(cm.Notes, "; ")
		if (len(cm.Fits) > 0) != tc.fits || !slices.Equal(regs, tc.regs) || !strings.Contains(notes, tc.note) {
			t.Errorf("%s: %d fits, regressors %v, notes %q; want fits %v, regressors %v, a note with %q", tc.name, len(cm.Fits), regs, notes, tc.fits, tc.regs, tc.note)
		}
	}
}

// rawStep is one step of a trace as read here from its JSON: the GPU events
// whose CPU launch falls between its execute_* annotation and the next.
type rawStep struct {
	start, end float64 // us: first GPU start, last GPU end
	marlinUS   float64 // kernel time of the Marlin kernels
}

// rawSteps reads a Kineto trace with encoding/json and cuts it at its
// execute_* annotations, each GPU event in the step its launch (the runtime
// or driver call of its correlation id) falls in.
func rawSteps(t *testing.T, path string) []rawStep {
	var doc struct {
		TraceEvents []struct {
			Name string          `json:"name"`
			Cat  string          `json:"cat"`
			Ph   string          `json:"ph"`
			Ts   float64         `json:"ts"`
			Dur  float64         `json:"dur"`
			Args json.RawMessage `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.NewDecoder(bytes.NewReader(testkit.Gunzip(t, path))).Decode(&doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var marks []float64
	launch := make(map[int64]float64)
	type gpu struct {
		ts, dur float64
		corr    int64
		marlin  bool
	}
	var gpus []gpu
	for _, e := range doc.TraceEvents {
		var args struct {
			Correlation int64 `json:"correlation"`
		}
		_ = json.Unmarshal(e.Args, &args)
		switch e.Cat {
		case "user_annotation":
			if strings.HasPrefix(e.Name, "execute_") {
				marks = append(marks, e.Ts)
			}
		case "cuda_runtime", "cuda_driver":
			if args.Correlation != 0 {
				launch[args.Correlation] = e.Ts
			}
		case "kernel", "gpu_memcpy", "gpu_memset":
			gpus = append(gpus, gpu{e.Ts, e.Dur, args.Correlation, strings.Contains(e.Name, "Marlin")})
		}
	}
	sort.Float64s(marks)
	steps := make([]rawStep, len(marks))
	for i := range steps {
		steps[i].start = math.Inf(1)
	}
	for _, g := range gpus {
		at, ok := launch[g.corr]
		if !ok {
			t.Fatalf("%s: GPU event with correlation %d has no launch", path, g.corr)
		}
		i := sort.SearchFloat64s(marks, math.Nextafter(at, math.Inf(1))) - 1
		if i < 0 {
			continue
		}
		s := &steps[i]
		s.start, s.end = math.Min(s.start, g.ts), math.Max(s.end, g.ts+g.dur)
		if g.marlin {
			s.marlinUS += g.dur
		}
	}
	return steps
}

// TestCostModelRealIndependent: on the real sample whose decode batch goes
// 3, 4, 5 (vllm_new_annotations), the decode model is fitted against the
// batch on every decode step, and its span and Marlin GEMM fits equal the
// normal equations over the steps as read here from the raw trace, with
// the batch from the generator's truth.json.
func TestCostModelRealIndependent(t *testing.T) {
	dir := testkit.Real(t, "vllm_new_annotations")
	var truth struct {
		Steps []struct {
			Phase   string `json:"phase"`
			CtxReqs int    `json:"context_requests"`
			GenReqs int    `json:"generation_requests"`
		} `json:"steps"`
	}
	testkit.Must(t, sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth))
	files, _ := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if len(files) != 1 {
		t.Fatalf("%s: %d traces, want 1", dir, len(files))
	}
	raw := rawSteps(t, files[0])
	if len(raw) != len(truth.Steps) {
		t.Fatalf("%d steps in the raw trace, %d in truth.json", len(raw), len(truth.Steps))
	}
	var batch, span, marlin []float64
	for i, s := range truth.Steps {
		if s.Phase != PhaseDecode {
			continue
		}
		batch = append(batch, float64(s.CtxReqs+s.GenReqs))
		span = append(span, raw[i].end-raw[i].start)
		marlin = append(marlin, raw[i].marlinUS)
	}
	_, r := analyzePath(t, dir)
	var cm *CostModel
	for i := range r.Ranks[0].CostModel {
		if r.Ranks[0].CostModel[i].Phase == PhaseDecode {
			cm = &r.Ranks[0].CostModel[i]
		}
	}
	if cm == nil || len(cm.Fits) == 0 {
		t.Fatalf("no decode fit: %+v", cm)
	}
	if len(cm.Regressors) != 1 || cm.Regressors[0].Name != RegBatch || cm.Used != len(batch) || cm.Points != 3 {
		t.Errorf("decode model: regressors %+v, %d steps used, %d points; want batch over %d steps, 3 points", cm.Regressors, cm.Used, cm.Points, len(batch))
	}
	for _, tc := range []struct {
		target string
		y      []float64
	}{{"span", span}, {string(MarlinGEMM), marlin}} {
		i := slices.IndexFunc(cm.Fits, func(f CostFit) bool { return f.Target == tc.target })
		if i < 0 {
			t.Errorf("no %s fit", tc.target)
			continue
		}
		f, want := cm.Fits[i], normalLine(batch, tc.y)
		if !closeTo(f.InterceptUS, want.a, 1e-6) || !closeTo(f.Slopes[0].USPer, want.b, 1e-6) || !closeTo(f.R2, max(0, want.r2), 1e-6) || !closeTo(f.ResidualUS, want.resid, 1e-6) {
			t.Errorf("%s: fit a=%g b=%g r2=%g resid=%g, from the raw trace %+v", tc.target, f.InterceptUS, f.Slopes[0].USPer, f.R2, f.ResidualUS, want)
		}
	}
}

// TestWithPrediction: the prediction follows the significant slopes from
// the observed means, holds a flat time at its mean, reads decode's tokens
// as its batch and the context per request times the batch, names an
// extrapolation, and leaves the report it was given unchanged.
func TestWithPrediction(t *testing.T) {
	var steps []Step
	for i := range 12 {
		b := 1 + i%4
		ctx := 100 * b * (1 + i%3)
		steps = append(steps, Step{Phase: PhaseDecode, Batch: b, Tokens: b, Context: ctx, Kernels: 1,
			SpanUS: 1000 + 10*float64(b) + 0.5*float64(ctx) + float64(i%2),
			Buckets: map[BucketID]BucketStat{
				AllReduce: {US: 300 + float64(i%2), Count: 1},
				Attention: {US: 20 + 0.5*float64(ctx) + float64(i%2), Count: 1}}})
	}
	r := &Report{Ranks: []Rank{{CostModel: costModels(steps)}}}
	cm := r.Ranks[0].CostModel[0]
	if len(cm.Fits) == 0 {
		t.Fatalf("no fit: %v", cm.Notes)
	}
	tests := []struct {
		w            Workload
		span, ar, at float64
		extrapolated int
	}{
		{Workload{Batch: 2, Context: 200}, 1000 + 20 + 0.5*400 + 0.5, 300.5, 20 + 0.5*400 + 0.5, 0},
		{Workload{Tokens: 3, Batch: 3, Context: 300}, 1000 + 30 + 0.5*900 + 0.5, 300.5, 20 + 0.5*900 + 0.5, 0},
		{Workload{Batch: 64, Context: 4096}, 1000 + 640 + 0.5*64*4096 + 0.5, 300.5, 20 + 0.5*64*4096 + 0.5, 2},
	}
	for _, tc := range tests {
		p := WithPrediction(r, tc.w).Ranks[0].CostModel[0].Prediction
		got := map[BucketID]float64{}
		for _, b := range p.Buckets {
			got[b.Bucket] = b.US
		}
		if !closeTo(p.SpanUS, tc.span, 0.01) || !closeTo(got[AllReduce], tc.ar, 0.01) || !closeTo(got[Attention], tc.at, 0.01) || len(p.Extrapolated) != tc.extrapolated {
			t.Errorf("%v: span %g allreduce %g attention %g, %d extrapolated (%v); want %g %g %g, %d",
				tc.w, p.SpanUS, got[AllReduce], got[Attention], len(p.Extrapolated), p.Extrapolated, tc.span, tc.ar, tc.at, tc.extrapolated)
		}
	}
	if r.Ranks[0].CostModel[0].Prediction != nil {
		t.Error("WithPrediction changed the report it was given")
	}
}

// TestParseWorkload: the keys, their values, and bad input named.
func TestParseWorkload(t *testing.T) {
	tests := []struct {
		in   string
		want Workload
		err  string
	}{
		{"batch=64,context=4096", Workload{Batch: 64, Context: 4096}, ""},
		{" tokens=512 , batch=8 ", Workload{Batch: 8, Tokens: 512}, ""},
		{"batch=0", Workload{}, "bad field"},
		{"batch=x", Workload{}, "bad field"},
		{"size=3", Workload{}, "unknown key"},
		{"", Workload{}, "empty"},
	}
	for _, tc := range tests {
		w, err := ParseWorkload(tc.in)
		if w != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseWorkload(%q) = %+v, %v; want %+v, error with %q", tc.in, w, err, tc.want, tc.err)
		}
		if err == nil {
			if back, _ := ParseWorkload(w.String()); back != w {
				t.Errorf("%q: String %q reads back as %+v", tc.in, w.String(), back)
			}
		}
	}
}

// BenchmarkCostModels measures the cost models against the analysis they
// are part of, on one generated trace of KINETOSCOPE_BENCH_MB megabytes
// (default 16): "analyze" is the whole analysis, "fit" the cost models of
// its steps with their batch and context made to vary (so that every
// bucket is fitted, as on a sweep); compare the two ns/op of the same run.
func BenchmarkCostModels(b *testing.B) {
	mb := 16
	if s := os.Getenv("KINETOSCOPE_BENCH_MB"); s != "" {
		mb, _ = strconv.Atoi(s)
	}
	path := filepath.Join(b.TempDir(), "bench.json")
	writeBenchTrace(b, path, mb)
	set, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var steps []Step
	b.Run("analyze", func(b *testing.B) {
		for b.Loop() {
			r, err := Analyze(set, Options{})
			if err != nil {
				b.Fatal(err)
			}
			steps = r.Ranks[0].Steps
		}
	})
	for i := range steps {
		steps[i].Batch, steps[i].Context = 1+i%64, (1+i%64)*(512<<(i%3))
	}
	b.Run("fit", func(b *testing.B) {
		for b.Loop() {
			if ms := costModels(steps); len(ms) == 0 || len(ms[0].Fits) == 0 {
				b.Fatalf("no fit: %+v", ms)
			}
		}
		b.ReportMetric(float64(len(steps)), "steps")
	})
}

// TestCostModelSynth: the synthetic generator runs one batch for every
// decode step and writes no context (its annotations are the plain
// format, its traces record no shapes): the decode model is not fitted,
// and says that the tokens do not vary.
func TestCostModelSynth(t *testing.T) {
	cfg := synth.DefaultConfig()
	cfg.Ranks, cfg.Layers, cfg.DecodeSteps, cfg.PythonFunctions, cfg.Gzip = 2, 3, 5, 0, false
	dir := t.TempDir()
	if _, err := synth.Generate(dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	_, r := analyzePath(t, dir)
	for _, rk := range r.Ranks {
		for _, cm := range rk.CostModel {
			notes := strings.Join(cm.Notes, "; ")
			want := fmt.Sprintf("tokens left out: %d in every step", cfg.Batch)
			if cm.Phase == PhaseDecode && (len(cm.Fits) > 0 || !strings.Contains(notes, want) || !strings.Contains(notes, "no context")) {
				t.Errorf("rank %d: decode model %d fits, notes %q; want none, saying %q and no context", rk.Rank, len(cm.Fits), notes, want)
			}
		}
	}
}

// TestCostModelPublic: the public vLLM and SGLang traces have one step a
// phase: no fit, and the notes say so; the context of a vLLM step with
// detailed_trace_annotation fields is the sum of their sk, as read here
// from the raw trace's annotation names.
func TestCostModelPublic(t *testing.T) {
	reSK := regexp.MustCompile(`sk(\d+)sqsq`)
	files, _ := filepath.Glob(filepath.Join(testkit.PublicDir(t), "tracelens-*.json.gz"))
	if len(files) < 4 {
		t.Fatalf("%d tracelens traces", len(files))
	}
	compared := 0
	for _, f := range files {
		var doc struct {
			TraceEvents []struct {
				Name string `json:"name"`
				Cat  string `json:"cat"`
			} `json:"traceEvents"`
		}
		testkit.Must(t, json.Unmarshal(testkit.Gunzip(t, f), &doc))
		want := map[string]int{}
		for _, e := range doc.TraceEvents {
			if e.Cat == "user_annotation" && strings.HasPrefix(e.Name, "execute_") {
				for _, m := range reSK.FindAllStringSubmatch(e.Name, -1) {
					n, _ := strconv.Atoi(m[1])
					want[e.Name] += n
				}
			}
		}
		_, r := analyzePath(t, f)
		for _, rk := range r.Ranks {
			for _, s := range rk.Steps {
				w, ok := want[s.Name]
				if ok {
					compared++
				}
				if ok && (s.Context != w || s.ContextSource != ContextAnnotation) {
					t.Errorf("%s: step %q context %d (%s), the sk fields sum to %d", filepath.Base(f), s.Name, s.Context, s.ContextSource, w)
				}
			}
			for _, cm := range rk.CostModel {
				if len(cm.Fits) > 0 || cm.Steps >= MinCostPoints || !strings.HasPrefix(strings.Join(cm.Notes, ""), "not fitted") {
					t.Errorf("%s: %s model of %d steps: %d fits, notes %q", filepath.Base(f), cm.Phase, cm.Steps, len(cm.Fits), cm.Notes)
				}
			}
		}
	}
	if compared < 4 {
		t.Errorf("%d steps with sk fields compared, want the 4 of the public vLLM and SGLang traces", compared)
	}
}
