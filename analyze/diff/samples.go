package diff

import (
	"fmt"
	"slices"
	"strconv"

	"kinetoscope/analyze"
)

// sample is one step's figures: one rank's step, or with pooled ranks the
// mean over ranks of their k-th step of the phase.
type sample struct {
	span, busy, kernel, idle float64
	kernels, graphLaunches   float64
	transfer, wait, commUS   float64
	hasComm                  bool
	bucketUS, bucketCalls    map[analyze.BucketID]float64
	// parts is the step-time account (analyze.Account.Parts, in order)
	// and boundary its step boundary; parts is nil when a step has no
	// account.
	parts    []float64
	boundary float64
}

// side is one run reduced to what Compare needs.
type side struct {
	report  *analyze.Report
	ranks   []*analyze.Rank // the selected ranks
	samples []sample
}

// selectRanks returns the ranks compared: all, or the one numbered rank.
func selectRanks(r *analyze.Report, rank *int) ([]*analyze.Rank, error) {
	var out []*analyze.Rank
	for i := range r.Ranks {
		if rank == nil || r.Ranks[i].Rank == *rank {
			out = append(out, &r.Ranks[i])
		}
	}
	if len(out) == 0 && rank != nil {
		return nil, fmt.Errorf("%s: no rank %d (ranks: %s)", r.Source, *rank, rankList(r))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no ranks analysed", r.Source)
	}
	return out, nil
}

// rankList names the ranks of a report, e.g. "0, 1, 2".
func rankList(r *analyze.Report) string {
	s := ""
	for i, rk := range r.Ranks {
		if i > 0 {
			s += ", "
		}
		s += strconv.Itoa(rk.Rank)
	}
	return s
}

// phaseSteps returns the steps of a rank in the phase; "all" takes every
// step with GPU work; a step cut off by the end of the profile is in none
// (analyze.InPhase).
func phaseSteps(rk *analyze.Rank, phase string) []*analyze.Step {
	var out []*analyze.Step
	for i := range rk.Steps {
		if analyze.InPhase(phase, &rk.Steps[i]) {
			out = append(out, &rk.Steps[i])
		}
	}
	return out
}

// countPhase counts the steps of a phase over ranks.
func countPhase(ranks []*analyze.Rank, phase string) int {
	n := 0
	for _, rk := range ranks {
		n += len(phaseSteps(rk, phase))
	}
	return n
}

// phasesPresent lists the step phases found on any rank, sorted.
func phasesPresent(r *analyze.Report) []string {
	var ps []string
	for _, rk := range r.Ranks {
		for _, st := range rk.Steps {
			if !slices.Contains(ps, st.Phase) {
				ps = append(ps, st.Phase)
			}
		}
	}
	slices.Sort(ps)
	return ps
}

// buildSamples pools the ranks' steps of the phase by position: sample k is
// the mean over the ranks that have a k-th step.
func buildSamples(ranks []*analyze.Rank, phase string) []sample {
	var per [][]*analyze.Step
	n := 0
	for _, rk := range ranks {
		st := phaseSteps(rk, phase)
		per = append(per, st)
		n = max(n, len(st))
	}
	out := make([]sample, n)
	for k := range out {
		var steps []*analyze.Step
		for _, st := range per {
			if k < len(st) {
				steps = append(steps, st[k])
			}
		}
		out[k] = meanSample(steps)
	}
	return out
}

// meanSample averages steps into one sample.
func meanSample(steps []*analyze.Step) sample {
	s := sample{
		bucketUS:    map[analyze.BucketID]float64{},
		bucketCalls: map[analyze.BucketID]float64{},
	}
	w := 1 / float64(len(steps))
	s.parts, s.boundary = meanParts(steps)
	for _, st := range steps {
		s.span += w * st.SpanUS
		s.busy += w * st.BusyUS
		s.kernel += w * st.KernelUS
		s.idle += w * st.IdleUS
		s.kernels += w * float64(st.Kernels)
		s.graphLaunches += w * float64(st.GraphLaunches)
		for id, b := range st.Buckets {
			s.bucketUS[id] += w * b.US
			s.bucketCalls[id] += w * float64(b.Count)
		}
		if st.Comm != nil && st.Comm.TransferUS+st.Comm.WaitUS > 0 {
			s.hasComm = true
			s.transfer += w * st.Comm.TransferUS
			s.wait += w * st.Comm.WaitUS
			s.commUS += w * st.Comm.KernelUS
		}
	}
	return s
}

// field extracts one figure from every sample.
func field(ss []sample, f func(*sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i := range ss {
		out[i] = f(&ss[i])
	}
	return out
}

// meanOf is the mean of one figure over the samples.
func meanOf(ss []sample, f func(*sample) float64) float64 {
	return mean(field(ss, f))
}
