package crossrank

import (
	"fmt"
	"strconv"
	"strings"

	"kinetoscope/ingest"
)

// A scenario is a made-up multi-rank run: the true collective instances,
// and what the trace files show of them (missing ranks, dropped events,
// different sizes, clock shifts). want computes, independently of Align,
// which instances must match and their splits.
type scenario struct {
	world     int   // world size written in distributedInfo
	files     []int // ranks that have a trace
	instances []instance
	// drop removes an event: [rank, instance index].
	drop map[[2]int]bool
	// size overrides one event's message size: [rank, instance] -> nelems.
	size map[[2]int]int64
	// shift adds ns to every time of a rank (a different clock).
	shift map[int]int64
	// args says events carry collective args (sizes, process group).
	args bool
	// relative writes times relative to baseTimeNanoseconds.
	relative bool
	// noise on the tail of each gpu stream: a non-collective kernel per
	// instance.
	compute bool

	// index maps [rank, instance] to the event's index in Trace.GPU, filled
	// by traces.
	index map[[2]int]int
}

// instance is one collective as it truly happened.
type instance struct {
	kind  string
	ranks []int // the members
	// pg says the events name their process group; otherwise they belong
	// to the default group and ranks must be all ranks.
	pg     bool
	starts []int64 // per member, ns (true clock)
	end    int64
	nelems int64
}

// members returns the instance's members.
func (s *scenario) members(in *instance) []int { return in.ranks }

// endJitter is the small difference between ranks' ends of one collective.
func endJitter(rank, k int) int64 { return int64((rank*37 + k*11) % 900) }

// traces builds the scenario's traces.
func (s *scenario) traces() []*ingest.Trace {
	s.index = map[[2]int]int{}
	var ts []*ingest.Trace
	for _, r := range s.files {
		ts = append(ts, s.trace(r))
	}
	return ts
}

func (s *scenario) trace(rank int) *ingest.Trace {
	t := &ingest.Trace{Path: fmt.Sprintf("rank%d.json", rank), Rank: rank, Strings: ingest.NewStrings()}
	t.Meta.Distributed = ingest.Distributed{Present: true, Rank: rank, WorldSize: s.world}
	base := int64(0)
	if s.relative {
		t.Meta.BaseTimeNS = 1_700_000_000_000_000_000
		base = t.Meta.BaseTimeNS
	}
	for k := range s.instances {
		in := &s.instances[k]
		q := indexOf(s.members(in), rank)
		if q < 0 || s.drop[[2]int{rank, k}] {
			continue
		}
		start := in.starts[q] + s.shift[rank] - base
		end := in.end + endJitter(rank, k) + s.shift[rank] - base
		if s.compute {
			t.GPU.Append(ingest.GPUEvent{Start: start - 5000, Dur: 4000, Name: t.Strings.Intern("gemm_kernel"), Coll: ingest.NoCollective})
		}
		ev := ingest.GPUEvent{Start: start, Dur: end - start, Name: t.Strings.Intern(kernelName(in.kind)),
			Stream: int32(7 + rank), Coll: ingest.NoCollective}
		if s.args {
			ev.Coll = int32(len(t.Collectives))
			t.Collectives = append(t.Collectives, s.collArgs(t, in, rank, k))
		}
		s.index[[2]int{rank, k}] = t.GPU.Len()
		t.GPU.Append(ev)
	}
	return t
}

func (s *scenario) collArgs(t *ingest.Trace, in *instance, rank, k int) ingest.CollectiveArgs {
	n := in.nelems
	if v, ok := s.size[[2]int{rank, k}]; ok {
		n = v
	}
	a := ingest.CollectiveArgs{Name: t.Strings.Intern(in.kind), InNelems: n, OutNelems: n,
		Dtype: t.Strings.Intern("BFloat16"), SeqNum: -1}
	if in.pg {
		a.PGName = t.Strings.Intern(pgName(in.ranks))
		a.PGRanks = t.Strings.Intern(rankList(in.ranks))
		a.GroupSize = int32(len(in.ranks))
	}
	return a
}

func kernelName(kind string) string {
	return "ncclDevKernel_" + kind + "_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
}

func pgName(ranks []int) string { return "pg" + strings.Join(strings.Fields(fmt.Sprint(ranks)), "") }

func rankList(ranks []int) string {
	parts := make([]string, len(ranks))
	for i, r := range ranks {
		parts[i] = strconv.Itoa(r)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func indexOf(xs []int, x int) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// expected is what Align must find: per rank the splits of matched events,
// by instance, and the totals.
type expected struct {
	matched   int
	unmatched int
	// split by rank and instance index, for matched ones.
	split map[int]map[int]Split
	late  map[int]Straggler
}

// want computes the expected result from the truth: an instance matches
// when every member has a trace, none dropped it and all sizes agree.
func (s *scenario) want() expected {
	e := expected{split: map[int]map[int]Split{}, late: map[int]Straggler{}}
	for k := range s.instances {
		in := &s.instances[k]
		ms := s.members(in)
		present, ok := 0, true
		for _, r := range ms {
			has := indexOf(s.files, r) >= 0 && !s.drop[[2]int{r, k}]
			if has {
				present++
			}
			if _, bad := s.size[[2]int{r, k}]; !has || bad {
				ok = false
			}
		}
		if !ok {
			e.unmatched += present
			continue
		}
		e.matched++
		s.wantInstance(&e, in, k)
	}
	return e
}

func (s *scenario) wantInstance(e *expected, in *instance, k int) {
	ms := s.members(in)
	arrival, last, second := int64(-1), -1, int64(-1)
	for q, st := range in.starts {
		if st > arrival {
			second, arrival, last = arrival, st, ms[q]
		} else if st > second {
			second = st
		}
	}
	firstEnd := in.end + endJitter(ms[0], k)
	for _, r := range ms {
		firstEnd = min(firstEnd, in.end+endJitter(r, k))
	}
	transfer := max(firstEnd-arrival, 0)
	for q, r := range ms {
		dur := in.end + endJitter(r, k) - in.starts[q]
		if e.split[r] == nil {
			e.split[r] = map[int]Split{}
		}
		e.split[r][k] = Split{WaitNS: dur - transfer, TransferNS: transfer}
	}
	if len(ms) > 1 && arrival > second {
		st := e.late[last]
		st.Rank = last
		st.LateCount++
		st.LateNS += arrival - second
		e.late[last] = st
	}
}

// regular builds n instances of kind over ranks every period ns, rank r
// arriving late by lateness(r, k) ns and the transfer lasting 8 µs.
func regular(kind string, ranks []int, pg bool, n int, t0, period int64, nelems int64, lateness func(r, k int) int64) []instance {
	var out []instance
	for k := range n {
		in := instance{kind: kind, ranks: ranks, pg: pg, nelems: nelems}
		base := t0 + int64(k)*period
		maxStart := int64(0)
		for _, r := range ranks {
			st := base + lateness(r, k)
			in.starts = append(in.starts, st)
			maxStart = max(maxStart, st)
		}
		in.end = maxStart + 8000
		out = append(out, in)
	}
	return out
}
