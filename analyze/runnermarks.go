package analyze

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"kinetoscope/ingest"
)

// reRunnerMark names vLLM's per-step runner marks: the model runner's
// "gpu_model_runner: preprocess|forward|postprocess|sample", the older
// "Preprocess|Forward|Postprocess|Sample", and "prepare_inputs|forward|
// sample".
var reRunnerMark = regexp.MustCompile(`^(?:gpu_model_runner: )?(?i:(preprocess|prepare_inputs|forward|postprocess|sample))$`)

// runnerMarkOrder ranks the runner marks in the order a step runs them.
func runnerMarkOrder(kind string) int {
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

// runnerMark is one runner mark (a CPU annotation of the model runner).
type runnerMark struct {
	start, end int64
	kind       string // lower case: preprocess, prepare_inputs, forward, postprocess, sample
	name       string
}

// runnerMarks returns t's CPU runner marks by start.
func runnerMarks(t *ingest.Trace) []runnerMark {
	kinds := make(map[ingest.StrID]string)
	var out []runnerMark
	for _, a := range t.Annotations.All() {
		if a.GPU {
			continue
		}
		k, seen := kinds[a.Name]
		if !seen {
			if m := reRunnerMark.FindStringSubmatch(t.Name(a.Name)); m != nil {
				k = strings.ToLower(m[1])
			}
			kinds[a.Name] = k
		}
		if k != "" {
			out = append(out, runnerMark{a.Start, a.Start + a.Dur, k, t.Name(a.Name)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// findRunnerMarks cuts a trace that has runner marks but no step mark:
// each step starts at the annotation of the first phase a step runs
// (preprocess, else forward, ...).
func findRunnerMarks(pa []runnerMark) foundSteps {
	if len(pa) == 0 {
		return foundSteps{}
	}
	first := pa[0]
	for _, a := range pa {
		if runnerMarkOrder(a.kind) < runnerMarkOrder(first.kind) {
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
	return foundSteps{marks: kept, source: SourceRunnerMarks, nested: nested}
}

// runnerMarkEvidence says how many of the steps hold a forward annotation
// launched inside them: evidence that each step is one model iteration.
func runnerMarkEvidence(marks []stepMark, pa []runnerMark) string {
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
