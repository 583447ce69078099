package analyze

import (
	"cmp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"kinetoscope/ingest"
)

// launchIndex finds the CPU launch of a GPU event by correlation id: a dense
// table when the ids are compact (the usual case), else the ids sorted,
// searched from where the last search ended (GPU events mostly come in the
// order of their launches) and by binary search otherwise. It is built in
// ranges of the launches side by side. It is not safe for concurrent use:
// a search moves that hint.
type launchIndex struct {
	base   int64
	dense  []int32      // the launch of id base+j plus one, 0 for none
	sorted []corrLaunch // by id, one a distinct id, when not dense
	hint   int          // position after the last id found
}

// denseSlack bounds the table of a dense index: ids spread over more than
// denseSlack slots per launch (and a thousand more) are sorted instead.
const denseSlack = 4

// idRange is what one range of the launches holds of positive
// correlation ids: how many, their least and greatest, the first and
// last, and whether they come in order.
type idRange struct {
	n                   int
	lo, hi, first, last int64
	inOrder             bool
}

// newLaunchIndex indexes t's launches by correlation id, in ranges of the
// launches side by side (assignParts).
func newLaunchIndex(t *ingest.Trace) launchIndex {
	return indexLaunches(t, assignParts(t.Launches.Len(), runtime.GOMAXPROCS(0), minAssignPart))
}

// indexLaunches indexes t's launches in the ranges between parts' bounds.
func indexLaunches(t *ingest.Trace, parts []int) launchIndex {
	rs := make([]idRange, len(parts)-1)
	inParts(parts, func(k, from, to int) {
		r := idRange{lo: 1 << 62, inOrder: true}
		for i := from; i < to; i++ {
			if c := t.Launches.At(i).Correlation; c > 0 {
				if r.n == 0 {
					r.first = c
				}
				r.lo, r.hi = min(r.lo, c), max(r.hi, c)
				r.inOrder = r.inOrder && c >= r.last
				r.last = c
				r.n++
			}
		}
		rs[k] = r
	})
	all := idRange{lo: 1 << 62, inOrder: true}
	for _, r := range rs {
		if r.n == 0 {
			continue
		}
		all.lo, all.hi = min(all.lo, r.lo), max(all.hi, r.hi)
		all.inOrder = all.inOrder && r.inOrder && (all.n == 0 || r.first >= all.last)
		all.last = r.last
		all.n += r.n
	}
	if all.n == 0 {
		return launchIndex{}
	}
	if span := all.hi - all.lo + 1; span > int64(denseSlack*all.n+1024) {
		return sortedLaunchIndex(t, parts, rs, all)
	}
	x := launchIndex{base: all.lo, dense: make([]int32, all.hi-all.lo+1)}
	inParts(parts, func(_, from, to int) {
		for i := from; i < to; i++ {
			if c := t.Launches.At(i).Correlation; c > 0 {
				x.keep(t, c-all.lo, int32(i))
			}
		}
	})
	return x
}

// keep makes launch i the one of table slot j unless the slot holds one
// to keep instead: a runtime call before any other kind, the earlier
// launch among the same. Ranges of launches keep theirs side by side,
// each slot going to the least launch in that order whatever the order
// they come in.
func (x *launchIndex) keep(t *ingest.Trace, j int64, i int32) {
	slot := &x.dense[j]
	for {
		cur := atomic.LoadInt32(slot)
		if cur != 0 {
			a, b := t.Launches.At(int(i)).Kind, t.Launches.At(int(cur-1)).Kind
			if !preferLaunch(a, b) && (preferLaunch(b, a) || cur-1 < i) {
				return
			}
		}
		if atomic.CompareAndSwapInt32(slot, cur, i+1) {
			return
		}
	}
}

// corrLaunch is a launch's correlation id, index and kind.
type corrLaunch struct {
	c    int64
	i    int32
	kind ingest.LaunchKind
}

