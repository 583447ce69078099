package analyze

import (
	"fmt"
	"slices"
	"strings"

	"kinetoscope/ingest"
)

// A trace without step marks is cut by its own repetition: every engine
// step runs some kernels exactly once (the embedding, the lm_head, the
// sampler's kernels) and ends with the sampled tokens copied to the host.
// The GPU events, in launch order, are searched for a cycle: a group of
// names that each occur c times, the i-th occurrence of every name before
// the (i+1)-th of any. Each cycle is one step; a step ends with the last
// event of its cycle. Idle gaps are not evidence: eager launch gaps and
// waits on another rank are as long as the gaps between steps.

// Limits of the search for a cycle.
const (
	minCycleNames  = 3    // names a cycle must hold
	minCycles      = 3    // cycles without a device-to-host copy in them
	maxCountsTried = 256  // distinct occurrence counts tried
	maxSeeds       = 16   // names tried as the first of a group, per count
	maxGroupNames  = 512  // names of one count considered for a group
	minCoverage    = 0.80 // share of the events the cycles must span
)

// wholeTrace names the one step of a trace that has no step marks and
// does not repeat.
const wholeTrace = "whole trace"

// launchSeq is a trace's GPU events in launch order: by the CPU time of
// their launch (their GPU start when the launch is not in the trace), then
// by GPU start (the kernels of one graph launch).
type launchSeq struct {
	order []int32 // GPU event indexes
	key   []int64 // launch time of order[i]
}

func newLaunchSeq(t *ingest.Trace, li *launchIndex) launchSeq {
	n := t.GPU.Len()
	type ev struct {
		i          int32
		key, start int64
	}
	evs := make([]ev, 0, n)
	for i, g := range t.GPU.All() {
		k := g.Start
		if j := li.find(g.Correlation); j >= 0 {
			k = t.Launches.At(int(j)).Start
		}
		evs = append(evs, ev{int32(i), k, g.Start})
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if c := cmpInt64(a.key, b.key); c != 0 {
			return c
		}
		return cmpInt64(a.start, b.start)
	})
	s := launchSeq{order: make([]int32, n), key: make([]int64, n)}
	for i, e := range evs {
		s.order[i], s.key[i] = e.i, e.key
	}
	return s
}

// cycleGroup is a set of names that occur once per cycle: lo[i] and hi[i]
// are the first and last positions (in launchSeq) of cycle i.
type cycleGroup struct {
	names  []ingest.StrID
	lo, hi []int32
}

// tryAdd adds name, at positions pos, to g when every occurrence i stays
// in cycle i.
func (g *cycleGroup) tryAdd(name ingest.StrID, pos []int32) bool {
	c := len(pos)
	for i := range c {
		lo, hi := min(g.lo[i], pos[i]), max(g.hi[i], pos[i])
		if (i > 0 && lo <= g.hi[i-1]) || (i+1 < c && hi >= g.lo[i+1]) {
			return false
		}
	}
	for i := range c {
		g.lo[i], g.hi[i] = min(g.lo[i], pos[i]), max(g.hi[i], pos[i])
	}
	g.names = append(g.names, name)
	return true
}

// growGroup builds the group that starts with seed from the candidates,
// in the order given.
func growGroup(seed ingest.StrID, cands []ingest.StrID, pos map[ingest.StrID][]int32) cycleGroup {
	p := pos[seed]
	g := cycleGroup{names: []ingest.StrID{seed}, lo: slices.Clone(p), hi: slices.Clone(p)}
	for _, n := range cands {
		if n != seed {
			g.tryAdd(n, pos[n])
		}
	}
	return g
}

// bestGroup returns the largest group among names (all of one count),
// each of seeds tried first; ok false when none holds minCycleNames names
// or spans minCoverage of n events.
func bestGroup(seeds, names []ingest.StrID, pos map[ingest.StrID][]int32, n int) (cycleGroup, bool) {
	var best cycleGroup
	for _, s := range seeds {
		g := growGroup(s, names, pos)
		if len(g.names) > len(best.names) {
			best = g
		}
	}
	c := len(best.lo)
	ok := len(best.names) >= minCycleNames && c > 0 &&
		float64(best.hi[c-1]-best.lo[0]+1) >= minCoverage*float64(n)
	return best, ok
}

// isDeviceToHost says whether ev is a device-to-host copy.
func isDeviceToHost(t *ingest.Trace, ev *ingest.GPUEvent) bool {
	return ev.Kind == ingest.KindMemcpy && strings.Contains(t.Name(ev.Name), "DtoH")
}

