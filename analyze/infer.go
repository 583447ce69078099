package analyze

import (
	"fmt"
	"regexp"
	"slices"

	"kinetoscope/ingest"
)

// inferSteps cuts a trace without step annotations at the long idle gaps of
// its GPU activity: a gap counts when it is at least 1 ms and 20 times the
// median gap. The steps are on GPU time.
func inferSteps(t *ingest.Trace) ([]stepMark, string) {
	n := t.GPU.Len()
	if n == 0 {
		return nil, "no step annotations and no GPU events"
	}
	iv := make([]interval, 0, n)
	for _, ev := range t.GPU.All() {
		iv = append(iv, interval{0, ev.Start, ev.Start + ev.Dur})
	}
	slices.SortFunc(iv, func(a, b interval) int { return cmpInt64(a.start, b.start) })
	var gaps []int64
	end := iv[0].end
	for _, x := range iv[1:] {
		if x.start > end {
			gaps = append(gaps, x.start-end)
		}
		end = max(end, x.end)
	}
	med := quantile(slices.Clone(gaps), 0.5)
	cut := max(int64(1_000_000), 20*med)
	marks := []stepMark{{start: iv[0].start}}
	end = iv[0].end
	for _, x := range iv[1:] {
		if x.start-end >= cut {
			marks = append(marks, stepMark{start: x.start})
		}
		end = max(end, x.end)
	}
	for i := range marks {
		marks[i].name = fmt.Sprintf("inferred step %d", i)
	}
	ev := fmt.Sprintf("no step annotations; GPU activity split at %d idle gaps >= %.0f us (median gap %.1f us)",
		len(marks)-1, us(cut), us(med))
	return marks, ev
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reTraining names kernels that only training runs: backward passes and
// optimizers.
var reTraining = regexp.MustCompile(`(?i)backward|_bwd|bwd_|wgrad|dgrad|adam|sgd|optimizer|grad_input`)

// inferPhases sets the phase of steps whose annotation does not give one:
// training traces stay unknown; otherwise, with three steps or more, a step
// whose kernel time is at least 3 times the median and whose GEMM share is
// at least the median's is prefill, the others decode.
func inferPhases(steps []Step, training bool) {
	var open []int
	for i := range steps {
		if steps[i].Phase == "" {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return
	}
	var kt, gs []float64
	for _, i := range open {
		kt = append(kt, steps[i].KernelUS)
		gs = append(gs, gemmShare(&steps[i]))
	}
	medK, medG := quantileFloat(kt, 0.5), quantileFloat(gs, 0.5)
	for _, i := range open {
		s := &steps[i]
		switch {
		case training:
			s.Phase, s.PhaseSource = PhaseUnknown, "inferred: training trace (backward or optimizer kernels)"
		case len(open) < 3 || medK == 0:
			s.Phase, s.PhaseSource = PhaseUnknown, "inferred: too few steps to compare"
		case s.KernelUS >= 3*medK && gemmShare(s) >= medG:
			s.Phase, s.PhaseSource = PhasePrefill, fmt.Sprintf("inferred: kernel time %.1fx the median step", s.KernelUS/medK)
		default:
			s.Phase, s.PhaseSource = PhaseDecode, fmt.Sprintf("inferred: kernel time %.1fx the median step", s.KernelUS/medK)
		}
	}
}

func gemmShare(s *Step) float64 {
	if s.KernelUS == 0 {
		return 0
	}
	return (s.Buckets[GEMM].US + s.Buckets[MarlinGEMM].US) / s.KernelUS
}
