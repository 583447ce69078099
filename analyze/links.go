package analyze

import (
	"sort"
	"strings"

	"kinetoscope/ingest"
)

// launchIndex finds the CPU launch of a GPU event by correlation id: a dense
// table when the ids are compact (the usual case), else a map.
type launchIndex struct {
	base   int64
	dense  []int32
	sparse map[int64]int32
}

func newLaunchIndex(t *ingest.Trace) launchIndex {
	n := t.Launches.Len()
	lo, hi := int64(1<<62), int64(0)
	for _, l := range t.Launches.All() {
		if l.Correlation > 0 {
			lo, hi = min(lo, l.Correlation), max(hi, l.Correlation)
		}
	}
	if hi == 0 {
		return launchIndex{}
	}
	var x launchIndex
	if span := hi - lo + 1; span <= int64(4*n+1024) {
		x.base, x.dense = lo, make([]int32, span)
		for i := range x.dense {
			x.dense[i] = -1
		}
	} else {
		x.sparse = make(map[int64]int32, n)
	}
	for i, l := range t.Launches.All() {
		if l.Correlation <= 0 {
			continue
		}
		if j := x.find(l.Correlation); j < 0 || preferLaunch(l, t.Launches.At(int(j))) {
			x.set(l.Correlation, int32(i))
		}
	}
	return x
}

// set makes c find launch i.
func (x *launchIndex) set(c int64, i int32) {
	if x.dense != nil {
		x.dense[c-x.base] = i
	} else {
		x.sparse[c] = i
	}
}

// preferLaunch says whether a should replace b for the same correlation:
// the runtime call is the one the user made.
func preferLaunch(a, b *ingest.Launch) bool {
	return a.Kind == ingest.LaunchRuntime && b.Kind != ingest.LaunchRuntime
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
	if j, ok := x.sparse[c]; ok {
		return j
	}
	return -1
}

// links resolves the collective name of communication kernels from the
// CPU side of a trace. Its indexes are built on first use.
type links struct {
	t         *ingest.Trace
	built     bool
	commByExt map[int64]int32
	commByThr map[int32][]int32 // record_param_comms ops per thread, by start
	annByThr  map[int32][]int32 // nccl:* annotations per thread, by start
}

func newLinks(t *ingest.Trace) *links { return &links{t: t} }

func (k *links) build() {
	k.built = true
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
	for _, ix := range k.commByThr {
		sort.Slice(ix, func(a, b int) bool { return t.CommOps.At(int(ix[a])).Start < t.CommOps.At(int(ix[b])).Start })
	}
	for _, ix := range k.annByThr {
		sort.Slice(ix, func(a, b int) bool { return t.Annotations.At(int(ix[a])).Start < t.Annotations.At(int(ix[b])).Start })
	}
}

// collective returns the collective name of ev (launched by l, nil if
// unknown): its own args, the record_param_comms op with the launch's
// External id, the one holding the launch on its thread, or the nccl:NAME
// annotation holding it. "" when none says.
func (k *links) collective(ev *ingest.GPUEvent, l *ingest.Launch) string {
	t := k.t
	if ev.Coll >= 0 && int(ev.Coll) < len(t.Collectives) {
		if n := t.Name(t.Collectives[ev.Coll].Name); n != "" {
			return n
		}
	}
	if !k.built {
		k.build()
	}
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
