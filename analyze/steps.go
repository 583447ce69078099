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
	PhaseUnknown = "unknown"
)

// Step sources, in the order they are tried (a user regex goes first).
const (
	SourceRegex        = "regex"
	SourceVLLM         = "vllm"
	SourceProfilerStep = "profiler_step"
	SourceSGLang       = "sglang"
	SourceInferred     = "inferred"
)

// stepMark is the start of one step as found on the CPU side.
type stepMark struct {
	start       int64 // ns; CPU time (GPU time when byGPU)
	name        string
	phase       string // "" when the annotation does not say
	phaseSource string
	tokens      int
	batch       int
}

// stepFinder recognises one kind of step annotation. parse returns ok
// false for names it does not recognise.
type stepFinder struct {
	source string
	parse  func(name string) (m stepMark, ok bool)
}

var (
	reVLLMNewCached = regexp.MustCompile(`^execute_new_(\d+)_cached_(\d+)$`)
	reVLLMContext   = regexp.MustCompile(`^execute_context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$`)
	reVLLMDetailed  = regexp.MustCompile(`^execute_(\d+)_context_(\d+)\((?:sq)?(\d+)[^)]*\)_generation_(\d+)\((?:sq)?(\d+)[^)]*\)$`)
	reProfilerStep  = regexp.MustCompile(`^ProfilerStep#(\d+)$`)
	reSGLang        = regexp.MustCompile(`^step\[([A-Z_]+)([^\]]*)\]$`)
	reSGLangField   = regexp.MustCompile(`\b(bs|toks)=(\d+)`)
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// stepFinders returns the finders in the order tried; a user regex, when
// given, comes first.
func stepFinders(userRegex *regexp.Regexp) []stepFinder {
	var fs []stepFinder
	if userRegex != nil {
		fs = append(fs, stepFinder{SourceRegex, func(n string) (stepMark, bool) {
			return stepMark{}, userRegex.MatchString(n)
		}})
	}
	return append(fs,
		stepFinder{SourceVLLM, parseVLLM},
		stepFinder{SourceProfilerStep, func(n string) (stepMark, bool) {
			return stepMark{}, reProfilerStep.MatchString(n)
		}},
		stepFinder{SourceSGLang, parseSGLang},
	)
}

// parseVLLM reads vLLM's three step annotation formats.
func parseVLLM(n string) (stepMark, bool) {
	if !strings.HasPrefix(n, "execute_") {
		return stepMark{}, false
	}
	if m := reVLLMNewCached.FindStringSubmatch(n); m != nil {
		nw, cached := atoi(m[1]), atoi(m[2])
		return stepMark{phase: phaseOf(nw, cached), phaseSource: "annotation: new/cached requests", batch: nw + cached}, true
	}
	if m := reVLLMContext.FindStringSubmatch(n); m != nil {
		ctx, gen := atoi(m[1]), atoi(m[3])
		return stepMark{phase: phaseOf(ctx, gen), phaseSource: "annotation: context/generation requests",
			tokens: atoi(m[2]) + atoi(m[4]), batch: ctx + gen}, true
	}
	if m := reVLLMDetailed.FindStringSubmatch(n); m != nil {
		ctx, gen := atoi(m[2]), atoi(m[4])
		return stepMark{phase: phaseOf(ctx, gen), phaseSource: "annotation: context/generation requests",
			tokens: atoi(m[1]), batch: ctx + gen}, true
	}
	return stepMark{}, false
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
	for _, f := range reSGLangField.FindAllStringSubmatch(m[2], -1) {
		if f[1] == "bs" {
			s.batch = atoi(f[2])
		} else {
			s.tokens = atoi(f[2])
		}
	}
	return s, true
}

// findSteps returns the step starts of t, sorted, from the first finder
// that recognises any CPU annotation, with the finder's source.
func findSteps(t *ingest.Trace, finders []stepFinder) ([]stepMark, string) {
	names := make(map[ingest.StrID]bool)
	for _, a := range t.Annotations.All() {
		if !a.GPU {
			names[a.Name] = true
		}
	}
	for _, f := range finders {
		parsed := make(map[ingest.StrID]stepMark)
		for id := range names {
			if m, ok := f.parse(t.Name(id)); ok {
				m.name = t.Name(id)
				parsed[id] = m
			}
		}
		if len(parsed) == 0 {
			continue
		}
		var marks []stepMark
		for _, a := range t.Annotations.All() {
			if m, ok := parsed[a.Name]; ok && !a.GPU {
				m.start = a.Start
				marks = append(marks, m)
			}
		}
		sort.SliceStable(marks, func(i, j int) bool { return marks[i].start < marks[j].start })
		return dedupMarks(marks), f.source
	}
	return nil, ""
}

// dedupMarks drops marks that start at the same time as the one before.
func dedupMarks(ms []stepMark) []stepMark {
	out := ms[:0]
	for i, m := range ms {
		if i > 0 && m.start == ms[i-1].start {
			continue
		}
		out = append(out, m)
	}
	return out
}

// stepEvidence describes how steps were found.
func stepEvidence(source string, n int, userRegex *regexp.Regexp) string {
	switch source {
	case SourceRegex:
		return fmt.Sprintf("%d annotations match --step-regex %q", n, userRegex.String())
	case SourceVLLM:
		return fmt.Sprintf("%d vLLM execute_* annotations", n)
	case SourceProfilerStep:
		return fmt.Sprintf("%d ProfilerStep#N annotations", n)
	case SourceSGLang:
		return fmt.Sprintf("%d SGLang step[...] annotations", n)
	}
	return ""
}
