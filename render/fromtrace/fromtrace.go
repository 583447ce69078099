// Package fromtrace builds chart input that needs per-kernel data, which
// the analysis Report does not keep, from the ingested traces: the GPU
// events of one step for the step timeline. The events, their steps and
// their buckets come from analyze.StepEvents, the step choice and the
// conversion from render.
package fromtrace

import (
	"fmt"

	"kinetoscope/analyze"
	"kinetoscope/ingest"
	"kinetoscope/render"
)

// Timeline returns the GPU events of step stepIndex on rank rank (-1: the
// first rank of r; stepIndex -1: the slowest step of the rank's shown
// phase). r is the analysis of set with opt.
func Timeline(set *ingest.Set, r *analyze.Report, opt analyze.Options, rank, stepIndex int) (*render.TimelineInput, error) {
	rk, s, err := render.TimelineStep(r, rank, stepIndex)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	evs, err := analyze.StepEvents(set, opt, rk.Rank, s.Index)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	in, err := render.NewTimelineInput(rk.Rank, s, r.Buckets, evs)
	if err != nil {
		return nil, fmt.Errorf("timeline %s step %d: %w", rk.File, s.Index, err)
	}
	return in, nil
}
