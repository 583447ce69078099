package diff

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"kinetoscope/analyze"
)

// Phases Options.Phase accepts besides the step phases themselves.
const (
	phaseDecode = analyze.PhaseDecode
	phaseAll    = "all"
)

// Phases returns the values Options.Phase accepts.
func Phases() []string {
	return []string{analyze.PhaseDecode, analyze.PhasePrefill, analyze.PhaseMixed, analyze.PhaseUnknown, phaseAll}
}

// compare implements Compare.
func compare(base, head *analyze.Report, opt Options) (*Diff, error) {
	if base == nil || head == nil {
		return nil, errors.New("diff: nil report")
	}
	opt = withDefaults(opt)
	if !slices.Contains(Phases(), opt.Phase) {
		return nil, fmt.Errorf("diff: unknown phase %q (want one of %v)", opt.Phase, Phases())
	}
	b, err := newSide(base, opt.Rank)
	if err != nil {
		return nil, fmt.Errorf("diff base: %w", err)
	}
	h, err := newSide(head, opt.Rank)
	if err != nil {
		return nil, fmt.Errorf("diff head: %w", err)
	}
	d := &Diff{Phase: opt.Phase, RankSel: rankSel(opt.Rank), Noise: method(opt)}
	if opt.Phase != phaseAll && (countPhase(b.ranks, opt.Phase) == 0 || countPhase(h.ranks, opt.Phase) == 0) {
		d.Warnings = append(d.Warnings, fmt.Sprintf("no %s steps in %s: comparing all steps", opt.Phase, missingSide(b, h, opt.Phase)))
		d.Phase = phaseAll
	}
	b.samples = buildSamples(b.ranks, d.Phase)
	h.samples = buildSamples(h.ranks, d.Phase)
	t := tester{resamples: opt.Resamples, seed: opt.Seed}
	d.Base, d.Head = describe(b, d.Phase), describe(h, d.Phase)
	d.Step = compareStep(t, b.samples, h.samples)
	d.Buckets, d.BucketOrder = compareBuckets(t, b.samples, h.samples)
	d.Kernels = compareKernels(b, h)
	if !d.Kernels.Complete {
		d.Warnings = append(d.Warnings, "kernel lists hold only the top kernels of each bucket: added/removed may miss small kernels")
	}
	if d.Phase != phaseDecode {
		d.Warnings = append(d.Warnings, "kernel figures cover the decode steps when a run has any, else all steps")
	}
	d.Comm = compareComm(b.samples, h.samples)
	d.Account = compareAccount(t, b.samples, h.samples)
	d.Base.Accounts, d.Head.Accounts = rankAccounts(b.ranks, d.Phase), rankAccounts(h.ranks, d.Phase)
	d.Bandwidth = compareBandwidth(base, head, d.Phase)
	d.Layers = compareLayers(t, b.ranks, h.ranks, d.Phase)
	d.CostModel = compareCostModels(b.ranks, h.ranks, d.Phase)
	d.LaunchDelay = compareLaunchDelay(b.ranks, h.ranks)
	d.Metadata = metadata(b, h)
	return d, nil
}

// withDefaults fills in the zero fields of opt.
func withDefaults(opt Options) Options {
	if opt.Phase == "" {
		opt.Phase = phaseDecode
	}
	if opt.Resamples <= 0 {
		opt.Resamples = defaultResamples
	}
	if opt.Seed == 0 {
		opt.Seed = defaultSeed
	}
	return opt
}

// method describes the noise test.
func method(opt Options) Method {
	return Method{
		Name:       "bootstrap CI of the difference of means",
		Resamples:  opt.Resamples,
		Confidence: confidence,
		Seed:       opt.Seed,
		FloorUS:    floorUS,
		FloorPct:   floorPct,
		MinSteps:   minSteps,
	}
}

// rankSel names the rank selection.
func rankSel(rank *int) string {
	if rank == nil {
		return "all"
	}
	return strconv.Itoa(*rank)
}

// newSide selects the ranks of one run.
func newSide(r *analyze.Report, rank *int) (*side, error) {
	ranks, err := selectRanks(r, rank)
	if err != nil {
		return nil, err
	}
	return &side{report: r, ranks: ranks}, nil
}

// missingSide names the run(s) without steps of the phase.
func missingSide(b, h *side, phase string) string {
	nb, nh := countPhase(b.ranks, phase) == 0, countPhase(h.ranks, phase) == 0
	switch {
	case nb && nh:
		return "base and head"
	case nb:
		return "base " + b.report.Source
	}
	return "head " + h.report.Source
}

// describe summarises one run.
func describe(s *side, phase string) Side {
	return Side{
		Path:        s.report.Source,
		Ranks:       len(s.ranks),
		DecodeSteps: countPhase(s.ranks, phaseDecode),
		Steps:       len(s.samples),
		Phases:      phasesPresent(s.report),
		Devices:     devices(s.ranks),
		WorldSize:   worldSize(s.ranks),
	}
}

// compareStep compares step span, busy, idle and counts per step.
func compareStep(t tester, b, h []sample) Step {
	span := func(s *sample) float64 { return s.span }
	bs, hs := field(b, span), field(h, span)
	st := Step{
		BaseUS: mean(bs), HeadUS: mean(hs),
		Test:      t.test(bs, hs),
		BaseP50US: percentile(bs, 50), HeadP50US: percentile(hs, 50),
		BaseP90US: percentile(bs, 90), HeadP90US: percentile(hs, 90),
	}
	st.DeltaUS = st.HeadUS - st.BaseUS
	st.DeltaPct = pct(st.DeltaUS, st.BaseUS)
	st.BaseBusyUS, st.HeadBusyUS = meanOf(b, busyOf), meanOf(h, busyOf)
	st.BaseIdleUS, st.HeadIdleUS = meanOf(b, idleOf), meanOf(h, idleOf)
	st.BaseKernelUS, st.HeadKernelUS = meanOf(b, kernelOf), meanOf(h, kernelOf)
	st.BaseKernels, st.HeadKernels = meanOf(b, kernelsOf), meanOf(h, kernelsOf)
	st.BaseGraphLaunches, st.HeadGraphLaunches = meanOf(b, graphOf), meanOf(h, graphOf)
	return st
}

