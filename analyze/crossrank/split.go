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
			a.Ranks[p.parts[q]].addMatched(it, Split{WaitNS: it.dur() - transfer, TransferNS: transfer})
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

// reason names the first cause found for unmatched collectives of p.
func (m *matcher) reason(p *plan) string {
	s := p.seq
	switch {
	case len(p.missing) > 0:
		return fmt.Sprintf("; no trace for member rank(s) %s, so none can be split", rankRanges(p.missing))
	case len(p.parts) == 1 && !m.splittable(p):
		return fmt.Sprintf("; only rank %d has them", m.in.ranks[p.parts[0]])
	}
	ref := p.parts[0]
	for q := 1; q < len(p.parts); q++ {
		pr := p.pairs[q]
		if pr.diffA >= 0 {
			return fmt.Sprintf("; they differ: rank %d #%d %q vs rank %d #%d %q",
				m.in.ranks[ref], pr.diffA, m.in.sigs[s.items[ref][pr.diffA].sig],
				m.in.ranks[p.parts[q]], pr.diffB, m.in.sigs[s.items[p.parts[q]][pr.diffB].sig])
		}
	}
	for q := 1; q < len(p.parts); q++ {
		if c := m.clocks[[2]int{ref, p.parts[q]}]; !c.shared && !c.estimated {
			return fmt.Sprintf("; the clocks of ranks %d and %d could not be related: fewer than half their collectives end together at any one offset",
				m.in.ranks[ref], m.in.ranks[p.parts[q]])
		}
	}
	if e := m.edges(p); e != "" {
		return e
	}
	return "; no counterpart ending at the same time on the other rank(s)"
}

// edges names the collectives of p that end before the first or after the
// last collective of another participant: a profiler started later, or a
// trace cut short. "" when there are none.
func (m *matcher) edges(p *plan) string {
	tol := m.opt.EndToleranceNS
	var first, last int64
	for q, i := range p.parts {
		its := p.seq.items[i]
		if len(its) == 0 {
			return ""
		}
		off := m.offsetOf(p, q)
		f, l := its[0].end+off, its[len(its)-1].end+off
		if q == 0 || f > first {
			first = f
		}
		if q == 0 || l < last {
			last = l
		}
	}
	var out []string
	for q, i := range p.parts {
		off := m.offsetOf(p, q)
		before, after := 0, 0
		for _, it := range p.seq.items[i] {
			switch e := it.end + off; {
			case e < first-tol:
				before++
			case e > last+tol:
				after++
			}
		}
		if before > 0 {
			out = append(out, fmt.Sprintf("rank %d has %d before the others' first (a profiler started later?)", m.in.ranks[i], before))
		}
		if after > 0 {
			out = append(out, fmt.Sprintf("rank %d has %d after the others' last (a trace cut short?)", m.in.ranks[i], after))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

// offsetOf returns the clock offset of participant q against the
// reference.
func (m *matcher) offsetOf(p *plan, q int) int64 {
	if q == 0 {
		return 0
	}
	return m.clocks[[2]int{p.parts[0], p.parts[q]}].off
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
