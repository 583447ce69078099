package crossrank

import "slices"

// ClockUnknown is Alignment.Clock when no two ranks share a matched
// collective, so that no clock could be related to another.
const ClockUnknown = "unknown"

// pairClock relates the clock of one trace to its reference trace's.
type pairClock struct {
	paired, possible int     // collectives paired on a shared clock, of those pairable
	estPaired        int     // collectives paired with the estimated offset
	zeroDiffs        []int64 // end differences of the pairs on a shared clock
	shared           bool
	estimated        bool
	off              int64 // added to the trace's times to reach the reference's clock
}

// median returns the median of xs (the lower middle for an even count);
// it reorders xs.
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[(len(xs)-1)/2]
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
