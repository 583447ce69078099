package crossrank

import (
	"fmt"
	"strings"
)

// split turns the pairings of plan p into matched instances, records each
// rank's transfer and wait, counts the unmatched and the late arrivals.
func (m *matcher) split(p *plan, a *Alignment) {
	s := p.seq
	matched := make([][]bool, len(s.items))
	for i := range s.items {
		matched[i] = make([]bool, len(s.items[i]))
	}
	if m.splittable(p) {
		m.matchInstances(p, a, matched)
	}
	p.unmatched = make([]int, len(s.items))
	for i, its := range s.items {
		for k := range its {
			if !matched[i][k] {
				a.Ranks[i].addUnmatched(&its[k])
				p.unmatched[i]++
				a.Unmatched++
			}
		}
	}
}

// splittable says whether instances of p can be matched: every member rank
// has a trace, and there are at least two of them or the group is known to
// have one member.
func (m *matcher) splittable(p *plan) bool {
	if len(p.missing) > 0 || len(p.parts) == 0 {
		return false
	}
	return len(p.parts) > 1 || m.in.groups[p.seq.group].known
}

// matchInstances splits every reference collective that all participants
// paired.
func (m *matcher) matchInstances(p *plan, a *Alignment, matched [][]bool) {
	ref := p.parts[0]
	its := make([]*item, len(p.parts))
	starts := make([]int64, len(p.parts))
	offs := make([]int64, len(p.parts))
	for q := 1; q < len(p.parts); q++ {
		offs[q] = m.clocks[[2]int{ref, p.parts[q]}].off
	}
	for k := range p.seq.items[ref] {
		if !p.instance(k, its) {
			continue
		}
		firstEnd := its[0].end
		for q, it := range its {
			starts[q] = it.start + offs[q]
			firstEnd = min(firstEnd, it.end+offs[q])
		}
		arrival := m.recordLate(p, starts)
		// Transfer is the time every rank is in the collective, from the
		// last arrival to the first end; the rest of each kernel is wait.
		transfer := max(firstEnd-arrival, 0)
		for q, it := range its {
			a.Ranks[p.parts[q]].addMatched(it, Split{WaitNS: it.dur() - transfer, TransferNS: transfer}, a.Matched)
		}
		for q := range its {
			matched[p.parts[q]][p.itemIndex(q, k)] = true
		}
		a.Matched++
	}
}

// instance fills its with the items of reference collective k on every
// participant and says whether all have one.
func (p *plan) instance(k int, its []*item) bool {
	its[0] = &p.seq.items[p.parts[0]][k]
	for q := 1; q < len(p.parts); q++ {
		j := p.pairs[q].toB[k]
		if j < 0 {
			return false
		}
		its[q] = &p.seq.items[p.parts[q]][j]
	}
	return true
}

// itemIndex returns participant q's item index of reference collective k.
func (p *plan) itemIndex(q, k int) int {
	if q == 0 {
		return k
	}
	return int(p.pairs[q].toB[k])
}

// recordLate returns the arrival (the latest start) and credits the rank
// that arrived last, by how much it trailed the second-latest.
func (m *matcher) recordLate(p *plan, starts []int64) int64 {
	last, arrival, second := 0, starts[0], int64(0)
	for q := 1; q < len(starts); q++ {
		if starts[q] > arrival {
			last, arrival, second = q, starts[q], arrival
		} else if q == 1 || starts[q] > second {
			second = starts[q]
		}
	}
	if len(starts) < 2 || arrival == second {
		return arrival
	}
	i := p.parts[last]
	s, ok := m.late[i]
	if !ok {
		s = &Straggler{Rank: m.in.ranks[i]}
		m.late[i] = s
	}
	s.LateCount++
	s.LateNS += arrival - second
	return arrival
}

// describe says in words why collectives of p were left unmatched; "" when
// none were.
func (m *matcher) describe(p *plan) string {
	s := p.seq
	var counts, unmatched []string
	some := false
	for i, its := range s.items {
		if len(its) == 0 && p.index(i) < 0 {
			continue
		}
		n := p.unmatched[i]
		some = some || n > 0
		counts = append(counts, fmt.Sprintf("%d:%d", m.in.ranks[i], len(its)))
		unmatched = append(unmatched, fmt.Sprintf("%d:%d", m.in.ranks[i], n))
	}
	if !some {
		return ""
	}
	head := fmt.Sprintf("%s %s: collectives by rank %s, unmatched %s",
		m.in.groups[s.group].name, s.kind, strings.Join(counts, " "), strings.Join(unmatched, " "))
	return head + m.reason(p)
}

// reason names the causes found for unmatched collectives of p.
func (m *matcher) reason(p *plan) string {
	switch {
	case len(p.missing) > 0:
		return fmt.Sprintf("; no trace for member rank(s) %s, so none can be split", rankRanges(p.missing))
	case len(p.parts) == 1 && !m.splittable(p):
		return fmt.Sprintf("; only rank %d has them", m.in.ranks[p.parts[0]])
	}
	var out []string
	for q := 1; q < len(p.parts); q++ {
		out = append(out, m.linkReasons(p, q)...)
	}
	if len(out) == 0 {
		return "; an instance matches only when every rank of the group has it"
	}
	return "; " + strings.Join(out, "; ")
}

