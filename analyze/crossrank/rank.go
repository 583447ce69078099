package crossrank

import (
	"iter"
	"sort"
)

// RankComm is one rank's side of an Alignment: its collectives' totals and
// the transfer/wait split of each matched collective GPU event.
type RankComm struct {
	Rank int
	// TimeBaseNS was added to the trace's times to make them absolute (see
	// TimeBaseNS).
	TimeBaseNS int64
	// OffsetNS was added to this rank's absolute times to put them on the
	// clock of the lowest rank; 0 with a shared clock.
	OffsetNS int64
	// ClockKnown says the rank's clock could be related to the lowest
	// rank's (it shares a matched collective with it, directly or through
	// other ranks); ClockShared says it is the same clock, not an estimate.
	ClockKnown  bool
	ClockShared bool

	Collectives int // collective GPU events on this rank
	Matched     int // of them, in a matched instance
	// KernelNS is the duration of all the rank's collectives; TransferNS and
	// WaitNS split the matched ones; UnmatchedNS is the duration of the
	// others, which cannot be split.
	KernelNS    int64
	TransferNS  int64
	WaitNS      int64
	UnmatchedNS int64

	idx    []int32 // GPU event indices of matched collectives, sorted
	splits []Split // parallel to idx
	inst   []int32 // parallel to idx: the matched instance, see Instance
}

// Split is the transfer/wait split of one matched collective GPU event.
// WaitNS + TransferNS is the event's duration.
type Split struct {
	WaitNS     int64
	TransferNS int64
}

func newRankComm(rank, collectives int) *RankComm {
	return &RankComm{
		Rank:   rank,
		idx:    make([]int32, 0, collectives),
		splits: make([]Split, 0, collectives),
		inst:   make([]int32, 0, collectives),
	}
}

// Split returns the split of the GPU event with index gpuIndex in the
// rank's Trace.GPU, and false when that event is not a matched collective.
func (r *RankComm) Split(gpuIndex int) (Split, bool) {
	k := sort.Search(len(r.idx), func(k int) bool { return int(r.idx[k]) >= gpuIndex })
	if k < len(r.idx) && int(r.idx[k]) == gpuIndex {
		return r.splits[k], true
	}
	return Split{}, false
}

// Instance returns the number of the matched instance that the GPU event
// with index gpuIndex belongs to, the same on every rank of the instance
// (numbered from 0 in the order Align matched them), and false when that
// event is not a matched collective.
func (r *RankComm) Instance(gpuIndex int) (int, bool) {
	k := sort.Search(len(r.idx), func(k int) bool { return int(r.idx[k]) >= gpuIndex })
	if k < len(r.idx) && int(r.idx[k]) == gpuIndex {
		return int(r.inst[k]), true
	}
	return 0, false
}

// All iterates over the matched collectives in GPU event order, yielding
// the GPU event index and its split.
func (r *RankComm) All() iter.Seq2[int, Split] {
	return func(yield func(int, Split) bool) {
		for k, i := range r.idx {
			if !yield(int(i), r.splits[k]) {
				return
			}
		}
	}
}

// Unmatched returns the number of the rank's collectives in no matched
// instance.
func (r *RankComm) Unmatched() int { return r.Collectives - r.Matched }

func (r *RankComm) addMatched(it *item, s Split, instance int) {
	r.idx = append(r.idx, it.idx)
	r.splits = append(r.splits, s)
	r.inst = append(r.inst, int32(instance))
	r.Collectives++
	r.Matched++
	r.KernelNS += it.dur()
	r.TransferNS += s.TransferNS
	r.WaitNS += s.WaitNS
}

func (r *RankComm) addUnmatched(it *item) {
	r.Collectives++
	r.KernelNS += it.dur()
	r.UnmatchedNS += it.dur()
}

// sortSplits orders the matched collectives by GPU event index.
func (r *RankComm) sortSplits() {
	if sort.SliceIsSorted(r.idx, func(i, j int) bool { return r.idx[i] < r.idx[j] }) {
		return
	}
	sort.Sort(bySplitIndex{r})
}

type bySplitIndex struct{ r *RankComm }

func (b bySplitIndex) Len() int           { return len(b.r.idx) }
func (b bySplitIndex) Less(i, j int) bool { return b.r.idx[i] < b.r.idx[j] }
func (b bySplitIndex) Swap(i, j int) {
	b.r.idx[i], b.r.idx[j] = b.r.idx[j], b.r.idx[i]
	b.r.splits[i], b.r.splits[j] = b.r.splits[j], b.r.splits[i]
	b.r.inst[i], b.r.inst[j] = b.r.inst[j], b.r.inst[i]
}

// finishSingle records a lone rank's collectives, none of which can be
// split.
func (r *RankComm) finishSingle(seqs []*sequence) {
	for _, s := range seqs {
		for k := range s.items[0] {
			r.addUnmatched(&s.items[0][k])
		}
	}
	r.ClockKnown, r.ClockShared = true, true
}
