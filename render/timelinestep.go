package render

import (
	"errors"
	"fmt"

	"kinetoscope/analyze"
)

// TimelineStep picks the step a timeline shows: on the rank numbered rank
// (or FirstRank), the step with index step, or for SlowestStep the slowest
// step of the rank's shown phase (the one the steps chart names).
func TimelineStep(r *analyze.Report, rank, step int) (*analyze.Rank, *analyze.Step, error) {
	rk, err := findRank(r, rank)
	if err != nil {
		return nil, nil, err
	}
	if len(rk.Steps) == 0 {
		return nil, nil, fmt.Errorf("rank %s has no steps", rankID(rk.Rank))
	}
	if step < 0 { // SlowestStep
		s, _ := slowestStep(rk)
		return rk, s, nil
	}
	for i := range rk.Steps {
		if rk.Steps[i].Index == step {
			return rk, &rk.Steps[i], nil
		}
	}
	return nil, nil, fmt.Errorf("rank %s: no step %d (steps %d to %d)", rankID(rk.Rank), step, rk.Steps[0].Index, rk.Steps[len(rk.Steps)-1].Index)
}

// NewTimelineInput converts the GPU events of step s on rank rank, as
// analyze.StepEvents gives them, into timeline input; buckets is
// Report.Buckets.
func NewTimelineInput(rank int, s *analyze.Step, buckets []analyze.Bucket, evs []analyze.StepEvent) (*TimelineInput, error) {
	if len(evs) == 0 {
		return nil, errors.New("the step has no GPU events")
	}
	in := &TimelineInput{Rank: rank, Step: s.Index, Phase: s.Phase, Buckets: buckets,
		Kernels: make([]TimelineKernel, len(evs))}
	first := evs[0].StartNS
	for i, ev := range evs {
		in.Kernels[i] = TimelineKernel{Stream: int(ev.Stream), StartUS: float64(ev.StartNS) / 1000,
			DurUS: float64(ev.DurNS) / 1000, Bucket: ev.Bucket, Name: ev.Name}
		first = min(first, ev.StartNS)
	}
	in.StartUS = float64(first) / 1000
	return in, nil
}

// slowestStep returns the step with the longest span in the rank's shown
// phase, and that phase; nil when the phase has no step.
func slowestStep(rk *analyze.Rank) (*analyze.Step, phaseView) {
	pv := rankPhase(rk)
	var slow *analyze.Step
	for i := range rk.Steps {
		s := &rk.Steps[i]
		if (pv.Name == "all" || s.Phase == pv.Name) && (slow == nil || s.SpanUS > slow.SpanUS) {
			slow = s
		}
	}
	return slow, pv
}
