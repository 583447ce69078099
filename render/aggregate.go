package render

import (
	"fmt"

	"kinetoscope/analyze"
)

// aggregate is one phase averaged over the ranks that have it: what the
// breakdown chart draws.
type aggregate struct {
	Phase          string
	Ranks          int
	MinSteps       int // steps per rank, the fewest and the most
	MaxSteps       int
	KernelPerStep  float64 // mean over ranks, us
	SpanPerStep    float64 // mean over ranks, us
	Rows           []bucketRow
	CommPerStepUS  float64
	GroupsPerStep  []groupTotal // us per step
	FirstRankIndex int          // index into Report.Ranks of a rank that has the phase
}

// stepsText says how many steps per rank, e.g. "32 decode steps" or
// "31-33 decode steps".
func (a *aggregate) stepsText() string {
	if a.MinSteps == a.MaxSteps {
		return plural(a.MaxSteps, stepName(a.Phase))
	}
	return fmt.Sprintf("%d-%d %ss", a.MinSteps, a.MaxSteps, stepName(a.Phase))
}

// ranksText says over which ranks, e.g. "rank 0" or "mean of 8 ranks".
func (a *aggregate) ranksText(r *analyze.Report) string {
	if a.Ranks == 1 {
		return "rank " + rankID(r.Ranks[a.FirstRankIndex].Rank)
	}
	return fmt.Sprintf("mean of %d ranks", a.Ranks)
}

// aggregatePhase averages the shown phase (decode when the first rank has
// decode steps) over every rank that has it.
func aggregatePhase(r *analyze.Report) aggregate {
	a := aggregate{FirstRankIndex: -1}
	if len(r.Ranks) == 0 {
		return a
	}
	a.Phase = rankPhase(&r.Ranks[0]).Name
	sum := map[analyze.BucketID]analyze.BucketShare{}
	for i := range r.Ranks {
		p, ok := phaseNamed(&r.Ranks[i], a.Phase)
		if !ok {
			continue
		}
		if a.FirstRankIndex < 0 {
			a.FirstRankIndex, a.MinSteps = i, p.Steps
		}
		a.Ranks++
		a.MinSteps, a.MaxSteps = min(a.MinSteps, p.Steps), max(a.MaxSteps, p.Steps)
		a.KernelPerStep += p.KernelPerStepUS
		a.SpanPerStep += p.SpanMeanUS
		for id, b := range p.Buckets {
			s := sum[id]
			s.USPerStep += b.USPerStep
			s.CallsPerStep += b.CallsPerStep
			s.US += b.US
			s.Count += b.Count
			sum[id] = s
		}
	}
	n := float64(max(a.Ranks, 1))
	a.KernelPerStep /= n
	a.SpanPerStep /= n
	p := analyze.PhaseSummary{Buckets: map[analyze.BucketID]analyze.BucketShare{}}
	for id, s := range sum {
		s.USPerStep /= n
		s.CallsPerStep /= n
		s.ShareOfKernel = ratioPct(s.USPerStep, a.KernelPerStep)
		s.ShareOfSpan = ratioPct(s.USPerStep, a.SpanPerStep)
		p.Buckets[id] = s
	}
	a.Rows = sortedBuckets(r.Buckets, p)
	for _, row := range a.Rows {
		if row.Bucket.Group == analyze.GroupCommunication {
			a.CommPerStepUS += row.Share.USPerStep
		}
	}
	a.GroupsPerStep = groupTotals(perStepRows(a.Rows))
	return a
}

// perStepRows returns rows whose US is the per-step time, for groupTotals.
func perStepRows(rows []bucketRow) []bucketRow {
	out := make([]bucketRow, len(rows))
	for i, r := range rows {
		out[i] = r
		out[i].Share.US = r.Share.USPerStep
	}
	return out
}
