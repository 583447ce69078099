package analyze

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"kinetoscope/ingest"
)

// Thresholds of the headline's checks.
const (
	// divergeBusyRatio and divergeWaitPoints: ranks diverge when their GPU
	// busy shares are this factor apart, or their wait shares this many
	// percentage points.
	divergeBusyRatio  = 1.5
	divergeWaitPoints = 20.0
	// outlierSpanRatio: a step spanning this multiple of its phase's median
	// span is an outlier; outlierBusyShare: so is one whose GPU is busy
	// less than this percent of its span.
	outlierSpanRatio = 5.0
	outlierBusyShare = 5.0
	// minPhaseKernelShare: decode steps holding less than this percent of
	// the trace's kernel time are not the trace's decode work.
	minPhaseKernelShare = 1.0
)

// headlinePhase returns the phase the headline describes: decode when any
// rank has decode steps, else prefill, else mixed, else every step with
// GPU work ("all").
func headlinePhase(ranks []Rank) (string, func(*Rank) PhaseSummary) {
	pick := []struct {
		name string
		get  func(*Rank) PhaseSummary
	}{
		{PhaseDecode, func(r *Rank) PhaseSummary { return r.Decode }},
		{PhasePrefill, func(r *Rank) PhaseSummary { return derefPhase(r.Prefill) }},
		{PhaseMixed, func(r *Rank) PhaseSummary { return derefPhase(r.Mixed) }},
	}
	for _, p := range pick {
		for i := range ranks {
			if p.get(&ranks[i]).Steps > 0 {
				return p.name, p.get
			}
		}
	}
	return "all", func(r *Rank) PhaseSummary { return Aggregate(r.Steps, isPhase("all")) }
}

func derefPhase(p *PhaseSummary) PhaseSummary {
	if p == nil {
		return PhaseSummary{}
	}
	return *p
}

// HasWork says whether the step ran any GPU work: empty steps are kept out
// of every phase's statistics, "all steps" included.
func (s *Step) HasWork() bool { return s.Kernels > 0 }

// inPhase says whether step s belongs to the headline's phase.
func inPhase(phase string, s *Step) bool {
	if phase == "all" {
		return s.HasWork() && !s.Truncated
	}
	return s.Phase == phase && !s.Truncated
}

// headline picks the first finding from the headline phase of all ranks:
// the step's span and busy share, and the bucket with the most kernel
// time, or the largest communication bucket when communication as a whole
// takes more than that bucket.
func headline(ranks []Rank) *Headline {
	phase, get := headlinePhase(ranks)
	sum, nr := sumPhases(ranks, get)
	if nr == 0 || sum.KernelUS == 0 {
		return nil
	}
	best := headlineBucket(sum.Buckets)
	bk, _ := BucketByID(best)
	x := sum.Buckets[best]
	h := &Headline{Bucket: best, Label: bk.Label, ShareOfKernel: pctOf(x.US, sum.KernelUS),
		USPerStep: x.USPerStep / float64(nr), CallsPerStep: x.CallsPerStep / float64(nr),
		Steps: int(float64(sum.Steps) / float64(nr)), Ranks: nr, Phase: phase}
	var spans []float64
	var busy, span float64
	for i := range ranks {
		for j := range ranks[i].Steps {
			if s := &ranks[i].Steps[j]; inPhase(phase, s) {
				spans = append(spans, s.SpanUS)
				busy += s.BusyUS
				span += s.SpanUS
			}
		}
	}
	if len(spans) > 0 {
		h.SpanMeanUS = span / float64(len(spans))
		h.SpanP50US = quantileFloat(spans, 0.5)
	}
	h.BusyShare = pctOf(busy, span)
	h.Outlier = spanOutlier(ranks, phase, h.SpanP50US)
	return h
}

// spanOutlier returns the phase's step whose span is most inflated: far
// above the median span (with three steps or more to compare), or mostly
// idle. nil when no step is.
func spanOutlier(ranks []Rank, phase string, median float64) *StepOutlier {
	var out *StepOutlier
	n := 0
	for i := range ranks {
		for j := range ranks[i].Steps {
			if inPhase(phase, &ranks[i].Steps[j]) {
				n++
			}
		}
	}
	for i := range ranks {
		for j := range ranks[i].Steps {
			s := &ranks[i].Steps[j]
			if !inPhase(phase, s) || s.SpanUS == 0 {
				continue
			}
			busy := pctOf(s.BusyUS, s.SpanUS)
			far := n >= 3 && median > 0 && s.SpanUS >= outlierSpanRatio*median
			idle := busy < outlierBusyShare
			if (far || idle) && (out == nil || s.SpanUS > out.SpanUS) {
				out = &StepOutlier{Rank: ranks[i].Rank, Step: s.Index, SpanUS: s.SpanUS, BusyShare: busy, MedianSpanUS: median}
			}
		}
	}
	return out
}

