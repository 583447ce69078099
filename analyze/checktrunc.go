package analyze

import (
	"regexp"
	"strconv"
	"strings"
)

// Thresholds of the cut-step check.
const (
	// cutKernelRatio: the last step is cut off when it ran fewer than this
	// fraction of the median kernel count of the other steps of its phase,
	// cutAgreeRatio: which agree with each other (their 10th percentile
	// at least this fraction of their median), cutMinPeers: at least this
	// many of them.
	cutKernelRatio = 0.75
	cutAgreeRatio  = 0.9
	cutMinPeers    = 3
)

// TruncationCheck says whether the profiler lost events or the end of
// the profile cut the last step off.
type TruncationCheck struct {
	// DroppedRecords is the number of activity records the profiler says
	// it dropped (Kineto's "Dropped N activity records"), and Messages are
	// its log lines that say it lost events ("Exceeded max GPU buffer
	// count ... terminating tracing", buffer overflows), from the trace's
	// WARNING/ERROR arrays.
	DroppedRecords int64    `json:"dropped_records"`
	Messages       []string `json:"messages,omitempty"`
	// CutStep is the last step when it was cut off: it is marked
	// Step.Truncated and left out of every phase's figures.
	CutStep *CutStep `json:"cut_step,omitempty"`
}

// CutStep is a last step cut off by the end of the profile.
type CutStep struct {
	Index         int    `json:"index"` // Step.Index
	Phase         string `json:"phase"`
	Kernels       int    `json:"kernels"`
	MedianKernels int    `json:"median_kernels"` // of the phase's other steps
}

// reDropped finds the record count of Kineto's "Dropped N activity
// records"; reLost the other log lines that say events were lost.
var (
	reDropped = regexp.MustCompile(`(?i)dropped (\d+) activity records`)
	reLost    = regexp.MustCompile(`(?i)dropped \d+ activity records|exceeded max gpu buffer|buffer overflow|terminating tracing|records? (were |was )?dropped`)
)

// checkTruncation reads the profiler's log lines and the step marked cut.
func checkTruncation(log []string, steps []Step) TruncationCheck {
	var tc TruncationCheck
	for _, l := range log {
		if !reLost.MatchString(l) {
			continue
		}
		tc.Messages = append(tc.Messages, l)
		if m := reDropped.FindStringSubmatch(l); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			tc.DroppedRecords += n
		}
	}
	for i := range steps {
		if s := &steps[i]; s.Truncated {
			tc.CutStep = &CutStep{Index: s.Index, Phase: s.Phase, Kernels: s.Kernels, MedianKernels: peerKernels(steps, i)}
		}
	}
	return tc
}

// markCutStep marks the last step with GPU work Truncated when the end of
// the profile cut it off: it ran far fewer kernels than the other steps
// of its phase, which agree with each other.
func markCutStep(steps []Step) {
	last := -1
	for i := range steps {
		if steps[i].HasWork() {
			last = i
		}
	}
	if last < 0 || strings.TrimSpace(steps[last].Phase) == "" {
		return
	}
	var counts []int64
	for i := range steps {
		if s := &steps[i]; i != last && s.HasWork() && s.Phase == steps[last].Phase {
			counts = append(counts, int64(s.Kernels))
		}
	}
	if len(counts) < cutMinPeers {
		return
	}
	med := float64(quantile(counts, 0.5))
	if float64(quantile(counts, 0.1)) < cutAgreeRatio*med {
		return
	}
	if float64(steps[last].Kernels) < cutKernelRatio*med {
		steps[last].Truncated = true
	}
}

// peerKernels is the median kernel count of the other steps of step i's
// phase.
func peerKernels(steps []Step, i int) int {
	var counts []int64
	for j := range steps {
		if j != i && steps[j].HasWork() && steps[j].Phase == steps[i].Phase {
			counts = append(counts, int64(steps[j].Kernels))
		}
	}
	return int(quantile(counts, 0.5))
}