// sortedLaunchIndex returns the index of t's launches with a positive
// correlation id, sorted by id, stably; rs are what the ranges of the
// launches between parts' bounds hold, all what they hold together. Each
// range fills and sorts its part, the parts are merged in pairs, and of
// the launches with one id the one preferLaunch picks is kept, as the
// dense table does.
func sortedLaunchIndex(t *ingest.Trace, parts []int, rs []idRange, all idRange) launchIndex {
	ls := make([]corrLaunch, all.n)
	at := make([]int, len(rs)+1) // where each range's part starts in ls
	for k, r := range rs {
		at[k+1] = at[k] + r.n
	}
	inParts(parts, func(k, from, to int) {
		part := ls[at[k]:at[k]:at[k+1]]
		for i := from; i < to; i++ {
			if l := t.Launches.At(i); l.Correlation > 0 {
				part = append(part, corrLaunch{l.Correlation, int32(i), l.Kind})
			}
		}
		if !rs[k].inOrder { // launches mostly come in id order
			sortByID(part, rs[k].lo, rs[k].hi)
		}
	})
	if !all.inOrder {
		ls = mergeParts(ls, at)
	}
	w := 0 // one a distinct id, in place
	for _, l := range ls {
		switch {
		case w == 0 || ls[w-1].c != l.c:
			ls[w] = l
			w++
		case preferLaunch(l.kind, ls[w-1].kind):
			ls[w-1] = l
		}
	}
	return launchIndex{sorted: ls[:w]}
}

// mergeParts merges the sorted parts of ls between at's bounds, in pairs
// side by side until one is left, and returns it (ls or a buffer of its
// size). Of equal ids, the earlier part's come first: a stable merge.
func mergeParts(ls []corrLaunch, at []int) []corrLaunch {
	src, dst := ls, make([]corrLaunch, len(ls))
	for len(at) > 2 {
		next := make([]int, 0, len(at)/2+2)
		var wg sync.WaitGroup
		for k := 0; k+1 < len(at); k += 2 {
			lo, hi := at[k], at[min(k+2, len(at)-1)]
			mid := at[k+1]
			next = append(next, lo)
			wg.Go(func() { mergeTwo(dst[lo:hi], src[lo:mid], src[mid:hi]) })
		}
		wg.Wait()
		at = append(next, len(ls))
		src, dst = dst, src
	}
	return src
}

// mergeTwo merges the sorted a and b into out, a's first among equal ids.
func mergeTwo(out, a, b []corrLaunch) {
	i, j := 0, 0
	for k := range out {
		if j == len(b) || (i < len(a) && a[i].c <= b[j].c) {
			out[k], i = a[i], i+1
		} else {
			out[k], j = b[j], j+1
		}
	}
}

// radixBits is the digit of sortByID's radix sort: 2^11 counters fit in
// the L1 cache, and ids spread over 2^22 take two passes.
const radixBits = 11

