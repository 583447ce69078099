package crossrank

import "slices"

// pairing pairs one rank's collectives of a sequence (b) with the
// reference rank's (a).
type pairing struct {
	toB []int32 // for each a item, the paired b item, or -1
	n   int     // pairs
	// diffA, diffB locate the first pair of items that ran together but
	// disagree (name, size or sequence number); -1 when none.
	diffA, diffB int
	// a[aLo:aHi] are the a items inside b's trace window, b[bLo:bHi] the b
	// items inside a's: only those can have a partner.
	aLo, aHi, bLo, bHi int
}

func newPairing(a, b int) pairing {
	p := pairing{toB: make([]int32, a), diffA: -1, diffB: -1, aHi: a, bHi: b}
	for k := range p.toB {
		p.toB[k] = -1
	}
	return p
}

// possible is how many pairs there could be: the fewer of the items each
// side has inside the other's window.
func (p *pairing) possible() int { return min(p.aHi-p.aLo, p.bHi-p.bLo) }

// unexplained counts the items inside the other's window left unpaired.
func (p *pairing) unexplained() int { return p.aHi - p.aLo + p.bHi - p.bLo - 2*p.n }

// endDiffs appends a's end minus b's for each pair to diffs.
func (p *pairing) endDiffs(a, b []item, diffs []int64) []int64 {
	diffs = slices.Grow(diffs, p.n)
	for i, j := range p.toB {
		if j >= 0 {
			diffs = append(diffs, a[i].end-b[j].end)
		}
	}
	return diffs
}

// compatible says whether two items may be one collective: same signature
// and, when both have one, the same sequence number.
func compatible(x, y *item) bool {
	return x.sig == y.sig && (x.seq < 0 || y.seq < 0 || x.seq == y.seq)
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// endRule says when two collectives on two ranks may be one instance (b's
// times moved by off onto a's clock): the same identity (compatible), b's
// end within tol of a's and, when overlap is set, the two kernels running
// at the same time for a while.
type endRule struct {
	off, tol int64
	overlap  bool
}

// ran says whether a and b ran together: they overlap in time, or, for
// kinds that need not overlap, end within the tolerance.
func (r endRule) ran(a, b *item) bool {
	if r.overlap {
		return max(a.start, b.start+r.off) < min(a.end, b.end+r.off)
	}
	return abs64(a.end-b.end-r.off) <= r.tol
}

// fits says whether a and b may be one instance.
func (r endRule) fits(a, b *item) bool {
	return compatible(a, b) && abs64(a.end-b.end-r.off) <= r.tolFor(a, b) && r.ran(a, b)
}

// endShare is the part of the shorter kernel by which the ends of one
// collective that must overlap may differ on two ranks, when that is more
// than the fixed tolerance. Through host shared memory (NCCL_P2P_DISABLE=1)
// the ranks of a long transfer finish apart in proportion to it: the 4 MiB
// AllReduces of sampletraces/real/p2p_disabled end up to 15.6 µs apart,
// 9% of their 173 µs, so a 32 MiB one may end well past 50 µs apart (76 µs
// in a real TP2 trace) and still be one collective.
const endShare = 4

// tolFor is how far the ends of a and b may differ: r.tol and, for kinds
// whose kernels must overlap, up to a quarter (endShare) of the shorter
// kernel. Two instances of one collective on one rank run one after the
// other, so an item overlaps its partner's neighbours at most by their
// tails, and nearerNeighbour keeps the closer end.
func (r endRule) tolFor(a, b *item) int64 {
	if !r.overlap {
		return r.tol
	}
	return max(r.tol, min(a.dur(), b.dur())/endShare)
}

// mustOverlap says whether every rank's kernel of a collective of this kind
// must be running while every other's is: each rank needs data from all the
// others before it can finish. Not so for send/recv and broadcast, where a
// sender may finish into the peer's buffer before the peer starts.
func mustOverlap(kind string) bool {
	switch kind {
	case "allreduce", "allgather", "reducescatter", "alltoall":
		return true
	}
	return false
}

// pairSeq pairs a and b, both ordered by end, by order and identity. The
// items of either that lie outside the other's trace window (wa, wb; b's
// on b's clock) have no partner there and are left out. Between, the two
// are walked in order: the next item of each pairs when they fit
// (identity, and running together on a's clock) and neither fits the
// other's next item better, so a collective missing on one rank leaves
// its neighbour unpaired instead of shifting every later pair; otherwise
// the one that ended first has no partner. It runs in linear time.
func pairSeq(a, b []item, wa, wb window, r endRule) pairing {
	p := newPairing(len(a), len(b))
	slack := r.tol
	if r.overlap {
		slack = 0
	}
	p.aLo, p.aHi = outside(a, wb.moved(r.off), slack)
	p.bLo, p.bHi = outside(b, wa.moved(-r.off), slack)
	i, j := p.aLo, p.bLo
	for i < p.aHi && j < p.bHi {
		if r.fits(&a[i], &b[j]) && !nearerNeighbour(a[:p.aHi], b[:p.bHi], i, j, r) {
			p.toB[i] = int32(j)
			p.n++
			i++
			j++
			continue
		}
		if p.diffA < 0 && !compatible(&a[i], &b[j]) && r.ran(&a[i], &b[j]) {
			p.diffA, p.diffB = i, j
		}
		switch d := a[i].end - (b[j].end + r.off); {
		case d < 0:
			i++
		case d > 0:
			j++
		default:
			i++
			j++
		}
	}
	return p
}

// nearerNeighbour says whether a[i] fits b[j+1], or b[j] fits a[i+1], with
// ends closer than a[i]'s and b[j]'s.
func nearerNeighbour(a, b []item, i, j int, r endRule) bool {
	d := abs64(a[i].end - b[j].end - r.off)
	if j+1 < len(b) && r.fits(&a[i], &b[j+1]) && abs64(a[i].end-b[j+1].end-r.off) < d {
		return true
	}
	return i+1 < len(a) && r.fits(&a[i+1], &b[j]) && abs64(a[i+1].end-b[j].end-r.off) < d
}
