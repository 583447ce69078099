package analyze

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"kinetoscope/ingest"
)

func TestLaunchIndex(t *testing.T) {
	for _, corrs := range [][]int64{{3, 4, 5, 7}, {3, 4, 5, 7_000_000_000}} {
		b := newTraceBuilder()
		for _, c := range corrs {
			b.t.Launches.Append(ingest.Launch{Correlation: c, Kind: ingest.LaunchDriver})
		}
		// the runtime call wins over the driver call of the same correlation
		b.t.Launches.Append(ingest.Launch{Correlation: 5, Kind: ingest.LaunchRuntime})
		b.t.Launches.Append(ingest.Launch{Correlation: 0, Kind: ingest.LaunchRuntime})
		x := newLaunchIndex(b.t)
		want := map[int64]int32{3: 0, 4: 1, 5: 4, corrs[3]: 3, 6: -1, 0: -1, -2: -1, 8_000_000_000: -1}
		for c, w := range want {
			if got := x.find(c); got != w {
				t.Errorf("correlations %v: find(%d) = %d, want %d", corrs, c, got, w)
			}
		}
	}
}

// TestLaunchIndexSorted checks the sorted index (ids spread too wide for a
// dense table) against a map of the same launches, for ids found in
// launch order, in reverse and at random, duplicates and misses included.
func TestLaunchIndexSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	b := newTraceBuilder()
	want := map[int64]int32{}
	var ids []int64
	for i := range 20000 {
		c := int64(r.IntN(1000)) + int64(i/100)*1_000_000 // clusters far apart, out of order inside
		if i%97 == 0 && len(ids) > 0 {
			c = ids[r.IntN(len(ids))] // a second launch of an id
		}
		kind := ingest.LaunchDriver
		if r.IntN(3) == 0 {
			kind = ingest.LaunchRuntime
		}
		b.t.Launches.Append(ingest.Launch{Correlation: c, Kind: kind})
		if j, ok := want[c]; !ok || preferLaunch(b.t.Launches.At(i).Kind, b.t.Launches.At(int(j)).Kind) {
			want[c] = int32(i)
		}
		ids = append(ids, c)
	}
	x := newLaunchIndex(b.t)
	if x.dense != nil {
		t.Fatal("the ids are spread too wide for a dense table, yet it is one")
	}
	orders := map[string][]int64{"launch order": ids, "reverse": reversed(ids)}
	shuffled := slices.Clone(ids)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	orders["random"] = append(shuffled, 5, 999_999_999, 1_000_000_000_000)
	for name, order := range orders {
		for _, c := range order {
			w, ok := want[c]
			if !ok {
				w = -1
			}
			if got := x.find(c); got != w {
				t.Fatalf("%s: find(%d) = %d, want %d", name, c, got, w)
			}
		}
	}
}

// reversed returns a reversed copy of ids.
func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// TestSortByID checks the radix sort against a stable comparison sort, for
// spans of ids that take one to six passes, duplicates included.
func TestSortByID(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, span := range []int64{1, 1 << 5, 1 << 11, 1 << 20, 1 << 30, 1 << 62} {
		for _, n := range []int{2, 3, 1000, 50000} {
			lo := int64(r.IntN(1 << 20))
			ls := make([]corrLaunch, n)
			for i := range ls {
				c := lo + r.Int64N(span)
				if i > 0 && r.IntN(5) == 0 {
					c = ls[r.IntN(i)].c // an id again
				}
				ls[i] = corrLaunch{c, int32(i), ingest.LaunchKind(r.IntN(2))}
			}
			hi := lo
			for _, l := range ls {
				hi = max(hi, l.c)
			}
			want := slices.Clone(ls)
			slices.SortStableFunc(want, func(a, b corrLaunch) int { return cmp.Compare(a.c, b.c) })
			sortByID(ls, lo, hi)
			if !slices.Equal(ls, want) {
				t.Errorf("span %d, %d ids: the radix sort differs from the stable sort", span, n)
			}
		}
	}
}

// TestLaunchIndexInRanges checks that the index built in 1, 2, 7 and 64
// ranges finds what the launches say (a map of them, built in order), for
// dense and sparse ids, in order or not, with ids launched twice across
// ranges by a runtime and a driver call in either order.
func TestLaunchIndexInRanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread int64 // ids drawn from [1, spread*n]
		order  bool  // ids in increasing order
	}{{"dense in order", 1, true}, {"dense shuffled", 2, false}, {"sparse in order", 50, true}, {"sparse shuffled", 50, false}} {
		r := rand.New(rand.NewPCG(7, uint64(tc.spread)))
		b := newTraceBuilder()
		const n = 5000
		ids := make([]int64, n)
		for i := range ids {
			ids[i] = 1 + r.Int64N(tc.spread*n)
			if i%50 == 7 && i > 0 {
				ids[i] = ids[r.IntN(i)] // launched again, maybe ranges apart
			}
			if i%97 == 0 {
				ids[i] = 0 // no correlation
			}
		}
		if tc.order {
			slices.Sort(ids)
		}
		want := map[int64]int32{}
		for i, c := range ids {
			kind := ingest.LaunchDriver
			if r.IntN(3) == 0 {
				kind = ingest.LaunchRuntime
			}
			b.t.Launches.Append(ingest.Launch{Correlation: c, Kind: kind})
			if c <= 0 {
				continue
			}
			if j, ok := want[c]; !ok || preferLaunch(kind, b.t.Launches.At(int(j)).Kind) {
				want[c] = int32(i)
			}
		}
		for _, k := range []int{1, 2, 7, 64} {
			x := indexLaunches(b.t, assignParts(n, k, 1))
			if (x.dense != nil) != (tc.spread == 1) && tc.spread != 2 {
				t.Errorf("%s, %d ranges: dense %v", tc.name, k, x.dense != nil)
			}
			for c := int64(-1); c <= tc.spread*n+1; c++ {
				w, ok := want[c]
				if !ok {
					w = -1
				}
				if got := x.find(c); got != w {
					t.Fatalf("%s, %d ranges: find(%d) = %d, want %d", tc.name, k, c, got, w)
				}
			}
		}
	}
}