// sortByID sorts ls by id, stably (the launches of one id keep their
// order), where every id lies in [lo, hi]: a least-significant-digit
// radix sort of the ids' offsets from lo, linear in len(ls) for a span of
// ids up to 2^33 and never worse than six passes.
func sortByID(ls []corrLaunch, lo, hi int64) {
	src, dst := ls, make([]corrLaunch, len(ls))
	for shift := uint(0); uint64(hi-lo)>>shift > 0; shift += radixBits {
		var at [1 << radixBits]int
		for _, l := range src {
			at[uint64(l.c-lo)>>shift&(1<<radixBits-1)]++
		}
		sum := 0
		for d, n := range at {
			at[d], sum = sum, sum+n
		}
		for _, l := range src {
			d := uint64(l.c-lo) >> shift & (1<<radixBits - 1)
			dst[at[d]] = l
			at[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ls[0] { // an odd number of passes
		copy(ls, src)
	}
}

// preferLaunch says whether a launch of kind a should replace one of kind
// b for the same correlation: the runtime call is the one the user made.
func preferLaunch(a, b ingest.LaunchKind) bool {
	return a == ingest.LaunchRuntime && b != ingest.LaunchRuntime
}

// find returns the index of the launch with correlation c, or -1. Zero
// and negative ids (events without a correlation) find nothing.
func (x *launchIndex) find(c int64) int32 {
	if c <= 0 {
		return -1
	}
	if x.dense != nil {
		j := c - x.base
		if j < 0 || j >= int64(len(x.dense)) {
			return -1
		}
		return x.dense[j] - 1
	}
	return x.findSorted(c)
}

// findSorted finds c among the sorted ids: first in the few after the last
// one found, then by binary search.
func (x *launchIndex) findSorted(c int64) int32 {
	for j := x.hint; j < min(x.hint+4, len(x.sorted)) && x.sorted[j].c <= c; j++ {
		if x.sorted[j].c == c {
			x.hint = j + 1
			return x.sorted[j].i
		}
	}
	j, ok := slices.BinarySearchFunc(x.sorted, c, func(l corrLaunch, c int64) int { return cmp.Compare(l.c, c) })
	if !ok {
		return -1
	}
	x.hint = j + 1
	return x.sorted[j].i
}

// links resolves the collective name of communication kernels from the
// CPU side of a trace. Its indexes are built on first use.
type links struct {
	t         *ingest.Trace
	once      sync.Once // builds the indexes
	commByExt map[int64]int32
	commByThr map[int32][]int32 // record_param_comms ops per thread, by start
	annByThr  map[int32][]int32 // nccl:* annotations per thread, by start
	opsByThr  map[int32][]int32 // collective custom ops (vllm::all_reduce) per thread, by start
}

func newLinks(t *ingest.Trace) *links { return &links{t: t} }

// build builds the indexes once, on first use by any goroutine.
func (k *links) build() { k.once.Do(k.index) }

// index builds the indexes.
func (k *links) index() {
	t := k.t
	k.commByExt = make(map[int64]int32, t.CommOps.Len())
	k.commByThr = make(map[int32][]int32)
	for i, c := range t.CommOps.All() {
		if c.ExternalID != 0 {
			k.commByExt[c.ExternalID] = int32(i)
		}
		k.commByThr[c.Thread] = append(k.commByThr[c.Thread], int32(i))
	}
	k.annByThr = make(map[int32][]int32)
	for i, a := range t.Annotations.All() {
		if !a.GPU && strings.HasPrefix(t.Name(a.Name), "nccl:") {
			k.annByThr[a.Thread] = append(k.annByThr[a.Thread], int32(i))
		}
	}
	k.opsByThr = make(map[int32][]int32)
	for i, o := range t.CollectiveOps.All() {
		k.opsByThr[o.Thread] = append(k.opsByThr[o.Thread], int32(i))
	}
	for _, ix := range k.opsByThr {
		sort.Slice(ix, func(a, b int) bool {
			return t.CollectiveOps.At(int(ix[a])).Start < t.CollectiveOps.At(int(ix[b])).Start
		})
	}
	for _, ix := range k.commByThr {
		sort.Slice(ix, func(a, b int) bool { return t.CommOps.At(int(ix[a])).Start < t.CommOps.At(int(ix[b])).Start })
	}
	for _, ix := range k.annByThr {
		sort.Slice(ix, func(a, b int) bool { return t.Annotations.At(int(ix[a])).Start < t.Annotations.At(int(ix[b])).Start })
	}
}

// collective returns the collective name of ev (launched by l, nil if
// unknown): its own args, the record_param_comms op with the launch's
// External id, the one holding the launch on its thread, the nccl:NAME
// annotation holding it, or the serving engine's collective op holding it
// (vllm::all_reduce gives all_reduce: vLLM's pynccl path, which has
// neither). "" when none says.
func (k *links) collective(ev *ingest.GPUEvent, l *ingest.Launch) string {
	t := k.t
	if ev.Coll >= 0 && int(ev.Coll) < len(t.Collectives) {
		if n := t.Name(t.Collectives[ev.Coll].Name); n != "" {
			return n
		}
	}
	k.build()
	for _, ext := range []int64{ev.ExternalID, launchExt(l)} {
		if i, ok := k.commByExt[ext]; ok && ext != 0 {
			if n := t.Name(t.CommOps.At(int(i)).Args.Name); n != "" {
				return n
			}
		}
	}
	if l == nil {
		return ""
	}
	if i := holding(k.commByThr[l.Thread], l.Start, func(j int32) (int64, int64) {
		c := t.CommOps.At(int(j))
		return c.Start, c.Dur
	}); i >= 0 {
		if n := t.Name(t.CommOps.At(int(i)).Args.Name); n != "" {
			return n
		}
	}
	if i := holding(k.annByThr[l.Thread], l.Start, func(j int32) (int64, int64) {
		a := t.Annotations.At(int(j))
		return a.Start, a.Dur
	}); i >= 0 {
		return strings.TrimPrefix(t.Name(t.Annotations.At(int(i)).Name), "nccl:")
	}
	if i := holding(k.opsByThr[l.Thread], l.Start, func(j int32) (int64, int64) {
		o := t.CollectiveOps.At(int(j))
		return o.Start, o.Dur
	}); i >= 0 {
		n := t.Name(t.CollectiveOps.At(int(i)).Name)
		return n[strings.Index(n, "::")+2:]
	}
	return ""
}

func launchExt(l *ingest.Launch) int64 {
	if l == nil {
		return 0
	}
	return l.ExternalID
}

// holding returns the last of ix (sorted by start) whose span holds ts, or
// -1. span gives an element's start and duration.
func holding(ix []int32, ts int64, span func(int32) (int64, int64)) int32 {
	n := sort.Search(len(ix), func(i int) bool { s, _ := span(ix[i]); return s > ts })
	for i := n - 1; i >= 0 && i >= n-4; i-- {
		if s, d := span(ix[i]); ts <= s+d {
			return ix[i]
		}
	}
	return -1
}
