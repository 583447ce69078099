package crossrank

import "slices"

// pairClock relates the clock of one trace to its reference trace's.
type pairClock struct {
	shared    bool
	estimated bool
	off       int64 // added to the trace's times to reach the reference's clock
}

// related says whether the two clocks could be related.
func (c *pairClock) related() bool { return c.shared || c.estimated }

// median returns the median of xs (the lower middle for an even count) in
// expected linear time; it reorders xs.
func median(xs []int64) int64 { return nth(xs, (len(xs)-1)/2) }

// nth returns the k-th smallest of xs (from 0, clamped to the slice) in
// expected linear time, 0 for none; it reorders xs.
func nth(xs []int64, k int) int64 {
	if len(xs) == 0 {
		return 0
	}
	k = min(max(k, 0), len(xs)-1)
	lo, hi := 0, len(xs)-1
	for lo < hi {
		lt, gt := partition3(xs, lo, hi)
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// partition3 splits xs[lo:hi+1] around a median-of-three pivot into
// smaller, equal and larger parts, and returns the bounds of the equal
// part; runs of equal values cost no more than distinct ones.
func partition3(xs []int64, lo, hi int) (lt, gt int) {
	a, b, c := xs[lo], xs[lo+(hi-lo)/2], xs[hi]
	pivot := max(min(a, b), min(max(a, b), c))
	lt, gt = lo, hi
	for i := lo; i <= gt; {
		switch {
		case xs[i] < pivot:
			xs[lt], xs[i] = xs[i], xs[lt]
			lt++
			i++
		case xs[i] > pivot:
			xs[gt], xs[i] = xs[i], xs[gt]
			gt--
		default:
			i++
		}
	}
	return lt, gt
}

// offsets fills each rank's clock offset against the lowest rank, walking
// from it through the rank pairs whose clocks were related, and sets the
// alignment's clock mode.
func offsets(in *input, clocks map[[2]int]*pairClock, a *Alignment) {
	root := 0
	for i, r := range in.ranks {
		if r < in.ranks[root] {
			root = i
		}
	}
	a.Ranks[root].ClockKnown, a.Ranks[root].ClockShared = true, true
	keys := make([][2]int, 0, len(clocks))
	for k := range clocks {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y [2]int) int {
		if x[0] != y[0] {
			return x[0] - y[0]
		}
		return x[1] - y[1]
	})
	known, estimated := 1, false
	for changed := true; changed; {
		changed = false
		for _, key := range keys {
			c := clocks[key]
			if !c.shared && !c.estimated {
				continue
			}
			from, to, off := a.Ranks[key[0]], a.Ranks[key[1]], c.off
			if !from.ClockKnown {
				from, to, off = to, from, -off
			}
			if !from.ClockKnown || to.ClockKnown {
				continue
			}
			to.ClockKnown, to.ClockShared = true, from.ClockShared && c.shared
			to.OffsetNS = from.OffsetNS + off
			estimated = estimated || !c.shared
			known++
			changed = true
		}
	}
	switch {
	case known == 1:
		a.Clock = ClockUnknown
	case estimated:
		a.Clock = ClockEstimated
	default:
		a.Clock = ClockShared
	}
}
