package analyze

import "slices"

// quantile returns the nearest-rank q-quantile (0 < q <= 1) of xs,
// reordering xs. It runs in linear expected time. Zero for no values.
func quantile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	return selectK(xs, nearestRank(len(xs), q))
}

// nearestRank is the 0-based index of the nearest-rank q-quantile of n
// sorted values (n > 0).
func nearestRank(n int, q float64) int {
	k := int(q*float64(n)+0.999999999) - 1
	return max(0, min(k, n-1))
}

// selectK returns the k-th smallest element of xs (0-based), partially
// reordering xs.
func selectK(xs []int64, k int) int64 {
	lo, hi := 0, len(xs)-1
	for hi-lo > 32 {
		mid := lo + (hi-lo)/2
		// median of three as pivot
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		pivot := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	slices.Sort(xs[lo : hi+1])
	return xs[k]
}

// quantileFloat is quantile for a few float64 values; xs is sorted in place.
func quantileFloat(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[nearestRank(len(xs), q)]
}

func us(ns int64) float64 { return float64(ns) / 1e3 }
