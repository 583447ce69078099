package crossrank

import (
	"fmt"
	"math"
	"slices"
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
	var msgs []string
	for _, p := range m.plans {
		m.split(p, a)
		if msg := m.describe(p); msg != "" {
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) > 0 {
		msgs = append(m.windowNotes(), msgs...)
	}
	more := max(len(msgs)-m.opt.MaxMismatches, 0)
	a.Mismatches = msgs[:len(msgs)-more]
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

// link is one participant of a plan, paired with the plan's reference.
type link struct {
	p *plan
	k int // participant index, > 0
}

func (l link) a() []item { return l.p.seq.items[l.p.parts[0]] }
func (l link) b() []item { return l.p.seq.items[l.p.parts[l.k]] }

// pairAll relates the clock of each participant to its reference's and
// then pairs every sequence by order and identity on that clock; for kinds
// whose kernels need not overlap, again with a tolerance fitted to the
// pairs' ends.
func (m *matcher) pairAll() {
	links := map[[2]int][]link{}
	var keys [][2]int
	for _, p := range m.plans {
		p.pairs = make([]pairing, len(p.parts))
		for k := 1; k < len(p.parts); k++ {
			key := [2]int{p.parts[0], p.parts[k]}
			if links[key] == nil {
				keys = append(keys, key)
			}
			links[key] = append(links[key], link{p, k})
		}
	}
	for _, key := range keys {
		c := m.clock(key[0], key[1])
		m.relate(key, c, links[key])
		for _, l := range links[key] {
			l.p.pairs[l.k] = m.pairLink(l, c, m.finalRule(l, c))
			if !mustOverlap(l.p.seq.kind) && c.related() {
				m.tighten(l, c)
			}
		}
	}
}

// finalRule is the rule a link is paired with once its clock is related:
// identity, ends within the end tolerance on the related clock and, for
// kinds whose kernels must overlap, running together. However long a rank
// waited, it ends with the others.
func (m *matcher) finalRule(l link, c *pairClock) endRule {
	return endRule{off: c.off, tol: m.opt.EndToleranceNS, overlap: mustOverlap(l.p.seq.kind)}
}

// pairLink pairs one link under rule r; nothing when the clocks are not
// related.
func (m *matcher) pairLink(l link, c *pairClock, r endRule) pairing {
	if !c.related() {
		return newPairing(len(l.a()), len(l.b()))
	}
	return pairSeq(l.a(), l.b(), m.in.windows[l.p.parts[0]], m.in.windows[l.p.parts[l.k]], r)
}

// tighten pairs link l again with a tolerance fitted to how well its
// paired ends agree: four times the 95th percentile of their deviation
// from the median, within [SharedClockNS, EndToleranceNS]. For kinds whose
// kernels need not overlap, the ends alone keep apart two collectives that
// each lost their partner, and they may end close.
func (m *matcher) tighten(l link, c *pairClock) {
	pr := &l.p.pairs[l.k]
	diffs := pr.endDiffs(l.a(), l.b(), nil)
	if len(diffs) == 0 {
		return
	}
	mid := median(diffs)
	for i := range diffs {
		diffs[i] = abs64(diffs[i] - mid)
	}
	tol := min(max(4*nth(diffs, len(diffs)*95/100), m.opt.SharedClockNS), m.opt.EndToleranceNS)
	if tol < m.opt.EndToleranceNS {
		*pr = m.pairLink(l, c, endRule{off: c.off, tol: tol})
	}
}

// fit is how well one clock offset pairs a rank pair's collectives, ends
// within the end tolerance.
type fit struct {
	off         int64
	n, possible int // pairs; pairs there could be inside the windows
	all         int // pairs there could be, windows aside
	// tight counts the pairs whose end difference is within SharedClockNS
	// of the median: at the true offset nearly all (the ranks of one
	// collective end within microseconds of each other), at an offset of
	// whole periods of a regular run only those where the timing repeats.
	tight       int
	unexplained int // items inside the other's window left unpaired
	endDiffs    []int64
}

// better says whether f pairs more collectives tightly than g; on a tie,
// whether it pairs more, then whether it leaves fewer unpaired inside the
// windows, then whether its offset is smaller.
func (f *fit) better(g *fit) bool {
	switch {
	case f.tight != g.tight:
		return f.tight > g.tight
	case f.n != g.n:
		return f.n > g.n
	case f.unexplained != g.unexplained:
		return f.unexplained < g.unexplained
	}
	return abs64(f.off) < abs64(g.off)
}

// score pairs links with offset off and the end tolerance.
func (m *matcher) score(key [2]int, links []link, off int64) *fit {
	f := &fit{off: off}
	for _, l := range links {
		r := endRule{off: off, tol: m.opt.EndToleranceNS, overlap: mustOverlap(l.p.seq.kind)}
		pr := pairSeq(l.a(), l.b(), m.in.windows[key[0]], m.in.windows[key[1]], r)
		f.n += pr.n
		f.possible += pr.possible()
		f.all += min(len(l.a()), len(l.b()))
		f.unexplained += pr.unexplained()
		f.endDiffs = pr.endDiffs(l.a(), l.b(), f.endDiffs)
	}
	f.tight = tightCount(f.endDiffs, m.opt.SharedClockNS)
	return f
}

// tightCount counts the diffs within tol of their median; it reorders
// diffs.
func tightCount(diffs []int64, tol int64) int {
	mid, n := median(diffs), 0
	for _, d := range diffs {
		if abs64(d-mid) <= tol {
			n++
		}
	}
	return n
}

// relate decides how the clock of trace key[1] relates to its reference's
// (key[0]): shared, an estimated offset, or unrelated.
//
// Two traces whose times are relative to the same baseTimeNanoseconds come
// from one host and share its clock whatever their collectives say: they
// are never given an offset, so that profiles of different windows are left
// unpaired rather than paired at a made-up offset. Otherwise a shared clock
// is taken when it pairs every collective, or when its median end
// difference is within SharedClockNS of zero, it pairs at least half of
// what it could inside the windows, and either 90% of all or no fewer than
// the best offset. (Windows that overlap in part fit a shared clock with a
// late start as well as an offset clock: the one that pairs more wins.) The
// candidate offsets come from sequence numbers and from pairing by order at
// shifts around the start and around where a shared clock puts it (see
// candidates); the one that pairs most wins, and must pair at least half of
// what it could. (An offset of whole periods of a periodic run pairs part
// of the run; the thresholds keep it from beating the true one.) When
// neither will do, the clocks stay unrelated and nothing is paired.
func (m *matcher) relate(key [2]int, c *pairClock, links []link) {
	if base := m.in.bases[key[0]]; base != 0 && base == m.in.bases[key[1]] {
		c.shared = true
		return
	}
	zero := m.score(key, links, 0)
	if zero.n > 0 && zero.n == zero.all {
		c.shared = true
		return
	}
	best := &fit{}
	for _, off := range m.shortlist(key, links, m.candidates(key, links)) {
		if f := m.score(key, links, off); f.better(best) {
			best = f
		}
	}
	zeroOK := zero.n > 0 && 2*zero.n >= zero.possible && abs64(median(zero.endDiffs)) <= m.opt.SharedClockNS
	estOK := best.n > 0 && 2*best.n >= best.possible
	switch {
	case zeroOK && (!estOK || 10*zero.n >= 9*zero.all || zero.n >= best.n):
		c.shared = true
	case estOK:
		c.estimated = true
		c.off = median(best.endDiffs)
	}
}

// candidates returns the clock offsets worth scoring for key: the median
// end difference of the collectives with equal sequence numbers, and of the
// collectives paired by order (a[i+s] with b[i], identities equal) for each
// shift s within LookAhead of 0 (both profiles start at one collective)
// and of where a shared clock puts b's first collective (the profiles
// started apart, the clocks about agree).
func (m *matcher) candidates(key [2]int, links []link) []int64 {
	var offs []int64
	var big link
	for _, l := range links {
		if d := seqDiffs(l.a(), l.b()); len(d) > 0 {
			offs = append(offs, median(d))
		}
		if big.p == nil || len(l.a())+len(l.b()) > len(big.a())+len(big.b()) {
			big = l
		}
	}
	a, b := big.a(), big.b()
	if len(a) == 0 || len(b) == 0 {
		return offs
	}
	look := m.opt.LookAhead
	s0 := sort.Search(len(a), func(i int) bool { return a[i].end >= b[0].end })
	s1 := sort.Search(len(b), func(j int) bool { return b[j].end >= a[0].end })
	seen := map[int]bool{}
	for _, centre := range []int{0, s0, -s1} {
		for s := centre - look; s <= centre+look; s++ {
			if seen[s] {
				continue
			}
			seen[s] = true
			if d := shiftDiffs(a, b, s, candidateSample); len(d) > 0 {
				offs = append(offs, median(d))
			}
		}
	}
	slices.Sort(offs)
	return slices.Compact(offs)
}

// shortlistSize is how many candidate offsets are scored on every
// collective, after all were scored on a sample.
const shortlistSize = 3

// shortlist returns the candidate offsets expected to pair the most,
// judged from a sample of each link (see sampleScore).
func (m *matcher) shortlist(key [2]int, links []link, offs []int64) []int64 {
	if len(offs) <= shortlistSize {
		return offs
	}
	type scored struct {
		off int64
		n   float64
	}
	all := make([]scored, len(offs))
	for c, off := range offs {
		all[c].off = off
		for _, l := range links {
			all[c].n += m.sampleScore(key, l, off)
		}
	}
	sort.SliceStable(all, func(x, y int) bool {
		if all[x].n != all[y].n {
			return all[x].n > all[y].n
		}
		return abs64(all[x].off) < abs64(all[y].off)
	})
	out := make([]int64, shortlistSize)
	for c := range out {
		out[c] = all[c].off
	}
	return out
}

// sampleSize is how many reference collectives of a link sampleScore
// pairs.
const sampleSize = 2048

// sampleScore estimates how many collectives of link l pair tightly (see
// fit.tight) at offset off: it pairs up to sampleSize reference
// collectives from the middle of those inside the other's window with the
// other rank's that end near them, and scales the tight pairs found to all
// that could pair inside the windows.
func (m *matcher) sampleScore(key [2]int, l link, off int64) float64 {
	a, b := l.a(), l.b()
	tol := m.opt.EndToleranceNS
	r := endRule{off: off, tol: tol, overlap: mustOverlap(l.p.seq.kind)}
	slack := tol
	if r.overlap {
		slack = 0
	}
	aLo, aHi := outside(a, m.in.windows[key[1]].moved(off), slack)
	bLo, bHi := outside(b, m.in.windows[key[0]].moved(-off), slack)
	possible := min(aHi-aLo, bHi-bLo)
	if possible == 0 {
		return 0
	}
	lo := max((aLo+aHi)/2-sampleSize/2, aLo)
	a = a[lo:min(lo+sampleSize, aHi)]
	first := sort.Search(len(b), func(j int) bool { return b[j].end+off >= a[0].end-tol })
	last := sort.Search(len(b), func(j int) bool { return b[j].end+off > a[len(a)-1].end+tol })
	every := window{start: math.MinInt64 / 4, end: math.MaxInt64 / 4}
	pr := pairSeq(a, b[first:last], every, every, r)
	tight := tightCount(pr.endDiffs(a, b[first:last], nil), m.opt.SharedClockNS)
	return float64(tight) * float64(possible) / float64(len(a))
}

// candidateSample bounds how many collectives pairing by order at one
// shift looks at to propose an offset.
const candidateSample = 256

// shiftDiffs returns a[i+s].end - b[i].end for the first n positions i
// where both exist and are compatible.
func shiftDiffs(a, b []item, s, n int) []int64 {
	var diffs []int64
	for i := max(0, -s); i < len(b) && i+s < len(a) && len(diffs) < n; i++ {
		if compatible(&a[i+s], &b[i]) {
			diffs = append(diffs, a[i+s].end-b[i].end)
		}
	}
	return diffs
}

// seqDiffs returns a's end minus b's for the compatible items with equal
// sequence numbers (NCCL's Seq counts the collectives of a process group
// alike on every rank).
func seqDiffs(a, b []item) []int64 {
	bySeq := map[int64]int{}
	for j := range b {
		if b[j].seq >= 0 {
			bySeq[b[j].seq] = j
		}
	}
	if len(bySeq) == 0 {
		return nil
	}
	var diffs []int64
	for i := range a {
		if j, ok := bySeq[a[i].seq]; ok && a[i].seq >= 0 && compatible(&a[i], &b[j]) {
			diffs = append(diffs, a[i].end-b[j].end)
		}
	}
	return diffs
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

// index returns the position of trace i among the participants, or -1.
func (p *plan) index(i int) int {
	for k, t := range p.parts {
		if t == i {
			return k
		}
	}
	return -1
}
