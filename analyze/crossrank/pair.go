package crossrank

import "slices"

// pairing pairs one rank's collectives of a sequence (b) with the
// reference rank's (a).
type pairing struct {
	toB []int32 // for each a item, the paired b item, or -1
	n   int     // pairs
	// diffA, diffB locate the first pair of items that ended together but
	// disagree (name, size or sequence number); -1 when none.
	diffA, diffB int
}

func newPairing(n int) pairing {
	p := pairing{toB: make([]int32, n), diffA: -1, diffB: -1}
	for k := range p.toB {
		p.toB[k] = -1
	}
	return p
}

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

// endRule says when two collectives on two ranks may be one instance: b's
// end plus off within tol of a's end and, when overlap is set, the two
// kernels running at the same time for a while (on b's clock moved by off).
type endRule struct {
	off, tol int64
	overlap  bool
}

// fits says whether a and b satisfy the rule apart from the end tolerance.
func (r endRule) fits(a, b *item) bool {
	if !compatible(a, b) {
		return false
	}
	return !r.overlap || max(a.start, b.start+r.off) < min(a.end, b.end+r.off)
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

// pairByEnd pairs a and b, both ordered by end, by their ends: b's end plus
// r.off must be within r.tol of a's, and each pair must be the nearest for
// both sides, so that a collective missing on one rank leaves its
// neighbour unpaired instead of shifting every later pair. It runs in
// linear time.
func pairByEnd(a, b []item, r endRule) pairing {
	p := newPairing(len(a))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		d := a[i].end - (b[j].end + r.off)
		if abs64(d) <= r.tol {
			if r.fits(&a[i], &b[j]) && !nearerNeighbour(a, b, i, j, d, r) {
				p.toB[i] = int32(j)
				p.n++
				i++
				j++
				continue
			}
			if !compatible(&a[i], &b[j]) && p.diffA < 0 {
				p.diffA, p.diffB = i, j
			}
		}
		switch {
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

// nearerNeighbour says whether a[i] fits b[j+1], or b[j] fits a[i+1], better
// than a[i] fits b[j] (whose end difference is d).
func nearerNeighbour(a, b []item, i, j int, d int64, r endRule) bool {
	if j+1 < len(b) && r.fits(&a[i], &b[j+1]) && abs64(a[i].end-b[j+1].end-r.off) < abs64(d) {
		return true
	}
	return i+1 < len(a) && r.fits(&a[i+1], &b[j]) && abs64(a[i+1].end-b[j].end-r.off) < abs64(d)
}

// endDiffsByIndex pairs a and b by order and signature alone, skipping at
// most look items on either side to resynchronise after a difference and
// stopping at a difference it cannot get past, and returns a's end minus
// b's for each pair: the data for estimating b's clock offset when the
// clocks differ.
func endDiffsByIndex(a, b []item, look int) []int64 {
	var diffs []int64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if compatible(&a[i], &b[j]) {
			diffs = append(diffs, a[i].end-b[j].end)
			i++
			j++
			continue
		}
		da, db, ok := resync(a, b, i, j, look)
		if !ok {
			break
		}
		i, j = i+da, j+db
	}
	return diffs
}

// resync finds the smallest skips (da on a, db on b, each at most look)
// after which the next three items agree.
func resync(a, b []item, i, j, look int) (da, db int, ok bool) {
	for d := 1; d <= 2*look; d++ {
		for da = max(0, d-look); da <= min(d, look); da++ {
			db = d - da
			if agreeRun(a, b, i+da, j+db, 3) {
				return da, db, true
			}
		}
	}
	return 0, 0, false
}

// agreeRun says whether a[i:] and b[j:] agree for n items, or for as many
// as both have (at least one).
func agreeRun(a, b []item, i, j, n int) bool {
	if i >= len(a) || j >= len(b) {
		return false
	}
	for k := 0; k < n && i+k < len(a) && j+k < len(b); k++ {
		if !compatible(&a[i+k], &b[j+k]) {
			return false
		}
	}
	return true
}