// inferSteps cuts t at the cycles of its repetition (see above). The marks
// are on CPU launch time; cutoff is the launch time from which events are
// past the last step (a step cut short by the end of the profile).
func inferSteps(t *ingest.Trace, li *launchIndex) (marks []stepMark, cutoff int64, evidence string) {
	n := t.GPU.Len()
	if n == 0 {
		return nil, 0, "no step marks and no GPU events"
	}
	seq := newLaunchSeq(t, li)
	pos := make(map[ingest.StrID][]int32)
	d2h := make(map[ingest.StrID]bool)
	for i, gi := range seq.order {
		ev := t.GPU.At(int(gi))
		pos[ev.Name] = append(pos[ev.Name], int32(i))
		if isDeviceToHost(t, ev) {
			d2h[ev.Name] = true
		}
	}
	byCount := make(map[int][]ingest.StrID)
	for name, p := range pos {
		if len(p) >= 2 {
			byCount[len(p)] = append(byCount[len(p)], name)
		}
	}
	for _, names := range byCount { // first occurrence first
		slices.SortFunc(names, func(a, b ingest.StrID) int { return int(pos[a][0] - pos[b][0]) })
	}
	g, withCopy, ok := findCycle(byCount, pos, d2h, n)
	if !ok {
		return []stepMark{{start: seq.key[0], name: wholeTrace}}, 1<<63 - 1,
			"no step marks, and no repeating kernel sequence found: the whole trace is one step"
	}
	c := len(g.lo)
	marks = make([]stepMark, c)
	marks[0] = stepMark{start: seq.key[0]}
	for i := 1; i < c; i++ {
		marks[i] = stepMark{start: seq.key[g.hi[i-1]] + 1}
	}
	for i := range marks {
		marks[i].name = fmt.Sprintf("inferred step %d", i)
	}
	last := g.hi[c-1]
	cutoff = seq.key[last] + 1
	evidence = fmt.Sprintf("no step marks; inferred from the trace's repetition: %d cycles in which %d kernels run exactly once (%s)",
		c, len(g.names), cycleNames(t, g.names, 3))
	if withCopy {
		evidence += ", each ending with a device-to-host copy"
	}
	if after := n - 1 - int(last); after > 0 {
		evidence += fmt.Sprintf("; %d GPU events after the last cycle are outside the steps", after)
	}
	return marks, cutoff, evidence
}

// findCycle looks for the step cycle: among the counts of the
// device-to-host copies, with a copy in the group (a step ends with its
// sampled tokens copied to the host), and among all counts of at least
// minCycles, fewest cycles first (a step holds many layer cycles). The
// longest period wins: a copy's cycle that nests whole inside the cycles
// of fewer repeats is a sync inside the step (a MoE router copying its
// expert counts to the host in every layer), not the step.
func findCycle(byCount map[int][]ingest.StrID, pos map[ingest.StrID][]int32, d2h map[ingest.StrID]bool, n int) (cycleGroup, bool, bool) {
	counts := make([]int, 0, len(byCount))
	for c := range byCount {
		counts = append(counts, c)
	}
	slices.Sort(counts)
	if len(counts) > maxCountsTried {
		counts = counts[:maxCountsTried]
	}
	plain, plainOK := plainCycle(counts, byCount, pos, n)
	copied, copyOK := copyCycle(counts, byCount, pos, d2h, n)
	switch {
	case copyOK && plainOK && len(plain.lo) < len(copied.lo) && len(copied.lo)%len(plain.lo) == 0:
		return plain, false, true
	case copyOK:
		return copied, true, true
	}
	return plain, false, plainOK
}

// copyCycle is the group of fewest cycles among the counts of the
// device-to-host copies that holds a copy.
func copyCycle(counts []int, byCount map[int][]ingest.StrID, pos map[ingest.StrID][]int32, d2h map[ingest.StrID]bool, n int) (cycleGroup, bool) {
	for _, c := range counts {
		var seeds []ingest.StrID
		for _, name := range byCount[c] {
			if d2h[name] {
				seeds = append(seeds, name)
			}
		}
		if len(seeds) == 0 {
			continue
		}
		if g, ok := bestGroup(limit(seeds, maxSeeds), limit(byCount[c], maxGroupNames), pos, n); ok {
			return g, true
		}
	}
	return cycleGroup{}, false
}

// plainCycle is the group of fewest cycles, at least minCycles, among all
// counts.
func plainCycle(counts []int, byCount map[int][]ingest.StrID, pos map[ingest.StrID][]int32, n int) (cycleGroup, bool) {
	for _, c := range counts {
		if c < minCycles {
			continue
		}
		names := limit(byCount[c], maxGroupNames)
		if g, ok := bestGroup(limit(names, maxSeeds), names, pos, n); ok {
			return g, true
		}
	}
	return cycleGroup{}, false
}

func limit[T any](s []T, n int) []T { return s[:min(len(s), n)] }

