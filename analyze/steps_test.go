package analyze

import (
	"regexp"
	"strings"
	"testing"

	"kinetoscope/ingest"
)

func TestParseStepAnnotations(t *testing.T) {
	tests := []struct {
		name                   string
		parse                  func(string) (stepMark, bool)
		ok                     bool
		phase                  string
		tokens, batch, context int
	}{
		{"execute_new_0_cached_32", parseVLLM, true, PhaseDecode, 0, 32, 0},
		{"execute_new_4_cached_0", parseVLLM, true, PhasePrefill, 0, 4, 0},
		{"execute_new_2_cached_30", parseVLLM, true, PhaseMixed, 0, 32, 0},
		{"execute_context_0(0)_generation_32(32)", parseVLLM, true, PhaseDecode, 32, 32, 0},
		{"execute_context_3(2048)_generation_0(0)", parseVLLM, true, PhasePrefill, 2048, 3, 0},
		{"execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)", parseVLLM, true, PhaseDecode, 32, 32, 55086},
		{"execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)", parseVLLM, true, PhaseMixed, 8192, 46, 8430 + 34489},
		{"execute_context_1(888_788544)_generation_0(0)", parseVLLM, true, PhasePrefill, 0, 1, 0},
		{"execute_context_2(17)_generation_30(sq30sk900)", parseVLLM, true, PhaseMixed, 47, 32, 0},
		{"execute_context_0(0)_generation_30(sq30sk900)", parseVLLM, true, PhaseDecode, 30, 30, 900},
		{"execute_512_context_1(888_788544)_generation_3(3)", parseVLLM, true, PhaseMixed, 512, 4, 0},
		// Plain fields say the tokens; a leading number then is not read
		// as them (the sample generator's engine step).
		{"execute_27_context_0(0)_generation_5(5)", parseVLLM, true, PhaseDecode, 5, 5, 0},
		{"execute_context_0(0)_generation_0(0)", parseVLLM, true, PhaseUnknown, 0, 0, 0},
		{"execute_context_1(2)_generation_0", parseVLLM, false, "", 0, 0, 0},
		{"execute_model", parseVLLM, false, "", 0, 0, 0},
		{"step[DECODE bs=32]", parseSGLang, true, PhaseDecode, 0, 32, 0},
		{"step[EXTEND bs=15 toks=15360]", parseSGLang, true, PhasePrefill, 15360, 15, 0},
		{"step[PREFILL bs=2 toks=900]", parseSGLang, true, PhasePrefill, 900, 2, 0},
		{"step[MIXED bs=8 toks=300]", parseSGLang, true, PhaseMixed, 300, 8, 0},
		{"step[IDLE]", parseSGLang, true, PhaseUnknown, 0, 0, 0},
		{"step[EXTEND bs=1 toks=1025 c_sqsq=1050625 c_sqsk=1050625 c_sk=1025]", parseSGLang, true, PhasePrefill, 1025, 1, 1025},
		{"step[DECODE bs=64 g_sqsq=64 g_sqsk=100032 g_sk=100032]", parseSGLang, true, PhaseDecode, 0, 64, 100032},
		{"step[MIXED bs=66 c=2 g=64 c_sq=2048 c_sk=2048 c_sqsq=2097152 c_sqsk=2097152 g_sq=64 g_sk=65600 g_sqsq=64 g_sqsk=65600]", parseSGLang, true, PhaseMixed, 2112, 66, 2048 + 65600},
		{"stepper", parseSGLang, false, "", 0, 0, 0},
	}
	for _, tt := range tests {
		m, ok := tt.parse(tt.name)
		if ok != tt.ok || m.phase != tt.phase || m.tokens != tt.tokens || m.batch != tt.batch || m.context != tt.context {
			t.Errorf("%s: got ok=%v phase=%q tokens=%d batch=%d context=%d, want %v %q %d %d %d",
				tt.name, ok, m.phase, m.tokens, m.batch, m.context, tt.ok, tt.phase, tt.tokens, tt.batch, tt.context)
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
		f := findSteps(b.t, stepFinders(re))
		marks, src := f.marks, f.source
		if src != tt.source || len(marks) != tt.n {
			t.Errorf("regex %q: got %s with %d steps, want %s with %d", tt.re, src, len(marks), tt.source, tt.n)
		}
	}
}

func TestInferPhases(t *testing.T) {
	mk := func(kernel, gemm float64) Step {
		return Step{KernelUS: kernel, Kernels: 1, Buckets: map[BucketID]BucketStat{GEMM: {US: gemm}}}
	}
	steps := []Step{mk(1000, 600), mk(100, 50), mk(110, 55), mk(105, 50), {Phase: PhaseDecode, KernelUS: 5, Kernels: 1}, {Phase: PhaseDecode}}
	inferPhases(steps, false)
	want := []string{PhasePrefill, PhaseDecode, PhaseDecode, PhaseDecode, PhaseDecode, PhaseEmpty}
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

// stepKernels launches one engine step of a small model at cpu (GPU work
// 20 us later): embedding, layers x (GEMM, attention, GEMM), lm_head,
// argmax, and the sampled tokens copied to the host. It returns the CPU
// time after the step.
func (b *traceBuilder) stepKernels(cpu int64, layers int, gemm string) int64 {
	k := func(name string, kind ingest.GPUKind) {
		b.kernel(name, kind, b.launch("cudaLaunchKernel", cpu), cpu+20*us1, 4*us1)
		cpu += 5 * us1
	}
	k("embedding_kernel", ingest.KindKernel)
	for range layers {
		k(gemm, ingest.KindKernel)
		k("flash_fwd_kernel", ingest.KindKernel)
		k(gemm, ingest.KindKernel)
	}
	k("lm_head_gemm", ingest.KindKernel)
	k("argmax_kernel", ingest.KindKernel)
	k("Memcpy DtoH (Device -> Pinned)", ingest.KindMemcpy)
	return cpu + 200*us1
}

func TestInferredSteps(t *testing.T) {
	tests := []struct {
		name     string
		build    func(b *traceBuilder)
		steps    int
		evidence string
	}{
		{"repeating steps with a copy to the host", func(b *traceBuilder) {
			cpu := int64(0)
			for i := range 6 {
				gemm := "gemm_decode"
				if i == 0 {
					gemm = "gemm_prefill_tile_128x256"
				}
				cpu = b.stepKernels(cpu, 4, gemm)
			}
		}, 6, "6 cycles in which 4 kernels run exactly once"},
		{"a step cut short by the end of the profile", func(b *traceBuilder) {
			cpu := int64(0)
			for range 5 {
				cpu = b.stepKernels(cpu, 4, "gemm_decode")
			}
			b.launched("embedding_kernel", cpu, cpu+20*us1, 4*us1)
			b.launched("gemm_decode", cpu+5*us1, cpu+25*us1, 4*us1)
		}, 5, "2 GPU events after the last cycle are outside the steps"},
		{"idle gaps alone are not steps", func(b *traceBuilder) {
			for burst := range int64(3) {
				base := burst * 10_000 * us1 // bursts 10 ms apart, 100 us of work each
				for k := range int64(10) {
					b.launched("nvjet_tst_x", base+k*10*us1, base+k*10*us1+5*us1, 8*us1)
				}
			}
		}, 1, "the whole trace is one step"},
	}
	for _, tt := range tests {
		b := newTraceBuilder()
		tt.build(b)
		r, err := Analyze(b.set(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		rk := r.Ranks[0]
		if rk.StepSource != SourceInferred || len(rk.Steps) != tt.steps || !strings.Contains(rk.StepEvidence, tt.evidence) {
			t.Errorf("%s: %s %q, %d steps; want %d steps, evidence %q", tt.name, rk.StepSource, rk.StepEvidence, len(rk.Steps), tt.steps, tt.evidence)
		}
	}
}
