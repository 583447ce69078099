package analyze

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"sync"

	"kinetoscope/ingest"
)

// launchIndex finds the CPU launch of a GPU event by correlation id: a dense
// table when the ids are compact (the usual case), else the ids sorted,
// searched from where the last search ended (GPU events mostly come in the
// order of their launches) and by binary search otherwise. It is not safe
// for concurrent use: a search moves that hint.
type launchIndex struct {
	base   int64
	dense  []int32
	sorted []corrLaunch // by id, one a distinct id, when not dense
	hint   int          // position after the last id found
}

// denseSlack bounds the table of a dense index: ids spread over more than
// denseSlack slots per launch (and a thousand more) are sorted instead.
const denseSlack = 4

// newLaunchIndex indexes t's launches by correlation id.
func newLaunchIndex(t *ingest.Trace) launchIndex {
	lo, hi, n, inOrder, prev := int64(1<<62), int64(0), 0, true, int64(0)
	for _, l := range t.Launches.All() {
		if c := l.Correlation; c > 0 {
			lo, hi = min(lo, c), max(hi, c)
			inOrder, prev = inOrder && c >= prev, c
			n++
		}
	}
	if hi == 0 {
		return launchIndex{}
	}
	if span := hi - lo + 1; span > int64(denseSlack*n+1024) {
		return sortedLaunchIndex(t, n, lo, hi, inOrder)
	}
	x := launchIndex{base: lo, dense: make([]int32, hi-lo+1)}
	kind := make([]ingest.LaunchKind, len(x.dense)) // of the launch kept for each id
	for i := range x.dense {
		x.dense[i] = -1
	}
	for i, l := range t.Launches.All() {
		if l.Correlation <= 0 {
			continue
		}
		if j := l.Correlation - lo; x.dense[j] < 0 || preferLaunch(l.Kind, kind[j]) {
			x.dense[j], kind[j] = int32(i), l.Kind
		}
	}
	return x
}

// corrLaunch is a launch's correlation id, index and kind.
type corrLaunch struct {
	c    int64
	i    int32
	kind ingest.LaunchKind
}

// sortedLaunchIndex returns the index of t's n launches with a positive
// correlation id, sorted by id (ids in [lo, hi]; inOrder: already sorted),
// stably. Of the launches with one id, it keeps the one preferLaunch picks,
// as the dense table does.
func sortedLaunchIndex(t *ingest.Trace, n int, lo, hi int64, inOrder bool) launchIndex {
	ls := make([]corrLaunch, 0, n)
	for i, l := range t.Launches.All() {
		if l.Correlation > 0 {
			ls = append(ls, corrLaunch{l.Correlation, int32(i), l.Kind})
		}
	}
	if !inOrder { // launches mostly come in id order
		sortByID(ls, lo, hi)
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
		return x.dense[j]
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
