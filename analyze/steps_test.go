package analyze

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseStepAnnotations(t *testing.T) {
	tests := []struct {
		name          string
		parse         func(string) (stepMark, bool)
		ok            bool
		phase         string
		tokens, batch int
	}{
		{"execute_new_0_cached_32", parseVLLM, true, PhaseDecode, 0, 32},
		{"execute_new_4_cached_0", parseVLLM, true, PhasePrefill, 0, 4},
		{"execute_new_2_cached_30", parseVLLM, true, PhaseMixed, 0, 32},
		{"execute_context_0(0)_generation_32(32)", parseVLLM, true, PhaseDecode, 32, 32},
		{"execute_context_3(2048)_generation_0(0)", parseVLLM, true, PhasePrefill, 2048, 3},
		{"execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)", parseVLLM, true, PhaseDecode, 32, 32},
		{"execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)", parseVLLM, true, PhaseMixed, 8192, 46},
		{"execute_model", parseVLLM, false, "", 0, 0},
		{"step[DECODE bs=32]", parseSGLang, true, PhaseDecode, 0, 32},
		{"step[EXTEND bs=15 toks=15360]", parseSGLang, true, PhasePrefill, 15360, 15},
		{"step[PREFILL bs=2 toks=900]", parseSGLang, true, PhasePrefill, 900, 2},
		{"step[MIXED bs=8 toks=300]", parseSGLang, true, PhaseMixed, 300, 8},
		{"step[IDLE]", parseSGLang, true, PhaseUnknown, 0, 0},
		{"stepper", parseSGLang, false, "", 0, 0},
	}
	for _, tt := range tests {
		m, ok := tt.parse(tt.name)
		if ok != tt.ok || m.phase != tt.phase || m.tokens != tt.tokens || m.batch != tt.batch {
			t.Errorf("%s: got ok=%v phase=%q tokens=%d batch=%d, want %v %q %d %d",
				tt.name, ok, m.phase, m.tokens, m.batch, tt.ok, tt.phase, tt.tokens, tt.batch)
		}
	}
}

func TestFindStepsOrder(t *testing.T) {
	b := newTraceBuilder()
	b.annotate("ProfilerStep#7", 0, 100)
	b.annotate("execute_context_0(0)_generation_4(4)", 10, 50)
	b.annotate("step[DECODE bs=4]", 12, 40)
	b.annotate("execute_context_0(0)_generation_4(4)", 200, 50)
	tests := []struct {
		re     string
		source string
		n      int
	}{
		{"", SourceVLLM, 2},
		{`^step\[`, SourceRegex, 1},
		{`^ProfilerStep`, SourceRegex, 1},
	}
	for _, tt := range tests {
		var re *regexp.Regexp
		if tt.re != "" {
			re = regexp.MustCompile(tt.re)
		}
		marks, src := findSteps(b.t, stepFinders(re))
		if src != tt.source || len(marks) != tt.n {
			t.Errorf("regex %q: got %s with %d steps, want %s with %d", tt.re, src, len(marks), tt.source, tt.n)
		}
	}
}

func TestInferPhases(t *testing.T) {
	mk := func(kernel, gemm float64) Step {
		return Step{KernelUS: kernel, Buckets: map[BucketID]BucketStat{GEMM: {US: gemm}}}
	}
	steps := []Step{mk(1000, 600), mk(100, 50), mk(110, 55), mk(105, 50), {Phase: PhaseDecode, KernelUS: 5}}
	inferPhases(steps, false)
	want := []string{PhasePrefill, PhaseDecode, PhaseDecode, PhaseDecode, PhaseDecode}
	for i, s := range steps {
		if s.Phase != want[i] {
			t.Errorf("step %d: phase %s (%s), want %s", i, s.Phase, s.PhaseSource, want[i])
		}
	}
	train := []Step{mk(1000, 600), mk(100, 50), mk(110, 55)}
	inferPhases(train, true)
	for i, s := range train {
		if s.Phase != PhaseUnknown {
			t.Errorf("training step %d: phase %s, want unknown", i, s.Phase)
		}
	}
}

func TestInferredSteps(t *testing.T) {
	b := newTraceBuilder()
	for burst := range int64(3) {
		base := burst * 10_000 * us1 // bursts 10 ms apart, 100 us of work each
		for k := range int64(10) {
			b.launched("nvjet_tst_x", base+k*10*us1, base+k*10*us1+5*us1, 8*us1)
		}
	}
	r, err := Analyze(b.set(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rk := r.Ranks[0]
	if rk.StepSource != SourceInferred || len(rk.Steps) != 3 || !strings.Contains(rk.StepEvidence, "2 idle gaps") {
		t.Fatalf("inferred steps: %s %q, %d steps", rk.StepSource, rk.StepEvidence, len(rk.Steps))
	}
	for _, s := range rk.Steps {
		if s.Kernels != 10 || s.KernelUS != 80 {
			t.Errorf("step %d: %d kernels, %.0f us; want 10, 80", s.Index, s.Kernels, s.KernelUS)
		}
	}
}
