package analyze

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"kinetoscope/ingest"
)

// rePhaseMark names vLLM's per-step phase annotations: the model runner's
// "gpu_model_runner: preprocess|forward|postprocess|sample", the older
// "Preprocess|Forward|Postprocess|Sample", and "prepare_inputs|forward|
// sample".
var rePhaseMark = regexp.MustCompile(`^(?:gpu_model_runner: )?(?i:(preprocess|prepare_inputs|forward|postprocess|sample))$`)

// phaseMarkOrder ranks the phase annotations in the order a step runs them.
func phaseMarkOrder(kind string) int {
	switch kind {
	case "preprocess", "prepare_inputs":
		return 0
	case "forward":
		return 1
	case "postprocess":
		return 2
	}
	return 3 // sample
}

// phaseAnnotation is one CPU phase annotation.
type phaseAnnotation struct {
	start, end int64
	kind       string // lower case: preprocess, prepare_inputs, forward, postprocess, sample
	name       string
}

// phaseAnnotations returns t's CPU phase annotations by start.
func phaseAnnotations(t *ingest.Trace) []phaseAnnotation {
	kinds := make(map[ingest.StrID]string)
	var out []phaseAnnotation
	for _, a := range t.Annotations.All() {
		if a.GPU {
			continue
		}
		k, seen := kinds[a.Name]
		if !seen {
			if m := rePhaseMark.FindStringSubmatch(t.Name(a.Name)); m != nil {
				k = strings.ToLower(m[1])
			}
			kinds[a.Name] = k
		}
		if k != "" {
			out = append(out, phaseAnnotation{a.Start, a.Start + a.Dur, k, t.Name(a.Name)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// findPhaseMarks cuts a trace that has phase annotations but no step mark:
// each step starts at the annotation of the first phase a step runs
// (preprocess, else forward, ...).
func findPhaseMarks(pa []phaseAnnotation) foundSteps {
	if len(pa) == 0 {
		return foundSteps{}
	}
	first := pa[0]
	for _, a := range pa {
		if phaseMarkOrder(a.kind) < phaseMarkOrder(first.kind) {
			first = a
		}
	}
	var marks []stepMark
	for _, a := range pa {
		if a.name == first.name {
			marks = append(marks, stepMark{start: a.start, end: a.end, name: "step (" + a.name + ")"})
		}
	}
	kept, nested := outermost(marks)
	return foundSteps{marks: kept, source: SourcePhaseMarks, nested: nested}
}

// phaseMarkEvidence says how many of the steps hold a forward annotation
// launched inside them: evidence that each step is one model iteration.
func phaseMarkEvidence(marks []stepMark, pa []phaseAnnotation) string {
	if len(pa) == 0 || len(marks) == 0 {
		return ""
	}
	with := make(map[int]bool)
	for _, a := range pa {
		if a.kind != "forward" {
			continue
		}
		i := sort.Search(len(marks), func(i int) bool { return marks[i].start > a.start }) - 1
		if i >= 0 {
			with[i] = true
		}
	}
	return fmt.Sprintf("%d of %d steps hold a forward annotation", len(with), len(marks))
}
