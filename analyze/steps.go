package analyze

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"kinetoscope/ingest"
)

// Phases of a step.
const (
	PhasePrefill = "prefill"
	PhaseDecode  = "decode"
	PhaseMixed   = "mixed"
	// PhaseEmpty is a step with no GPU work (vLLM's last execute_model
	// often has none); it is kept out of every phase's statistics.
	PhaseEmpty   = "empty"
	PhaseUnknown = "unknown"
)

// Step sources, in the order they are tried (a user regex goes first).
const (
	SourceRegex        = "regex"
	SourceVLLM         = "vllm"
	SourceProfilerStep = "profiler_step"
	// SourceExecuteModel is vLLM's worker-level execute_model call: a CPU
	// annotation, or a python_function event of a with_stack trace.
	SourceExecuteModel = "execute_model"
	// SourceRunnerMarks is vLLM's per-step runner marks (preprocess,
	// forward, sample, ...) when no annotation marks the step itself.
	SourceRunnerMarks = "phase_annotations"
	SourceSGLang      = "sglang"
	SourceInferred    = "inferred"
)

// stepMark is the start of one step as found on the CPU side.
type stepMark struct {
	start       int64 // ns; CPU time (GPU time when byGPU)
	end         int64 // ns; the end of the mark's annotation or call
	name        string
	phase       string // "" when the mark does not say
	phaseSource string
	tokens      int
	batch       int
	context     int // KV length summed over the step's requests; 0 when the mark does not say
}

// stepFinder recognises one kind of step mark. parse returns ok false for
// names it does not recognise. python says that python_function calls
// (Trace.PythonCalls) are marks too, not only CPU annotations.
type stepFinder struct {
	source string
	parse  func(name string) (m stepMark, ok bool)
	python bool
}

