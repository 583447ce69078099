package crossrank

import (
	"fmt"
	"sort"
)

// plan is how one sequence is matched: which traces take part, which
// member ranks have no trace, and each participant's pairing with the
// reference (the first participant, the lowest rank).
type plan struct {
	seq     *sequence
	parts   []int // trace indices, by rank
	missing []int // member ranks without a trace
	pairs   []pairing
	// unmatched counts, by trace, the collectives left unmatched.
	unmatched []int
}

// matcher runs the matching of one Align call.
type matcher struct {
	in     *input
	opt    Options
	plans  []*plan
	clocks map[[2]int]*pairClock // by (reference trace, trace)
	late   map[int]*Straggler    // by trace index
}

func newMatcher(in *input, opt Options) *matcher {
	m := &matcher{in: in, opt: opt, clocks: map[[2]int]*pairClock{}, late: map[int]*Straggler{}}
	byRank := make(map[int]int, len(in.ranks))
	for i, r := range in.ranks {
		byRank[r] = i
	}
	for _, s := range in.seqs {
		m.plans = append(m.plans, m.newPlan(s, byRank))
	}
	return m
}

// newPlan finds the participants of s: its group's members that have a
// trace; every trace when the members are unknown.
func (m *matcher) newPlan(s *sequence, byRank map[int]int) *plan {
	p := &plan{seq: s}
	g := m.in.groups[s.group]
	if g.members == nil {
		for i := range s.items {
			if s.group == 0 || len(s.items[i]) > 0 {
				p.parts = append(p.parts, i)
			}
		}
	} else {
		for _, r := range g.members {
			if i, ok := byRank[r]; ok {
				p.parts = append(p.parts, i)
			} else {
				p.missing = append(p.missing, r)
			}
		}
	}
	sort.Slice(p.parts, func(x, y int) bool { return m.in.ranks[p.parts[x]] < m.in.ranks[p.parts[y]] })
	return p
}

// run matches every sequence and fills a.
func (m *matcher) run(a *Alignment) {
	m.pairAll()
	offsets(m.in, m.clocks, a)
	more := 0
	for _, p := range m.plans {
		m.split(p, a)
		switch msg := m.describe(p); {
		case msg == "":
		case len(a.Mismatches) < m.opt.MaxMismatches:
			a.Mismatches = append(a.Mismatches, msg)
		default:
			more++
		}
	}
	if more > 0 {
		a.Mismatches = append(a.Mismatches, fmt.Sprintf("and %d more sequences with unmatched collectives", more))
	}
	for _, r := range a.Ranks {
		r.sortSplits()
	}
	for _, s := range m.late {
		a.Stragglers = append(a.Stragglers, *s)
	}
	sortStragglers(a.Stragglers)
}

// pairAll pairs each participant with its sequence's reference, first on
// the hypothesis of a shared clock, then, for the rank pairs whose ends do
// not agree on one clock, with an estimated offset; last, for kinds whose
// kernels need not overlap, with a tolerance fitted to the pairs' ends.
func (m *matcher) pairAll() {
	tol := m.opt.EndToleranceNS
	for _, p := range m.plans {
		p.pairs = make([]pairing, len(p.parts))
		for k := 1; k < len(p.parts); k++ {
			a, b := p.seq.items[p.parts[0]], p.seq.items[p.parts[k]]
			p.pairs[k] = pairByEnd(a, b, endRule{tol: tol, overlap: mustOverlap(p.seq.kind)})
			c := m.clock(p.parts[0], p.parts[k])
			c.paired += p.pairs[k].n
			c.possible += min(len(a), len(b))
			c.zeroDiffs = p.pairs[k].endDiffs(a, b, c.zeroDiffs)
		}
	}
	for key, c := range m.clocks {
		m.decide(key, c)
	}
	for _, p := range m.plans {
		if !mustOverlap(p.seq.kind) {
			for k := 1; k < len(p.parts); k++ {
				m.tighten(p, k)
			}
		}
	}
}

// tighten pairs participant k of p again with a tolerance fitted to how
// well its paired ends agree: four times the 95th percentile of their
// deviation from the median, within [SharedClockNS, EndToleranceNS]. For
// kinds whose kernels need not overlap, the ends alone keep apart two
// collectives that each lost their partner, and they may end close.
func (m *matcher) tighten(p *plan, k int) {
	a, b := p.seq.items[p.parts[0]], p.seq.items[p.parts[k]]
	diffs := p.pairs[k].endDiffs(a, b, nil)
	if len(diffs) == 0 {
		return
	}
	mid := median(diffs)
	for i := range diffs {
		diffs[i] = abs64(diffs[i] - mid)
	}
	tol := min(max(4*nth(diffs, len(diffs)*95/100), m.opt.SharedClockNS), m.opt.EndToleranceNS)
	if tol < m.opt.EndToleranceNS {
		off := m.clocks[[2]int{p.parts[0], p.parts[k]}].off
		p.pairs[k] = pairByEnd(a, b, endRule{off: off, tol: tol})
	}
}