// linkReasons says why collectives of participant q and of the reference
// were left unpaired with each other.
func (m *matcher) linkReasons(p *plan, q int) []string {
	ref, i := p.parts[0], p.parts[q]
	rr, rq := m.in.ranks[ref], m.in.ranks[i]
	if c := m.clocks[[2]int{ref, i}]; !c.related() {
		return []string{fmt.Sprintf("the clocks of ranks %d and %d could not be related: fewer than half their collectives end together at any one offset", rr, rq)}
	}
	pr := &p.pairs[q]
	a, b := p.seq.items[ref], p.seq.items[i]
	var out []string
	if pr.diffA >= 0 {
		out = append(out, fmt.Sprintf("they differ: rank %d #%d %q vs rank %d #%d %q",
			rr, pr.diffA, m.in.sigs[a[pr.diffA].sig], rq, pr.diffB, m.in.sigs[b[pr.diffB].sig]))
	}
	out = appendEdge(out, pr.aLo, rr, "first", "before", rq)
	out = appendEdge(out, len(a)-pr.aHi, rr, "last", "after", rq)
	out = appendEdge(out, pr.bLo, rq, "first", "before", rr)
	out = appendEdge(out, len(b)-pr.bHi, rq, "last", "after", rr)
	out = m.appendLost(out, a, pr.aLo, pr.aHi, func(k int) bool { return pr.toB[k] < 0 }, ref, i)
	paired := make([]bool, len(b))
	for _, j := range pr.toB {
		if j >= 0 {
			paired[j] = true
		}
	}
	out = m.appendLost(out, b, pr.bLo, pr.bHi, func(k int) bool { return !paired[k] }, i, ref)
	return out
}

// appendEdge appends "rank R's first N are before rank W's window" when n > 0.
func appendEdge(out []string, n, rank int, which, side string, other int) []string {
	if n == 0 {
		return out
	}
	return append(out, fmt.Sprintf("rank %d's %s %d %s %s rank %d's window", rank, which, n, areIs(n), side, other))
}

func areIs(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// appendLost appends how many items of its[lo:hi] (trace i) have no
// counterpart on trace other, and which is the first, when any.
func (m *matcher) appendLost(out []string, its []item, lo, hi int, lost func(k int) bool, i, other int) []string {
	n, first := 0, -1
	for k := lo; k < hi; k++ {
		if lost(k) {
			if first < 0 {
				first = k
			}
			n++
		}
	}
	if n == 0 {
		return out
	}
	return append(out, fmt.Sprintf("%d of rank %d's inside rank %d's window %s no counterpart on rank %d (the first: #%d %q, ending %s into rank %d's trace)",
		n, m.in.ranks[i], m.in.ranks[other], hasHave(n), m.in.ranks[other], first, m.in.sigs[its[first].sig],
		fmtNS(its[first].end-m.in.windows[i].start), m.in.ranks[i]))
}

func hasHave(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// windowNotes describes, per rank pair whose trace windows differ so that
// collectives fall outside one of them, how far apart the windows are and
// how many collectives of each lie outside the other's, over all
// sequences.
func (m *matcher) windowNotes() []string {
	type edges struct{ beforeA, afterA, beforeB, afterB int }
	sums := map[[2]int]*edges{}
	var keys [][2]int
	for _, p := range m.plans {
		for q := 1; q < len(p.parts) && len(p.pairs) == len(p.parts); q++ {
			key := [2]int{p.parts[0], p.parts[q]}
			if !m.clocks[key].related() {
				continue
			}
			e := sums[key]
			if e == nil {
				e = &edges{}
				sums[key] = e
				keys = append(keys, key)
			}
			pr := &p.pairs[q]
			e.beforeA += pr.aLo
			e.afterA += len(p.seq.items[key[0]]) - pr.aHi
			e.beforeB += pr.bLo
			e.afterB += len(p.seq.items[key[1]]) - pr.bHi
		}
	}
	var out []string
	for _, key := range keys {
		e, off := sums[key], m.clocks[key].off
		wa, wb := m.in.windows[key[0]], m.in.windows[key[1]].moved(off)
		ra, rb := m.in.ranks[key[0]], m.in.ranks[key[1]]
		if e.beforeA > 0 {
			out = append(out, windowNote(rb, "starts", wb.start-wa.start, "after", ra, "first", e.beforeA, "before"))
		}
		if e.afterA > 0 {
			out = append(out, windowNote(rb, "ends", wa.end-wb.end, "before", ra, "last", e.afterA, "after"))
		}
		if e.beforeB > 0 {
			out = append(out, windowNote(ra, "starts", wa.start-wb.start, "after", rb, "first", e.beforeB, "before"))
		}
		if e.afterB > 0 {
			out = append(out, windowNote(ra, "ends", wb.end-wa.end, "before", rb, "last", e.afterB, "after"))
		}
	}
	return out
}

// windowNote writes "rank 1's trace starts 1.40 s after rank 0's: rank
// 0's first 14 collectives are before rank 1's window".
func windowNote(late int, verb string, d int64, rel string, other int, which string, n int, side string) string {
	return fmt.Sprintf("rank %d's trace %s %s %s rank %d's: rank %d's %s %d collective%s %s %s rank %d's window",
		late, verb, fmtNS(d), rel, other, other, which, n, plural(n), areIs(n), side, late)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// fmtNS writes a duration in the unit that suits it: "1.40 s", "12.3 ms",
// "850 µs".
func fmtNS(d int64) string {
	x := float64(d)
	switch a := abs64(d); {
	case a >= 1e9:
		return fmt.Sprintf("%.2f s", x/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.1f ms", x/1e6)
	default:
		return fmt.Sprintf("%.0f µs", x/1e3)
	}
}

// rankRanges writes sorted ranks compactly: "2-5 7".
func rankRanges(ranks []int) string {
	var b strings.Builder
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", ranks[i], ranks[j])
		} else {
			fmt.Fprintf(&b, "%d", ranks[i])
		}
		i = j + 1
	}
	return b.String()
}