func busyOf(s *sample) float64    { return s.busy }
func idleOf(s *sample) float64    { return s.idle }
func kernelOf(s *sample) float64  { return s.kernel }
func kernelsOf(s *sample) float64 { return s.kernels }
func graphOf(s *sample) float64   { return s.graphLaunches }

// compareBuckets compares every bucket with time or calls on either side and
// orders them by |delta_us|, ties in display order.
func compareBuckets(t tester, b, h []sample) (map[analyze.BucketID]BucketDiff, []analyze.BucketID) {
	out := map[analyze.BucketID]BucketDiff{}
	var order []analyze.BucketID
	var bs, hs [][]float64 // per bucket in order, the samples tested
	kb, kh := meanOf(b, kernelOf), meanOf(h, kernelOf)
	for _, bk := range analyze.Buckets() {
		usOf := func(s *sample) float64 { return s.bucketUS[bk.ID] }
		callsOf := func(s *sample) float64 { return s.bucketCalls[bk.ID] }
		bd := BucketDiff{
			Label:            bk.Label,
			BaseUSPerStep:    meanOf(b, usOf),
			HeadUSPerStep:    meanOf(h, usOf),
			BaseCallsPerStep: meanOf(b, callsOf),
			HeadCallsPerStep: meanOf(h, callsOf),
		}
		if bd.BaseUSPerStep == 0 && bd.HeadUSPerStep == 0 && bd.BaseCallsPerStep == 0 && bd.HeadCallsPerStep == 0 {
			continue
		}
		bd.DeltaUS = bd.HeadUSPerStep - bd.BaseUSPerStep
		bd.DeltaPct = pct(bd.DeltaUS, bd.BaseUSPerStep)
		bd.DeltaCallsPerStep = bd.HeadCallsPerStep - bd.BaseCallsPerStep
		bd.BaseShare, bd.HeadShare = pct(bd.BaseUSPerStep, kb), pct(bd.HeadUSPerStep, kh)
		bd.DeltaSharePts = bd.HeadShare - bd.BaseShare
		out[bk.ID] = bd
		order = append(order, bk.ID)
		bs, hs = append(bs, field(b, usOf)), append(hs, field(h, usOf))
	}
	for i, test := range t.testAll(bs, hs) {
		bd := out[order[i]]
		bd.Test = test
		out[order[i]] = bd
	}
	slices.SortStableFunc(order, func(x, y analyze.BucketID) int {
		return cmp.Compare(math.Abs(out[y].DeltaUS), math.Abs(out[x].DeltaUS))
	})
	return out, order
}

// compareKernels matches the two runs' kernels.
func compareKernels(b, h *side) Kernels {
	kb, cb := kernelTotals(b.ranks)
	kh, ch := kernelTotals(h.ranks)
	k := matchKernels(kb, kh)
	k.Complete = cb && ch
	return k
}

// compareComm compares transfer and wait per step when both runs have them.
func compareComm(b, h []sample) *CommDiff {
	has := func(ss []sample) bool {
		return slices.ContainsFunc(ss, func(s sample) bool { return s.hasComm })
	}
	if !has(b) || !has(h) {
		return nil
	}
	tr := func(s *sample) float64 { return s.transfer }
	wt := func(s *sample) float64 { return s.wait }
	cu := func(s *sample) float64 { return s.commUS }
	c := &CommDiff{
		BaseKernelUS: meanOf(b, cu), HeadKernelUS: meanOf(h, cu),
		BaseTransferUS: meanOf(b, tr), HeadTransferUS: meanOf(h, tr),
		BaseWaitUS: meanOf(b, wt), HeadWaitUS: meanOf(h, wt),
	}
	c.DeltaTransfer = c.HeadTransferUS - c.BaseTransferUS
	c.DeltaWait = c.HeadWaitUS - c.BaseWaitUS
	return c
}

// compareLaunchDelay compares launch delay; several ranks are pooled as the
// launch-count-weighted mean of their percentiles.
func compareLaunchDelay(b, h []*analyze.Rank) LaunchDelayDiff {
	var d LaunchDelayDiff
	d.BaseCount, d.BaseP50US, d.BaseP99US = pooledDelay(b)
	d.HeadCount, d.HeadP50US, d.HeadP99US = pooledDelay(h)
	d.DeltaP50US = d.HeadP50US - d.BaseP50US
	d.DeltaP99US = d.HeadP99US - d.BaseP99US
	return d
}

// pooledDelay is the launch count and count-weighted mean percentiles.
func pooledDelay(ranks []*analyze.Rank) (n int, p50, p99 float64) {
	for _, rk := range ranks {
		n += rk.LaunchDelay.Count
		p50 += float64(rk.LaunchDelay.Count) * rk.LaunchDelay.P50US
		p99 += float64(rk.LaunchDelay.Count) * rk.LaunchDelay.P99US
	}
	if n == 0 {
		return 0, 0, 0
	}
	return n, p50 / float64(n), p99 / float64(n)
}
