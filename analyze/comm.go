package analyze

import (
	"kinetoscope/analyze/crossrank"
	"kinetoscope/ingest"
)

// alignPasses matches collectives across the ranks of a multi-rank run,
// traces, whose passes have cut their steps (it reads each event's bucket,
// and may run beside the passes that only read them). For a single-rank
// job it returns nil and no error.
func alignPasses(traces []*ingest.Trace, passes []*rankPass) (*crossrank.Alignment, error) {
	if len(traces) == 0 || (len(traces) == 1 && traces[0].WorldSize() <= 1) {
		return nil, nil
	}
	byTrace := make(map[*ingest.Trace]*rankPass, len(passes))
	for _, p := range passes {
		byTrace[p.t] = p
	}
	classify := func(t *ingest.Trace, i int, _ *ingest.GPUEvent) (string, bool) {
		p := byTrace[t]
		b := p.plainOf[i] // as assign found it, before the sampling phase moved it
		return string(p.tab.ids[b]), p.tab.isComm(b)
	}
	return crossrank.Align(traces, classify, crossrank.Options{})
}

// alignRanks fills, from the alignment a of alignPasses (err its error),
// the transfer/wait split of every step and phase, and
// Report.Collectives. For one trace of a multi-rank job it reports the
// collectives as unmatched, naming the missing ranks; for a single-rank job
// it does nothing. Steps get a split only when some collectives matched.
// It returns the alignment, nil when there is none.
func alignRanks(r *Report, passes []*rankPass, a *crossrank.Alignment, err error) *crossrank.Alignment {
	if err != nil {
		r.Warnings = append(r.Warnings, "cross-rank alignment: "+err.Error())
		return nil
	}
	if a == nil {
		return nil
	}
	if a.Matched > 0 {
		for i, rc := range a.Ranks {
			addComm(&r.Ranks[i], passes[i], rc)
		}
	}
	r.Collectives = collectivesSummary(a)
	r.MissingRanks = a.MissingRanks
	r.Warnings = append(r.Warnings, a.Warnings...)
	return a
}

// addComm sets Step.Comm and Phase.Comm of one rank from its split.
func addComm(rk *Rank, p *rankPass, rc *crossrank.RankComm) {
	comm := make([]Comm, len(rk.Steps))
	for i := range rk.Steps {
		for id, b := range rk.Steps[i].Buckets {
			if bk, _ := BucketByID(id); bk.Group == GroupCommunication {
				comm[i].KernelUS += b.US
			}
		}
	}
	for gi, s := range rc.All() {
		if st := p.stepOf[gi]; st >= 0 {
			comm[st].TransferUS += us(s.TransferNS)
			comm[st].WaitUS += us(s.WaitNS)
		}
	}
	for i := range rk.Steps {
		c := comm[i]
		finishComm(&c, rk.Steps[i].KernelUS)
		rk.Steps[i].Comm = &c
	}
	rk.Decode.Comm = phaseComm(rk.Steps, &rk.Decode, PhaseDecode)
	if rk.Mixed != nil {
		rk.Mixed.Comm = phaseComm(rk.Steps, rk.Mixed, PhaseMixed)
	}
	if rk.Prefill != nil {
		rk.Prefill.Comm = phaseComm(rk.Steps, rk.Prefill, PhasePrefill)
	}
}

// phaseComm sums the split over the steps of one phase.
func phaseComm(steps []Step, ph *PhaseSummary, phase string) *Comm {
	if ph.Steps == 0 {
		return nil
	}
	var c Comm
	for i := range steps {
		if s := &steps[i]; inPhase(phase, s) && s.Comm != nil {
			c.KernelUS += s.Comm.KernelUS
			c.TransferUS += s.Comm.TransferUS
			c.WaitUS += s.Comm.WaitUS
		}
	}
	finishComm(&c, ph.KernelUS)
	return &c
}

func finishComm(c *Comm, kernelUS float64) {
	c.TransferShareNetOfWait = pctOf(c.TransferUS, kernelUS-c.WaitUS)
	c.WaitShare = pctOf(c.WaitUS, kernelUS)
}

func collectivesSummary(a *crossrank.Alignment) *Collectives {
	c := &Collectives{Matched: a.Matched, Unmatched: a.Unmatched, Clock: a.Clock,
		Mismatches: a.Mismatches, Straggler: []Straggler{}}
	if a.Clock == crossrank.ClockEstimated {
		c.ClockOffsetsUS = make(map[int]float64, len(a.Ranks))
		for _, rc := range a.Ranks {
			c.ClockOffsetsUS[rc.Rank] = us(rc.OffsetNS)
		}
	}
	for _, s := range a.Stragglers {
		c.Straggler = append(c.Straggler, Straggler{Rank: s.Rank, LateCount: s.LateCount, LateUS: us(s.LateNS)})
	}
	return c
}