// sumPhases adds up, over the ranks, the phase get picks: steps, kernel
// time, and per bucket the time and the per-step means. It returns the sum
// and the number of ranks with steps in that phase.
func sumPhases(ranks []Rank, get func(*Rank) PhaseSummary) (PhaseSummary, int) {
	sum := PhaseSummary{Buckets: make(map[BucketID]BucketShare)}
	nr := 0
	for i := range ranks {
		ph := get(&ranks[i])
		if ph.Steps == 0 {
			continue
		}
		nr++
		sum.Steps += ph.Steps
		sum.KernelUS += ph.KernelUS
		for id, b := range ph.Buckets {
			x := sum.Buckets[id]
			x.US += b.US
			x.USPerStep += b.USPerStep
			x.CallsPerStep += b.CallsPerStep
			sum.Buckets[id] = x
		}
	}
	return sum, nr
}

// headlineBucket returns the bucket with the most time, or the largest
// communication bucket when communication as a whole takes more than that
// bucket. Ties go to the bucket first in display order.
func headlineBucket(buckets map[BucketID]BucketShare) BucketID {
	best, bestComm, comm := BucketID(""), BucketID(""), 0.0
	for _, b := range Buckets() {
		x := buckets[b.ID]
		if best == "" || x.US > buckets[best].US {
			best = b.ID
		}
		if b.Group == GroupCommunication {
			comm += x.US
			if bestComm == "" || x.US > buckets[bestComm].US {
				bestComm = b.ID
			}
		}
	}
	if comm > buckets[best].US && buckets[bestComm].US > 0 {
		return bestComm
	}
	return best
}

// finishHeadline completes r.Headline once the ranks are aligned: the
// transfer/wait split, the per-rank figures when the ranks diverge, and the
// checks of the step split.
func finishHeadline(r *Report, traces []*ingest.Trace) {
	h := r.Headline
	if h == nil {
		return
	}
	h.Comm = headlineComm(r)
	_, get := headlinePhase(r.Ranks)
	var per []HeadlineRank
	for i := range r.Ranks {
		ph := get(&r.Ranks[i])
		if ph.Steps == 0 {
			continue
		}
		hr := HeadlineRank{Rank: r.Ranks[i].Rank, SpanMeanUS: ph.SpanMeanUS, BusyShare: pctOf(ph.BusyUS, ph.SpanUS)}
		if ph.Comm != nil {
			hr.WaitShare = ph.Comm.WaitShare
		}
		per = append(per, hr)
	}
	if diverge(per) {
		h.PerRank = per
	}
	h.Account = headlineAccount(r.Ranks, get)
	if problem := stepProblem(r, get); problem != "" {
		h.Problem, h.Fix = problem, stepFix(traces)
	}
}

// diverge says whether the ranks' figures are too far apart for a mean.
func diverge(per []HeadlineRank) bool {
	if len(per) < 2 {
		return false
	}
	lo, hi := per[0], per[0]
	wlo, whi := per[0].WaitShare, per[0].WaitShare
	for _, p := range per[1:] {
		if p.BusyShare < lo.BusyShare {
			lo = p
		}
		if p.BusyShare > hi.BusyShare {
			hi = p
		}
		wlo, whi = min(wlo, p.WaitShare), max(whi, p.WaitShare)
	}
	return (lo.BusyShare > 0 && hi.BusyShare >= divergeBusyRatio*lo.BusyShare) || whi-wlo >= divergeWaitPoints
}

