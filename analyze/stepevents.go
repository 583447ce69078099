package analyze

import (
	"errors"
	"fmt"

	"kinetoscope/ingest"
)

// StepEvent is one GPU event of a step, classified as Analyze classified
// it (sampling phase included). Times are trace nanoseconds.
type StepEvent struct {
	Stream      int32 // CUDA/HIP stream
	Device      int16 // GPU index in the trace
	StartNS     int64
	DurNS       int64
	Bucket      BucketID
	Name        string
	Correlation int64 // ties the event to its CPU launch
}

// StepEvents returns the GPU events of step (Step.Index) on the trace of
// rank (Rank.Rank; the first such trace for -1, unknown) in trace order.
// The steps, the events' step assignment and their buckets come from the
// same pass as Analyze's with the same opt; opt.Rank is not used.
func StepEvents(set *ingest.Set, opt Options, rank, step int) ([]StepEvent, error) {
	if set == nil {
		return nil, errors.New("step events: no trace set")
	}
	t := traceOfRank(set, rank)
	if t == nil {
		return nil, fmt.Errorf("step events %s: no trace of rank %d", set.Path, rank)
	}
	cls, re, err := prepare(opt)
	if err != nil {
		return nil, err
	}
	p := stepPass(t, cls, re)
	if step < 0 || step >= len(p.steps) {
		return nil, fmt.Errorf("step events %s: no step %d (the trace has %d)", t.Path, step, len(p.steps))
	}
	return p.stepEvents(int32(step)), nil
}

// traceOfRank returns the first trace of set with rank rank, or nil.
func traceOfRank(set *ingest.Set, rank int) *ingest.Trace {
	for _, t := range set.Traces {
		if t.Rank == rank {
			return t
		}
	}
	return nil
}

// stepEvents lists the events the pass put in step s.
func (p *rankPass) stepEvents(s int32) []StepEvent {
	out := make([]StepEvent, 0, p.steps[s].events)
	for i, ev := range p.t.GPU.All() {
		if p.stepOf[i] != s {
			continue
		}
		out = append(out, StepEvent{Stream: ev.Stream, Device: ev.Device, StartNS: ev.Start, DurNS: ev.Dur,
			Bucket: p.tab.ids[p.bucketOf[i]], Name: p.t.Name(ev.Name), Correlation: ev.Correlation})
	}
	return out
}
