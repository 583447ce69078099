// Package crossrank aligns collective kernels across the ranks of a
// multi-GPU run and splits each rank's communication time into transfer and
// wait.
//
// A collective kernel starts on each rank when that rank reaches it and then
// spins until the last rank arrives. Matched across ranks and put on one
// clock, the time all ranks are inside the collective is transfer and the
// rest of each rank's kernel is wait:
//
//	arrival    = latest start among the ranks
//	first end  = earliest end among the ranks
//	transfer   = first end - arrival (at least 0), the same on every rank
//	wait on r  = duration on r - transfer
//	           = (arrival - start on r) + (end on r - first end)
//
// The second term of the wait, the spread of the ends, is small: about a
// microsecond on one host over NVLink, up to about 16 µs through host
// shared memory.
//
// Align splits each rank's collectives into sequences by process group
// (from the kernels' collective args, else the default group of
// distributedInfo, else all ranks) and kind, and pairs each rank's sequence
// with that of the group's lowest rank by order and identity. First the
// two ranks' clocks are related: two traces relative to one
// baseTimeNanoseconds share their host's clock; otherwise the candidate
// offsets (none, the one NCCL sequence numbers give, and those of pairing
// by order at shifts around the start and around where a shared clock puts
// the other rank's first collective) are scored by how many collectives
// they pair, and the best is kept if it pairs at least half of what it
// could. Then the collectives of each rank that lie outside the other's
// trace window (its earliest record to its latest, on the related clock)
// are set aside: that profiler was not running, a rank whose profiler
// started later misses the collectives before its start. The rest are
// walked in order: two pair when kernel names, message sizes, data types
// and NCCL sequence numbers (when present) agree and they ran together
// (ends within Options.EndToleranceNS, kernels overlapping for the kinds
// whose ranks all wait for each other), each the nearest for the other,
// so that a collective lost on one rank leaves its partner alone instead
// of shifting every later pair. No arrival skew, however long, moves an
// end: every rank leaves a collective together. An instance matches when
// every rank of its group has it. What cannot be paired is counted and
// described with its cause (outside a trace window, no counterpart inside
// it, a difference of identity, clocks that could not be related), never
// paired wrong.
package crossrank

import (
	"errors"
	"fmt"
	"sort"

	"kinetoscope/ingest"
)

// Clock modes of an Alignment.
const (
	ClockShared    = "shared"    // every rank's matched ends agree on one clock
	ClockEstimated = "estimated" // some rank's offset was estimated from matched ends
	ClockSingle    = "single"    // one rank: nothing to align
	// ClockUnknown: no two ranks' clocks could be related (no collectives
	// in common, or too few ending together at any one offset).
	ClockUnknown = "unknown"
)

// SingleRankNote is Alignment.Note for a one-rank input.
const SingleRankNote = "one rank: transfer and wait cannot be told apart from one rank"

// Classifier says whether a GPU event is a collective and of which kind
// (a bucket id such as "allreduce"); i is ev's index in t.GPU. Only events
// of the same kind are matched with each other.
type Classifier func(t *ingest.Trace, i int, ev *ingest.GPUEvent) (kind string, ok bool)

// Options tune Align. The zero value gives the defaults.
type Options struct {
	// LookAhead bounds the shifts (in collectives) at which the pairing by
	// order proposes clock offsets when two ranks' clocks are not known to
	// be shared: within LookAhead of both profiles starting at one
	// collective, and of where the clocks taken as shared put the other
	// rank's first collective. Default 16.
	LookAhead int
	// EndToleranceNS is how far apart the ends of one collective may be on
	// two ranks (after the clock offset) for them to be paired. Default
	// 50 µs: on one host they agree within a few µs over NVLink, within
	// about 16 µs through host shared memory. Each pair must also be the
	// nearest for both ranks, so a collective missing on one rank does not
	// shift later pairs.
	EndToleranceNS int64
	// SharedClockNS is how far the median difference of the ends may be
	// from zero for two ranks to be taken as sharing one clock; past it the
	// offset is estimated. Default 5 µs.
	SharedClockNS int64
	// MaxMismatches bounds Alignment.Mismatches. Default 20.
	MaxMismatches int
}

func (o Options) withDefaults() Options {
	if o.LookAhead <= 0 {
		o.LookAhead = 16
	}
	if o.EndToleranceNS <= 0 {
		o.EndToleranceNS = 50_000
	}
	if o.SharedClockNS <= 0 {
		o.SharedClockNS = 5_000
	}
	if o.MaxMismatches <= 0 {
		o.MaxMismatches = 20
	}
	return o
}