// decide chooses between a shared clock and an estimated offset for the
// rank pair key. Either must pair at least half of the pairable
// collectives. A shared clock also needs the median end difference within
// SharedClockNS of zero; it wins when it pairs at least 90% of the
// collectives, or no fewer than the estimate. (An offset of whole periods
// of a periodic run looks like a shared clock that pairs part of the run;
// pairing by order with a lost collective looks like an offset of one
// period that pairs all but a few: the thresholds keep both apart.) When
// neither will do, the pair's clocks stay unrelated and nothing is paired.
//
// Two traces whose times are relative to the same baseTimeNanoseconds come
// from one host and share its clock whatever their ends say: they are
// never given an offset, so that profiles of different windows are left
// unpaired rather than paired at a made-up offset.
func (m *matcher) decide(key [2]int, c *pairClock) {
	zeroOK := c.paired > 0 && 2*c.paired >= c.possible && abs64(median(c.zeroDiffs)) <= m.opt.SharedClockNS
	c.zeroDiffs = nil
	if base := m.in.bases[key[0]]; (zeroOK && c.paired == c.possible) || (base != 0 && base == m.in.bases[key[1]]) {
		c.shared = true
		return
	}
	zero := m.pairingsOf(key)
	estOK := m.estimate(key, c) && 2*c.estPaired >= c.possible
	switch {
	case zeroOK && (!estOK || 10*c.paired >= 9*c.possible || c.paired >= c.estPaired):
		c.shared, c.estimated, c.off = true, false, 0
		m.setPairings(key, zero)
	case !estOK:
		c.estimated, c.off = false, 0
		for i := range zero {
			zero[i] = newPairing(len(zero[i].toB))
		}
		m.setPairings(key, zero)
	}
}

// pairingsOf returns the current pairings of trace key[1] with reference
// key[0], one per plan where they are.
func (m *matcher) pairingsOf(key [2]int) []pairing {
	var out []pairing
	for _, p := range m.plans {
		if k := p.index(key[1]); k > 0 && p.parts[0] == key[0] {
			out = append(out, p.pairs[k])
		}
	}
	return out
}

// setPairings puts back pairings returned by pairingsOf.
func (m *matcher) setPairings(key [2]int, prs []pairing) {
	n := 0
	for _, p := range m.plans {
		if k := p.index(key[1]); k > 0 && p.parts[0] == key[0] {
			p.pairs[k] = prs[n]
			n++
		}
	}
}

func (m *matcher) clock(ref, r int) *pairClock {
	k := [2]int{ref, r}
	c, ok := m.clocks[k]
	if !ok {
		c = &pairClock{}
		m.clocks[k] = c
	}
	return c
}

// estimate estimates the clock offset of trace key[1] against key[0] from
// the collectives paired by order and signature (the median difference of
// their ends), then pairs them again by
// end with that offset. It says whether there was anything to estimate
// from.
func (m *matcher) estimate(key [2]int, c *pairClock) bool {
	var diffs []int64
	for _, p := range m.plans {
		if k := p.index(key[1]); k > 0 && p.parts[0] == key[0] {
			diffs = append(diffs, endDiffsByIndex(p.seq.items[key[0]], p.seq.items[key[1]], m.opt.LookAhead)...)
		}
	}
	if len(diffs) == 0 {
		return false
	}
	c.off = median(diffs)
	c.estimated, c.estPaired = true, 0
	for _, p := range m.plans {
		if k := p.index(key[1]); k > 0 && p.parts[0] == key[0] {
			r := endRule{off: c.off, tol: m.opt.EndToleranceNS, overlap: mustOverlap(p.seq.kind)}
			p.pairs[k] = pairByEnd(p.seq.items[key[0]], p.seq.items[key[1]], r)
			c.estPaired += p.pairs[k].n
		}
	}
	return true
}

// index returns the position of trace i among the participants, or -1.
func (p *plan) index(i int) int {
	for k, t := range p.parts {
		if t == i {
			return k
		}
	}
	return -1
}