// cycleNames lists up to k of names, shortened.
func cycleNames(t *ingest.Trace, names []ingest.StrID, k int) string {
	var out []string
	for _, id := range limit(names, k) {
		s := t.Name(id)
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		out = append(out, s)
	}
	if len(names) > k {
		out = append(out, fmt.Sprintf("%d more", len(names)-k))
	}
	return strings.Join(out, ", ")
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

// trainingPattern names kernels that only training runs: backward passes
// and optimizers.
const trainingPattern = `(?i)backward|_bwd|bwd_|wgrad|dgrad|adam|sgd|optimizer|grad_input`

// trainingNames matches trainingPattern.
var trainingNames = mustNamePattern(trainingPattern)

// Thresholds of the kernel evidence for prefill: a step whose kernel time
// and GEMM time both reach these multiples of the median step's.
const (
	prefillKernelRatio = 1.3
	prefillGEMMRatio   = 1.3
)

// Thresholds of the shape evidence for prefill: a step that looks up this
// multiple of the median step's tokens, and at least minPrefillTokens.
const (
	prefillTokenRatio = 4
	minPrefillTokens  = 32
)

// inferPhases sets the phase of steps whose mark does not give one. A step
// with no GPU work is empty, whatever its mark says. Training traces stay
// unknown; otherwise, with three steps or more: when the trace recorded
// shapes (Step.Tokens from the embedding's input), a step that looks up
// far more tokens than the median step is prefill; else, a step whose
// compute time (kernel time less communication, which waits on other
// ranks) and GEMM time both stand well above the median step's is prefill.
// The others are decode.
func inferPhases(steps []Step, training bool) {
	var open []int
	for i := range steps {
		s := &steps[i]
		if s.Kernels == 0 {
			s.Phase, s.PhaseSource = PhaseEmpty, "no GPU work in the step"
			continue
		}
		if s.Phase == "" {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return
	}
	var kt, gt []float64
	for _, i := range open {
		kt = append(kt, computeUS(&steps[i]))
		gt = append(gt, gemmUS(&steps[i]))
	}
	medK, medG := quantileFloat(kt, 0.5), quantileFloat(gt, 0.5)
	medT, shapes := medianTokens(steps, open)
	for _, i := range open {
		s := &steps[i]
		kr, gr := computeUS(s)/medK, gemmUS(s)/max(medG, 1e-9)
		switch {
		case training:
			s.Phase, s.PhaseSource = PhaseUnknown, "inferred: training trace (backward or optimizer kernels)"
		case len(open) < 3 || medK == 0:
			s.Phase, s.PhaseSource = PhaseUnknown, "inferred: too few steps to compare"
		case shapes:
			tr := float64(s.Tokens) / medT
			s.Phase = PhaseDecode
			if tr >= prefillTokenRatio && s.Tokens >= minPrefillTokens {
				s.Phase = PhasePrefill
			}
			s.PhaseSource = fmt.Sprintf("inferred: %d tokens looked up by the embedding (record_shapes), %.1fx the median step's", s.Tokens, tr)
		case kr >= prefillKernelRatio && gr >= prefillGEMMRatio:
			s.Phase, s.PhaseSource = PhasePrefill, fmt.Sprintf("inferred: compute time %.1fx and GEMM time %.1fx the median step's", kr, gr)
		default:
			s.Phase, s.PhaseSource = PhaseDecode, fmt.Sprintf("inferred: compute time %.1fx and GEMM time %.1fx the median step's", kr, gr)
		}
	}
}

// computeUS is the step's kernel time less its communication kernels.
func computeUS(s *Step) float64 {
	c := s.KernelUS
	for id, b := range s.Buckets {
		if bk, ok := BucketByID(id); ok && bk.Group == GroupCommunication {
			c -= b.US
		}
	}
	return c
}

func gemmUS(s *Step) float64 {
	return s.Buckets[GEMM].US + s.Buckets[MarlinGEMM].US
}

// medianTokens returns the median Step.Tokens over the open steps, and
// whether every open step has tokens (the trace recorded shapes).
func medianTokens(steps []Step, open []int) (float64, bool) {
	var ts []float64
	for _, i := range open {
		if steps[i].Tokens <= 0 {
			return 0, false
		}
		ts = append(ts, float64(steps[i].Tokens))
	}
	return quantileFloat(ts, 0.5), len(ts) > 0
}

// minPeriodicBlocks is how many runs of prefill steps, past the first,
// recurring at one period make inferred steps suspect.
const minPeriodicBlocks = 3

// periodicPhases warns when inferred steps' phases alternate with a fixed
// period: runs of prefill steps starting every k steps (k >= 2), past the
// first run, at least minPeriodicBlocks times, with decode steps between.
// Engine steps do not do that; parts of a step do (its layers, cut at a
// sync inside each), the step's own kernels making every k-th part look
// heavier. "" when the phases do not.
func periodicPhases(steps []Step) string {
	var starts []int
	for i := range steps {
		if steps[i].Phase == PhasePrefill && (i == 0 || steps[i-1].Phase != PhasePrefill) {
			starts = append(starts, i)
		}
	}
	if len(starts) < minPeriodicBlocks+1 {
		return ""
	}
	rest := starts[1:]
	k := rest[1] - rest[0]
	for i := 2; i < len(rest); i++ {
		if rest[i]-rest[i-1] != k {
			return ""
		}
	}
	if k < 2 {
		return ""
	}
	return fmt.Sprintf("the inferred steps' phases alternate with a period of %d steps (prefill again at steps %d, %d, %d, ...): "+
		"they are likely parts of engine steps (cut at a sync inside each step), not steps; give the step marks with --step-regex",
		k, rest[0], rest[1], rest[2])
}
