package watch

import (
	"errors"
	"io/fs"
	"sort"
	"time"

	"kinetoscope/analyze/crossrank"
	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// group is a set being assembled: complete rank files of one world size.
type group struct {
	world  int
	byRank map[int]*fileState
	keys   []string
}

// full reports whether every rank of the world is there.
func (g *group) full() bool { return len(g.byRank) >= g.world }

// missing returns the ranks of the world with no file.
func (g *group) missing() []int {
	var out []int
	for r := 0; r < g.world; r++ {
		if g.byRank[r] == nil {
			out = append(out, r)
		}
	}
	return out
}

// groups files the complete traces into sets: each goes to the first set
// of its world size that lacks its rank, else starts a new one (a second
// profile in the same directory). It also returns the truncated traces.
func (w *Watcher) groups(settled bool) ([]*group, []*trace) {
	var gs []*group
	var cut []*trace
	for _, t := range w.traces() {
		if t.truncated() {
			cut = append(cut, t)
			continue
		}
		f := t.usable(settled)
		if f == nil {
			continue
		}
		world := max(f.WorldSize, 1)
		g := findGroup(gs, world, f.Rank)
		if g == nil {
			g = &group{world: world, byRank: map[int]*fileState{}}
			gs = append(gs, g)
		}
		g.byRank[f.Rank] = f
		g.keys = append(g.keys, t.key)
	}
	return gs, cut
}

// findGroup returns the first group of world size world without rank.
func findGroup(gs []*group, world, rank int) *group {
	for _, g := range gs {
		if g.world == world && g.byRank[rank] == nil && !g.full() {
			return g
		}
	}
	return nil
}

// readySets analyses the sets that are full, and, once the directory has
// been quiet for the settle time, the others with what they have, naming
// the truncated files in the first of them.
func (w *Watcher) readySets(now time.Time) []*SetReport {
	settled := now.Sub(w.quietAt) >= w.opt.Settle
	gs, cut := w.groups(settled)
	var out []*SetReport
	for _, g := range gs {
		if !g.full() && !settled {
			continue
		}
		s := w.analyse(g)
		if s == nil {
			continue
		}
		if settled && len(cut) > 0 {
			for _, t := range cut {
				s.Truncated = append(s.Truncated, t.files[0].Path)
				w.consumed[t.key] = true
			}
			cut = nil
		}
		out = append(out, s)
	}
	return out
}

// analyse runs the driver on a group and marks its traces reported; it
// returns nil when a file vanished meanwhile (a .json that the compressor
// removed), to try again on the next look.
func (w *Watcher) analyse(g *group) *SetReport {
	ranks := make([]int, 0, len(g.byRank))
	for r := range g.byRank {
		ranks = append(ranks, r)
	}
	sort.Ints(ranks)
	s := &SetReport{WorldSize: g.world, Missing: g.missing()}
	for _, r := range ranks {
		s.Files = append(s.Files, g.byRank[r].Path)
	}
	run, err := driver.Analyze(ingest.FromPaths(s.Files), w.opt.Analyze)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	s.Run, s.Err = run, err
	if run != nil && run.Set != nil {
		s.Start = setStart(run.Set)
	}
	for _, k := range g.keys {
		w.consumed[k] = true
	}
	w.sets++
	s.Index = w.sets
	return s
}

// setStart returns when a set's profile began: the earliest first GPU
// event of its traces, on the Unix clock; zero when a trace's clock is not
// the epoch's.
func setStart(set *ingest.Set) time.Time {
	var first int64
	for _, t := range set.Traces {
		if t.GPU.Len() == 0 {
			continue
		}
		ns, ok := crossrank.EpochNS(t, t.GPU.At(0).Start)
		if !ok {
			return time.Time{}
		}
		if first == 0 || ns < first {
			first = ns
		}
	}
	if first == 0 {
		return time.Time{}
	}
	return time.Unix(0, first).UTC()
}
