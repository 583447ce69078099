// Package fromtrace builds chart input that needs per-kernel data, which
// the analysis Report does not keep, from the ingested traces: the GPU
// events of one step for the step timeline. The events, their steps and
// their buckets come from analyze.StepEvents; this package only picks the
// step and converts.
package fromtrace

import (
	"fmt"

	"kinetoscope/analyze"
	"kinetoscope/ingest"
	"kinetoscope/render"
)

// Timeline returns the GPU events of step stepIndex on rank rank (-1: the
// first rank of r; stepIndex -1: the slowest step of the rank's main
// phase). r is the analysis of set with opt.
func Timeline(set *ingest.Set, r *analyze.Report, opt analyze.Options, rank, stepIndex int) (*render.TimelineInput, error) {
	rk, err := pickRank(r, rank)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	i, err := pickStep(rk, stepIndex)
	if err != nil {
		return nil, fmt.Errorf("timeline %s: %w", rk.File, err)
	}
	s := &rk.Steps[i]
	evs, err := analyze.StepEvents(set, opt, rk.Rank, s.Index)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("timeline %s: step %d has no GPU events", rk.File, s.Index)
	}
	return timelineInput(rk.Rank, s, r.Buckets, evs), nil
}

// timelineInput converts the events of step s into chart input.
func timelineInput(rank int, s *analyze.Step, buckets []analyze.Bucket, evs []analyze.StepEvent) *render.TimelineInput {
	in := &render.TimelineInput{Rank: rank, Step: s.Index, Phase: s.Phase, Buckets: buckets,
		Kernels: make([]render.TimelineKernel, len(evs))}
	first := evs[0].StartNS
	for i, ev := range evs {
		in.Kernels[i] = render.TimelineKernel{Stream: int(ev.Stream), StartUS: float64(ev.StartNS) / 1000,
			DurUS: float64(ev.DurNS) / 1000, Bucket: ev.Bucket, Name: ev.Name}
		first = min(first, ev.StartNS)
	}
	in.StartUS = float64(first) / 1000
	return in
}

// pickRank returns the report rank numbered rank (-1: the first).
func pickRank(r *analyze.Report, rank int) (*analyze.Rank, error) {
	if r == nil || len(r.Ranks) == 0 {
		return nil, fmt.Errorf("no ranks")
	}
	for i := range r.Ranks {
		if rank < 0 || r.Ranks[i].Rank == rank {
			return &r.Ranks[i], nil
		}
	}
	return nil, fmt.Errorf("no rank %d", rank)
}

// pickStep returns the position of the step with index idx, or for -1 of
// the slowest step of the main phase (decode when there is any).
func pickStep(rk *analyze.Rank, idx int) (int, error) {
	if len(rk.Steps) == 0 {
		return 0, fmt.Errorf("no steps")
	}
	if idx >= 0 {
		for i, s := range rk.Steps {
			if s.Index == idx {
				return i, nil
			}
		}
		return 0, fmt.Errorf("no step %d (steps %d to %d)", idx, rk.Steps[0].Index, rk.Steps[len(rk.Steps)-1].Index)
	}
	phase := ""
	if rk.Decode.Steps > 0 {
		phase = "decode"
	}
	best := -1
	for i, s := range rk.Steps {
		if (phase == "" || s.Phase == phase) && (best < 0 || s.SpanUS > rk.Steps[best].SpanUS) {
			best = i
		}
	}
	return best, nil
}
