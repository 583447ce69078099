package crossrank

import (
	"sort"

	"kinetoscope/ingest"
)

// span is the time of one record of a trace, in the trace's time base, as
// a damage sees it: coll is the record's position among the trace's
// collectives in start order, -1 for any other record.
type span struct {
	start, dur int64
	coll       int
}

// editFunc changes a record's span in place and says whether to keep it.
type editFunc func(s *span) bool

// edited returns a copy of t with every timed record (GPU events, launches,
// annotations, python calls, comm ops) passed through f, and, for each GPU
// event kept, its index in t.
func edited(t *ingest.Trace, f editFunc) (*ingest.Trace, []int) {
	c := *t
	order := collectiveOrder(t)
	var kept []int
	c.GPU = ingest.Chunks[ingest.GPUEvent]{}
	for i, ev := range t.GPU.All() {
		e := *ev
		coll, ok := order[i]
		if !ok {
			coll = -1
		}
		if editSpan(&e.Start, &e.Dur, coll, f) {
			c.GPU.Append(e)
			kept = append(kept, i)
		}
	}
	c.Launches = editColumn(t.Launches, func(l *ingest.Launch) (*int64, *int64) { return &l.Start, &l.Dur }, f)
	c.Annotations = editColumn(t.Annotations, func(a *ingest.Annotation) (*int64, *int64) { return &a.Start, &a.Dur }, f)
	c.PythonCalls = editColumn(t.PythonCalls, func(a *ingest.Annotation) (*int64, *int64) { return &a.Start, &a.Dur }, f)
	c.CommOps = editColumn(t.CommOps, func(o *ingest.CommOp) (*int64, *int64) { return &o.Start, &o.Dur }, f)
	return &c, kept
}

// editColumn copies the records of src that f keeps, with their spans as f
// left them.
func editColumn[T any](src ingest.Chunks[T], at func(*T) (start, dur *int64), f editFunc) ingest.Chunks[T] {
	var out ingest.Chunks[T]
	for _, r := range src.All() {
		v := *r
		if start, dur := at(&v); editSpan(start, dur, -1, f) {
			out.Append(v)
		}
	}
	return out
}

func editSpan(start, dur *int64, coll int, f editFunc) bool {
	s := span{start: *start, dur: *dur, coll: coll}
	if !f(&s) {
		return false
	}
	*start, *dur = s.start, s.dur
	return true
}

// collectiveOrder maps the GPU index of each of t's collectives to its
// position among them in start order.
func collectiveOrder(t *ingest.Trace) map[int]int {
	idx := collectiveIndices(t)
	sort.SliceStable(idx, func(x, y int) bool { return t.GPU.At(idx[x]).Start < t.GPU.At(idx[y]).Start })
	m := make(map[int]int, len(idx))
	for k, i := range idx {
		m[i] = k
	}
	return m
}

// collectiveSpans returns t's collectives in start order.
func collectiveSpans(t *ingest.Trace) []span {
	var out []span
	for i, k := range collectiveOrder(t) {
		ev := t.GPU.At(i)
		out = append(out, span{start: ev.Start, dur: ev.Dur, coll: k})
	}
	sort.Slice(out, func(x, y int) bool { return out[x].coll < out[y].coll })
	return out
}

// A damage is something that happens to a real multi-rank trace set: it
// returns the damaged traces and, per trace, the original GPU index of
// each GPU event kept.
type damage struct {
	name  string
	apply func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int)
	// reason is a substring some mismatch must hold when collectives are
	// left unmatched; "" when none may be.
	reason string
}

// editRanks applies one edit per trace (nil: unchanged).
func editRanks(ts []*ingest.Trace, fs ...editFunc) ([]*ingest.Trace, [][]int) {
	out := make([]*ingest.Trace, len(ts))
	maps := make([][]int, len(ts))
	for i, t := range ts {
		f := editFunc(func(*span) bool { return true })
		if i < len(fs) && fs[i] != nil {
			f = fs[i]
		}
		out[i], maps[i] = edited(t, f)
	}
	return out, maps
}

// firstWait makes every other rank's first collective wait d ns longer for
// the late rank: on the late rank everything from its first collective on
// happens d later; on the others everything after their first
// collective's start, which ends d later.
func firstWait(late int, d int64) func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
	return func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
		fs := make([]editFunc, len(ts))
		for i, t := range ts {
			first := collectiveSpans(t)[0].start
			if i == late {
				fs[i] = delayFrom(first, d)
			} else {
				fs[i] = waitAtFirst(first, d)
			}
		}
		return editRanks(ts, fs...)
	}
}

// delayFrom moves every record that starts at from or later d on, and
// stretches the ones around from.
func delayFrom(from, d int64) editFunc {
	return func(s *span) bool {
		switch {
		case s.start >= from:
			s.start += d
		case s.start+s.dur > from:
			s.dur += d
		}
		return true
	}
}

// waitAtFirst stretches the first collective, which starts at first, by d
// and moves everything that starts later d on.
func waitAtFirst(first, d int64) editFunc {
	return func(s *span) bool {
		switch {
		case s.coll == 0:
			s.dur += d
		case s.start > first:
			s.start += d
		case s.start+s.dur > first:
			s.dur += d // a CPU range around the wait
		}
		return true
	}
}

// lateStart starts rank's profiler just before its k-th collective (from
// 0): every record that began earlier is lost.
func lateStart(rank, k int) func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
	return func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
		fs := make([]editFunc, len(ts))
		cut := collectiveSpans(ts[rank])[k].start - 1_000
		fs[rank] = func(s *span) bool { return s.start >= cut }
		return editRanks(ts, fs...)
	}
}

// earlyStop stops rank's profiler just after the end of its collective
// that has k after it: every record that had not ended is lost.
func earlyStop(rank, k int) func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
	return func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
		fs := make([]editFunc, len(ts))
		cs := collectiveSpans(ts[rank])
		last := cs[len(cs)-1-k]
		cut := last.start + last.dur + 1_000
		fs[rank] = func(s *span) bool { return s.start+s.dur <= cut }
		return editRanks(ts, fs...)
	}
}

// dropOne loses rank's k-th collective (CUPTI dropped a record).
func dropOne(rank, k int) func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
	return func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
		fs := make([]editFunc, len(ts))
		fs[rank] = func(s *span) bool { return s.coll != k }
		return editRanks(ts, fs...)
	}
}

// onOtherHost moves rank's trace to another host's clock: its base one
// second on and every time d later, so its absolute times are d + 1 s
// ahead.
func onOtherHost(rank int, d int64) func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
	return func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
		fs := make([]editFunc, len(ts))
		fs[rank] = func(s *span) bool {
			s.start += d
			return true
		}
		out, maps := editRanks(ts, fs...)
		out[rank].Meta.BaseTimeNS += 1_000_000_000
		return out, maps
	}
}

// then applies two damages one after the other.
func then(first, second func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int)) func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
	return func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
		mid, m1 := first(ts)
		out, m2 := second(mid)
		for i := range m2 {
			for k, j := range m2[i] {
				m2[i][k] = m1[i][j]
			}
		}
		return out, m2
	}
}

// epochTimes writes every trace's times as Unix-epoch times without a
// base, as older Kineto versions do: ranks on one host then share a clock
// that nothing in the files says is shared.
func epochTimes(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) {
	fs := make([]editFunc, len(ts))
	for i, t := range ts {
		base := TimeBaseNS(t)
		fs[i] = func(s *span) bool {
			s.start += base
			return true
		}
	}
	out, maps := editRanks(ts, fs...)
	for _, t := range out {
		t.Meta.BaseTimeNS = 0
	}
	return out, maps
}