// stepProblem returns why the steps of r look wrong, or "": no step marks
// and no repetition; communication kernels in the trace but none in the
// decode steps; decode steps holding almost none of the GPU time; ranks
// that disagree on the number of steps.
func stepProblem(r *Report, get func(*Rank) PhaseSummary) string {
	var counts []string
	nsteps := -1
	disagree := false
	var traceComm, phaseComm int
	var traceKernel, phaseKernel float64
	for i := range r.Ranks {
		rk := &r.Ranks[i]
		if rk.StepSource == SourceInferred && len(rk.Steps) == 1 && rk.Steps[0].Name == wholeTrace {
			return fmt.Sprintf("rank %s has no step marks, and its kernels do not repeat a step's sequence", rankName(rk.Rank))
		}
		if rk.StepSource == SourceInferred {
			if w := periodicPhases(rk.Steps); w != "" {
				return fmt.Sprintf("on rank %s %s", rankName(rk.Rank), w)
			}
		}
		n := 0
		for j := range rk.Steps {
			if rk.Steps[j].HasWork() {
				n++
			}
		}
		counts = append(counts, fmt.Sprintf("rank %s: %d", rankName(rk.Rank), n))
		disagree = disagree || (nsteps >= 0 && n != nsteps)
		nsteps = n
		ph := get(rk)
		traceComm += rk.TraceCommKernels
		traceKernel += rk.TraceKernelUS
		phaseKernel += ph.KernelUS
		for id, b := range ph.Buckets {
			if bk, ok := BucketByID(id); ok && bk.Group == GroupCommunication {
				phaseComm += b.Count
			}
		}
	}
	phase := r.Headline.Phase
	switch {
	case disagree:
		return "the ranks disagree on the number of steps with GPU work (" + strings.Join(counts, ", ") + ")"
	case phase == PhaseDecode && traceComm > 0 && phaseComm == 0:
		return fmt.Sprintf("the trace has %d communication kernels but its decode steps have none", traceComm)
	case phase == PhaseDecode && traceKernel > 0 && pctOf(phaseKernel, traceKernel) < minPhaseKernelShare:
		return fmt.Sprintf("the decode steps hold only %.2f%% of the trace's GPU kernel time", pctOf(phaseKernel, traceKernel))
	}
	return ""
}

func rankName(r int) string {
	if r < 0 {
		return "?"
	}
	return fmt.Sprint(r)
}

// reNotStep names CPU annotations that never mark steps.
var reNotStep = regexp.MustCompile(`^(?:nccl:|gloo:|gpu_model_runner: |## )`)

// stepFix names the flag that fixes a wrong step split: --step-regex with
// the CPU annotation that repeats most often, when there is one.
func stepFix(traces []*ingest.Trace) string {
	count := make(map[string]int)
	for _, t := range traces {
		for _, a := range t.Annotations.All() {
			if !a.GPU {
				count[t.Name(a.Name)]++
			}
		}
	}
	var names []string
	for n, c := range count {
		if c >= 2 && !reNotStep.MatchString(n) {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if count[names[i]] != count[names[j]] {
			return count[names[i]] > count[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) == 0 {
		return "mark the steps: --step-regex REGEX names the CPU annotation that starts each step (profile with record_function step annotations, or with_stack=True for vLLM's execute_model)"
	}
	return fmt.Sprintf("name the annotation that starts each step with --step-regex, e.g. --step-regex '^%s$' (%d occurrences)",
		regexp.QuoteMeta(names[0]), count[names[0]])
}

// headlineComm averages the transfer/wait split of the headline's phase
// over the ranks that have one; nil when collectives were not aligned.
func headlineComm(r *Report) *HeadlineComm {
	_, get := headlinePhase(r.Ranks)
	var hc HeadlineComm
	n := 0
	for i := range r.Ranks {
		d := get(&r.Ranks[i])
		if d.Comm == nil || d.Steps == 0 {
			continue
		}
		n++
		hc.TransferUSPerStep += d.Comm.TransferUS / float64(d.Steps)
		hc.WaitUSPerStep += d.Comm.WaitUS / float64(d.Steps)
		hc.TransferShareNetOfWait += d.Comm.TransferShareNetOfWait
		hc.WaitShare += d.Comm.WaitShare
	}
	if n == 0 {
		return nil
	}
	f := float64(n)
	hc.TransferUSPerStep /= f
	hc.WaitUSPerStep /= f
	hc.TransferShareNetOfWait /= f
	hc.WaitShare /= f
	hc.Straggler = -1
	if c := r.Collectives; c != nil && len(c.Straggler) > 0 {
		hc.Straggler = c.Straggler[0].Rank
	}
	return &hc
}