var (
	reVLLMNewCached = regexp.MustCompile(`^execute_new_(\d+)_cached_(\d+)$`)
	// execute_[K_]context_N(FIELDS)_generation_M(FIELDS): N and M are the
	// prefill and decode requests; a field is the phase's scheduled tokens
	// (vLLM's plain format, execute_context_N(T)_generation_M(G)) or, with
	// vLLM's detailed_trace_annotation, sqT skS sqsqQ sqskR (reVLLMDetailed),
	// K then being the tokens scheduled; other text (888_788544) is kept in
	// the name only.
	reVLLMContext = regexp.MustCompile(`^execute_(?:(\d+)_)?context_(\d+)\(([^()]*)\)_generation_(\d+)\(([^()]*)\)$`)
	// reVLLMDetailed is a field of detailed_trace_annotation (vLLM's
	// ProfilerConfig; the TraceLens patches that add it define the fields):
	// per phase, sq the scheduled tokens, sk the sum over requests of the
	// KV length (computed plus scheduled tokens), sqsq and sqsk the sums of
	// sq*sq and sq*sk.
	reVLLMDetailed = regexp.MustCompile(`^sq(\d+)sk(\d+)(?:sqsq\d+sqsk\d+)?$`)
	reProfilerStep = regexp.MustCompile(`^ProfilerStep#(\d+)$`)
	reSGLang       = regexp.MustCompile(`^step\[([A-Z_]+)([^\]]*)\]$`)
	// reSGLangField is a key=count field of SGLang's step annotation: bs
	// (requests) and toks (tokens), and in newer annotations c_sq/g_sq
	// (prefill/decode tokens) and c_sk/g_sk (KV length summed over the
	// phase's requests), as in TraceLens issue #818's
	// "step[DECODE bs=64 g_sqsq=64 g_sqsk=100032 g_sk=100032]".
	reSGLangField = regexp.MustCompile(`(?:^|\s)(\w+)=(\d+)`)
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// plainCount reads a parenthesised field that is a plain count; ok false
// for any other text.
func plainCount(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// stepFinders returns the finders in the order tried; a user regex, when
// given, comes first.
func stepFinders(userRegex *regexp.Regexp) []stepFinder {
	var fs []stepFinder
	if userRegex != nil {
		fs = append(fs, stepFinder{source: SourceRegex, parse: func(n string) (stepMark, bool) {
			return stepMark{}, userRegex.MatchString(n)
		}})
	}
	return append(fs,
		stepFinder{source: SourceVLLM, parse: parseVLLM},
		stepFinder{source: SourceProfilerStep, parse: func(n string) (stepMark, bool) {
			return stepMark{}, reProfilerStep.MatchString(n)
		}},
		stepFinder{source: SourceExecuteModel, python: true, parse: func(n string) (stepMark, bool) {
			return stepMark{}, isExecuteModel(n)
		}},
		stepFinder{source: SourceSGLang, parse: parseSGLang},
	)
}

// isExecuteModel says whether n is the worker-level execute_model: a
// record_function annotation of that name, or a with_stack python_function
// such as "vllm/v1/worker/gpu_worker.py(263): execute_model" (V1) or
// ".../worker/worker_base.py(398): execute_model" (V0). The name is
// ingest's, which keeps those python_function events.
func isExecuteModel(n string) bool {
	fn, ok := ingest.PythonFunction(n)
	return n == ingest.ExecuteModel || ok && fn == ingest.ExecuteModel
}

// parseVLLM reads vLLM's step annotation families: execute_new_N_cached_M
// and execute_[K_]context_N(...)_generation_M(...), with any text in the
// parentheses. Request counts always parse; token counts and the context
// where the fields say them (vllmFields).
func parseVLLM(n string) (stepMark, bool) {
	if !strings.HasPrefix(n, "execute_") {
		return stepMark{}, false
	}
	if m := reVLLMNewCached.FindStringSubmatch(n); m != nil {
		nw, cached := atoi(m[1]), atoi(m[2])
		return stepMark{phase: phaseOf(nw, cached), phaseSource: "annotation: new/cached requests", batch: nw + cached}, true
	}
	m := reVLLMContext.FindStringSubmatch(n)
	if m == nil {
		return stepMark{}, false
	}
	ctx, gen := atoi(m[2]), atoi(m[4])
	s := stepMark{phase: phaseOf(ctx, gen), phaseSource: "annotation: context/generation requests", batch: ctx + gen}
	ct, ck, cok := vllmField(m[3], ctx)
	gt, gk, gok := vllmField(m[5], gen)
	switch {
	case cok && gok:
		s.tokens = ct + gt
	case m[1] != "":
		s.tokens = atoi(m[1])
	}
	if ck >= 0 && gk >= 0 {
		s.context = ck + gk
	}
	return s, true
}

// vllmField reads one parenthesised field of a phase with reqs requests:
// its tokens (ok false when the field says none) and its context, the KV
// length summed over the requests (-1 when the field does not say it; 0
// for a phase without requests).
func vllmField(f string, reqs int) (tokens, context int, ok bool) {
	if d := reVLLMDetailed.FindStringSubmatch(f); d != nil {
		return atoi(d[1]), atoi(d[2]), true
	}
	context = -1
	if reqs == 0 {
		context = 0
	}
	tokens, ok = plainCount(f)
	return tokens, context, ok
}

// phaseOf names the phase of a step with ctx prefill requests and gen
// decode requests.
func phaseOf(ctx, gen int) string {
	switch {
	case ctx == 0 && gen > 0:
		return PhaseDecode
	case ctx > 0 && gen == 0:
		return PhasePrefill
	case ctx > 0 && gen > 0:
		return PhaseMixed
	}
	return PhaseUnknown
}

// parseSGLang reads SGLang's step[MODE bs=N toks=T] annotations.
func parseSGLang(n string) (stepMark, bool) {
	m := reSGLang.FindStringSubmatch(n)
	if m == nil {
		return stepMark{}, false
	}
	s := stepMark{phaseSource: "annotation: SGLang forward mode " + m[1]}
	switch m[1] {
	case "DECODE", "TARGET_VERIFY", "DRAFT_EXTEND":
		s.phase = PhaseDecode
	case "EXTEND", "PREFILL":
		s.phase = PhasePrefill
	case "MIXED":
		s.phase = PhaseMixed
	default:
		s.phase = PhaseUnknown
	}
	f := make(map[string]int)
	for _, kv := range reSGLangField.FindAllStringSubmatch(m[2], -1) {
		f[kv[1]] = atoi(kv[2])
	}
	s.batch, s.tokens = f["bs"], f["toks"]
	if s.tokens == 0 {
		s.tokens = f["c_sq"] + f["g_sq"]
	}
	s.context = f["c_sk"] + f["g_sk"]
	return s, true
}

// foundSteps is what findSteps found: the marks in time order, the
// finder's source, how many nested marks were folded into their outer one,
// and whether the marks came from python_function calls.
type foundSteps struct {
	marks  []stepMark
	source string
	nested int
	python bool
}

// findSteps returns the step marks of t from the first finder that
// recognises any CPU annotation (or python call, for finders that read
// them). A mark nested in the one before it (the model runner's
// execute_model inside the worker's) is part of that step: the outermost
// wins.
func findSteps(t *ingest.Trace, finders []stepFinder) foundSteps {
	for _, f := range finders {
		marks := parseMarks(t, &t.Annotations, f, true)
		python := false
		if len(marks) == 0 && f.python {
			marks, python = parseMarks(t, &t.PythonCalls, f, false), true
		}
		if len(marks) == 0 {
			continue
		}
		sort.SliceStable(marks, func(i, j int) bool { return marks[i].start < marks[j].start })
		kept, nested := outermost(marks)
		return foundSteps{marks: kept, source: f.source, nested: nested, python: python}
	}
	return foundSteps{}
}

// parseMarks returns the events of col that f recognises, CPU-side only
// when cpuOnly (GPU annotations are never marks).
func parseMarks(t *ingest.Trace, col *ingest.Chunks[ingest.Annotation], f stepFinder, cpuOnly bool) []stepMark {
	parsed := make(map[ingest.StrID]*stepMark)
	var marks []stepMark
	for _, a := range col.All() {
		if cpuOnly && a.GPU {
			continue
		}
		p, seen := parsed[a.Name]
		if !seen {
			if m, ok := f.parse(t.Name(a.Name)); ok {
				m.name = t.Name(a.Name)
				p = &m
			}
			parsed[a.Name] = p
		}
		if p != nil {
			m := *p
			m.start, m.end = a.Start, a.Start+a.Dur
			marks = append(marks, m)
		}
	}
	return marks
}

// outermost drops the marks that start inside the mark kept before them
// (same start included), and returns the kept marks and how many were
// dropped.
func outermost(ms []stepMark) ([]stepMark, int) {
	out := ms[:0]
	dropped := 0
	for _, m := range ms {
		if n := len(out); n > 0 && (m.start == out[n-1].start || m.start < out[n-1].end) {
			dropped++
			out[n-1].end = max(out[n-1].end, m.end)
			continue
		}
		out = append(out, m)
	}
	return out, dropped
}

// stepEvidence describes how steps were found.
func stepEvidence(f foundSteps, userRegex *regexp.Regexp) string {
	n := len(f.marks)
	var s string
	switch f.source {
	case SourceRegex:
		s = fmt.Sprintf("%d annotations match --step-regex %q", n, userRegex.String())
	case SourceVLLM:
		s = fmt.Sprintf("%d vLLM execute_* annotations", n)
	case SourceProfilerStep:
		s = fmt.Sprintf("%d ProfilerStep#N annotations", n)
	case SourceExecuteModel:
		if f.python {
			s = fmt.Sprintf("%d worker execute_model calls (python_function events of a with_stack trace; no step annotation)", n)
		} else {
			s = fmt.Sprintf("%d execute_model annotations", n)
		}
	case SourceSGLang:
		s = fmt.Sprintf("%d SGLang step[...] annotations", n)
	case SourceRunnerMarks:
		s = fmt.Sprintf("no step annotation; %d steps, each starting at one of vLLM's phase annotations %s", n, strings.TrimSuffix(strings.TrimPrefix(f.marks[0].name, "step ("), ")"))
	}
	if f.nested > 0 {
		s += fmt.Sprintf("; %d nested marks counted with their outer step", f.nested)
	}
	return s
}