// Alignment is the result of Align.
type Alignment struct {
	// Ranks is parallel to the traces given to Align.
	Ranks []*RankComm
	// Matched counts collective instances matched across all ranks of their
	// group; Unmatched counts collective GPU events (summed over ranks) that
	// are in no matched instance.
	Matched   int
	Unmatched int
	// Clock is ClockShared, ClockEstimated, ClockUnknown or ClockSingle.
	Clock string
	// Stragglers lists the ranks that arrived last at matched collectives,
	// most often first.
	Stragglers []Straggler
	// Mismatches describes, in words, collectives that could not be paired.
	Mismatches []string
	// Note is SingleRankNote for one trace, else empty. When that trace is
	// one rank of several, its collectives count as Unmatched and
	// Mismatches names the missing ranks.
	Note string
	// Warnings are problems with the input that did not stop the alignment.
	Warnings []string
	// MissingRanks lists, in order, the ranks that a process group of the
	// traces declares (world size, NCCL group ranks) but that no trace is
	// of; nil when every rank has a trace.
	MissingRanks []int
}

// Straggler is a rank that arrived last at matched collectives.
type Straggler struct {
	Rank      int
	LateCount int   // instances at which it arrived last
	LateNS    int64 // sum of how much later it was than the second-latest rank
}

// Align matches the collectives of traces (one per rank) across ranks and
// splits their time into transfer and wait. classify picks the collectives;
// nil means defaultClassify.
func Align(traces []*ingest.Trace, classify Classifier, opt Options) (*Alignment, error) {
	if len(traces) == 0 {
		return nil, errors.New("crossrank: no traces")
	}
	for i, t := range traces {
		if t == nil || t.Strings == nil {
			return nil, fmt.Errorf("crossrank: trace %d is empty", i)
		}
	}
	if classify == nil {
		classify = defaultClassify
	}
	opt = opt.withDefaults()
	ranks, warn, err := rankNumbers(traces)
	if err != nil {
		return nil, err
	}
	in := collect(traces, ranks, classify)
	a := &Alignment{Ranks: make([]*RankComm, len(traces)), Warnings: warn, MissingRanks: missingRanks(in)}
	for i := range traces {
		a.Ranks[i] = newRankComm(ranks[i], in.counts[i])
		a.Ranks[i].TimeBaseNS = in.bases[i]
	}
	if len(traces) == 1 {
		alignSingle(a, in)
		return a, nil
	}
	m := newMatcher(in, opt)
	m.run(a)
	return a, nil
}

// alignSingle fills a for one trace. When the trace says it is one rank of
// several, its collectives count as unmatched and the missing ranks are
// named.
func alignSingle(a *Alignment, in *input) {
	a.Clock, a.Note = ClockSingle, SingleRankNote
	r := a.Ranks[0]
	r.finishSingle(in.seqs)
	if len(a.MissingRanks) == 0 || r.Collectives == 0 {
		return
	}
	all := append([]int{r.Rank}, a.MissingRanks...)
	sort.Ints(all)
	a.Unmatched = r.Collectives
	a.Mismatches = append(a.Mismatches, fmt.Sprintf(
		"only rank %d of %s has a trace: no trace for rank(s) %s, so none of its %d collectives can be split",
		r.Rank, rankRanges(all), rankRanges(a.MissingRanks), r.Collectives))
}

// missingRanks returns, in order, the members of the declared process
// groups that no trace is of.
func missingRanks(in *input) []int {
	have := make(map[int]bool, len(in.ranks))
	for _, r := range in.ranks {
		have[r] = true
	}
	var missing []int
	for _, g := range in.groups {
		for _, m := range g.members {
			if !have[m] && g.known {
				have[m] = true
				missing = append(missing, m)
			}
		}
	}
	sort.Ints(missing)
	return missing
}

// rankNumbers returns the rank of each trace. When a rank is unknown the
// position is used instead, with a warning; two traces of one rank are an
// error.
func rankNumbers(traces []*ingest.Trace) ([]int, []string, error) {
	ranks := make([]int, len(traces))
	seen := make(map[int]string, len(traces))
	for i, t := range traces {
		if t.Rank < 0 {
			return positionRanks(traces), []string{fmt.Sprintf(
				"rank of %s unknown: ranks taken from the order of the files", t.Path)}, nil
		}
		if p, ok := seen[t.Rank]; ok {
			return nil, nil, fmt.Errorf("crossrank: %s and %s are both rank %d", p, t.Path, t.Rank)
		}
		seen[t.Rank] = t.Path
		ranks[i] = t.Rank
	}
	return ranks, nil, nil
}

func positionRanks(traces []*ingest.Trace) []int {
	ranks := make([]int, len(traces))
	for i := range ranks {
		ranks[i] = i
	}
	return ranks
}

// sortStragglers orders stragglers by late count, then lateness, then rank.
func sortStragglers(s []Straggler) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].LateCount != s[j].LateCount {
			return s[i].LateCount > s[j].LateCount
		}
		if s[i].LateNS != s[j].LateNS {
			return s[i].LateNS > s[j].LateNS
		}
		return s[i].Rank < s[j].Rank
	})
}
