package analyze

import (
	"slices"

	"kinetoscope/ingest"
)

// Tolerances of the timing checks.
const (
	// overlapToleranceNS: an event starting less than this before the end
	// of the previous event on its stream does not count as an overlap
	// (timestamp rounding, programmatic dependent launch on Hopper).
	overlapToleranceNS = 2_000
	// beforeLaunchToleranceNS: a GPU event may start this much before its
	// CPU launch call began before the clocks are said to disagree.
	beforeLaunchToleranceNS = 1_000
	// windowToleranceNS: a GPU event may lie this far outside the CPU
	// events' window (a queue still draining when the profiler stopped).
	windowToleranceNS = 1_000_000_000
)

// TimingCheck counts the GPU events of one rank whose times cannot be
// right: one stream runs one event at a time, a kernel starts after its
// launch, and nothing lasts longer than the trace.
type TimingCheck struct {
	// Overlaps counts GPU events that start before the previous event on
	// their stream has ended (by more than 2 µs): a negative gap, which
	// only clock or duration errors make. OverlapUS is the time they
	// overlap, summed: kernel time counts it twice.
	Overlaps  int     `json:"overlaps"`
	OverlapUS float64 `json:"overlap_us"`
	// Streams lists the streams with overlaps, most overlapped time first
	// (at most 5); Worst is the largest single overlap.
	Streams []StreamOverlap `json:"streams,omitempty"`
	Worst   *Overlap        `json:"worst,omitempty"`
	// BeforeLaunch counts GPU events that start more than 1 µs before
	// their CPU launch call (eager launches and graph replays; the CPU and
	// GPU clocks disagree), of Launched events with a launch in the trace;
	// BeforeLaunchMaxUS is the largest such lead.
	BeforeLaunch      int     `json:"before_launch"`
	Launched          int     `json:"launched"`
	BeforeLaunchMaxUS float64 `json:"before_launch_max_us"`
	// LongerThanStep counts GPU events lasting longer than their step
	// (its mark to the next); LongerThanTrace those lasting longer than
	// the trace's CPU window (first to last CPU event); OutsideWindow
	// those lying more than a second outside it. LongestUS is the longest
	// GPU event.
	LongerThanStep  int     `json:"longer_than_step"`
	LongerThanTrace int     `json:"longer_than_trace"`
	OutsideWindow   int     `json:"outside_window"`
	LongestUS       float64 `json:"longest_us"`
	// UnreadableTimes and NegativeDurations count the events ingest
	// dropped for their times (ingest.Counts); they are in no figure.
	UnreadableTimes   int64 `json:"unreadable_times"`
	NegativeDurations int64 `json:"negative_durations"`
}

// StreamOverlap is the overlap found on one GPU stream.
type StreamOverlap struct {
	Device    int     `json:"device"`
	Stream    int     `json:"stream"`
	Overlaps  int     `json:"overlaps"`
	OverlapUS float64 `json:"overlap_us"`
	MaxUS     float64 `json:"max_us"`
}

// Overlap is one GPU event overlapping the previous one on its stream.
type Overlap struct {
	Device    int     `json:"device"`
	Stream    int     `json:"stream"`
	Kernel    string  `json:"kernel"`
	Previous  string  `json:"previous"` // the event still running when it started
	StartUS   float64 `json:"start_us"` // trace time base
	OverlapUS float64 `json:"overlap_us"`
	Step      int     `json:"step"` // Step.Index, -1 outside every step
}

// streamState follows one stream through the events in file order.
type streamState struct {
	dev       int16
	stream    int32
	lastStart int64
	maxEnd    int64
	maxEndIdx int32
	unsorted  bool
	found     StreamOverlap
	worst     Overlap
	worstNS   int64
	// stepNS is the overlapped time per step, for the steps with any.
	stepNS map[int32]int64
}

// reset forgets what was found on the stream, to visit it again.
func (st *streamState) reset() {
	*st = streamState{dev: st.dev, stream: st.stream, lastStart: -1 << 63, maxEnd: -1 << 63, maxEndIdx: -1,
		found: StreamOverlap{Device: int(st.dev), Stream: int(st.stream)}}
}

// timingScan gathers the timing checks of one rank.
type timingScan struct {
	p       *rankPass
	streams []*streamState
	last    *streamState
	// overlapNS is the overlapped time per step.
	overlapNS []int64
	tc        TimingCheck
}

// checkTiming runs the timing checks over p's events: one pass in file
// order, and a sorted pass over each stream whose events are out of order.
func (p *rankPass) checkTiming() TimingCheck {
	ts := &timingScan{p: p, overlapNS: make([]int64, len(p.steps))}
	ts.tc.UnreadableTimes, ts.tc.NegativeDurations = p.t.Counts.UnreadableTimes, p.t.Counts.NegativeDurs
	lo, hi := cpuWindow(p.t)
	extent := p.stepExtents(hi)
	for i, ev := range p.t.GPU.All() {
		st := ts.stream(ev)
		if ev.Start < st.lastStart {
			st.unsorted = true
		}
		st.lastStart = ev.Start
		if !st.unsorted {
			ts.visit(st, int32(i), ev)
		}
		ts.tc.LongestUS = max(ts.tc.LongestUS, us(ev.Dur))
		if s := p.stepOf[i]; s >= 0 && ev.Dur > extent[s] {
			ts.tc.LongerThanStep++
		}
		if lo < hi {
			if ev.Dur > hi-lo {
				ts.tc.LongerThanTrace++
			}
			if ev.End() < lo-windowToleranceNS || ev.Start > hi+windowToleranceNS {
				ts.tc.OutsideWindow++
			}
		}
	}
	ts.resort()
	ts.finish()
	ts.beforeLaunch()
	p.overlapNS = ts.overlapNS
	return ts.tc
}

// stream returns the state of ev's stream, adding it when new.
func (ts *timingScan) stream(ev *ingest.GPUEvent) *streamState {
	if st := ts.last; st != nil && st.stream == ev.Stream && st.dev == ev.Device {
		return st
	}
	for _, st := range ts.streams {
		if st.stream == ev.Stream && st.dev == ev.Device {
			ts.last = st
			return st
		}
	}
	st := &streamState{dev: ev.Device, stream: ev.Stream}
	st.reset()
	ts.streams = append(ts.streams, st)
	ts.last = st
	return st
}

// visit takes the next event of a stream in start order.
func (ts *timingScan) visit(st *streamState, i int32, ev *ingest.GPUEvent) {
	end := ev.End()
	if st.maxEndIdx >= 0 && ev.Start < st.maxEnd-overlapToleranceNS {
		ov := min(st.maxEnd, end) - ev.Start
		st.found.Overlaps++
		st.found.OverlapUS += us(ov)
		if ov > st.worstNS {
			st.worstNS = ov
			prev := ts.p.t.GPU.At(int(st.maxEndIdx))
			st.worst = Overlap{Device: int(ev.Device), Stream: int(ev.Stream), Kernel: ts.p.t.Name(ev.Name),
				Previous: ts.p.t.Name(prev.Name), StartUS: us(ev.Start), OverlapUS: us(ov), Step: int(ts.p.stepOf[i])}
		}
		if s := ts.p.stepOf[i]; s >= 0 {
			if st.stepNS == nil {
				st.stepNS = make(map[int32]int64)
			}
			st.stepNS[s] += ov
		}
	}
	if end > st.maxEnd {
		st.maxEnd, st.maxEndIdx = end, i
	}
}

// resort redoes the overlap of every stream whose events were out of
// order in the file, in start order.
func (ts *timingScan) resort() {
	var redo []*streamState
	for _, st := range ts.streams {
		if st.unsorted {
			redo = append(redo, st)
		}
	}
	if len(redo) == 0 {
		return
	}
	idx := make(map[*streamState][]int32, len(redo))
	for i, ev := range ts.p.t.GPU.All() {
		for _, st := range redo {
			if st.stream == ev.Stream && st.dev == ev.Device {
				idx[st] = append(idx[st], int32(i))
			}
		}
	}
	for _, st := range redo {
		st.reset()
		ix := idx[st]
		slices.SortStableFunc(ix, func(a, b int32) int {
			sa, sb := ts.p.t.GPU.At(int(a)).Start, ts.p.t.GPU.At(int(b)).Start
			switch {
			case sa < sb:
				return -1
			case sa > sb:
				return 1
			}
			return 0
		})
		for _, i := range ix {
			ts.visit(st, i, ts.p.t.GPU.At(int(i)))
		}
	}
}

// finish sums the streams' findings: the totals, the streams with the
// most overlapped time, and the worst overlap.
func (ts *timingScan) finish() {
	tc := &ts.tc
	var worst *streamState
	for _, st := range ts.streams {
		if st.found.Overlaps == 0 {
			continue
		}
		st.found.MaxUS = us(st.worstNS)
		for s, ns := range st.stepNS {
			ts.overlapNS[s] += ns
		}
		tc.Overlaps += st.found.Overlaps
		tc.OverlapUS += st.found.OverlapUS
		tc.Streams = append(tc.Streams, st.found)
		if worst == nil || st.worstNS > worst.worstNS {
			worst = st
		}
	}
	slices.SortStableFunc(tc.Streams, func(a, b StreamOverlap) int {
		switch {
		case a.OverlapUS > b.OverlapUS:
			return -1
		case a.OverlapUS < b.OverlapUS:
			return 1
		}
		return 0
	})
	if len(tc.Streams) > maxListed {
		tc.Streams = tc.Streams[:maxListed]
	}
	if worst != nil {
		w := worst.worst
		tc.Worst = &w
	}
}

// beforeLaunch counts the GPU events that started before their CPU launch,
// from the launch delays the pass measured.
func (ts *timingScan) beforeLaunch() {
	count := func(ns []int64) {
		ts.tc.Launched += len(ns)
		for _, d := range ns {
			if d < -beforeLaunchToleranceNS {
				ts.tc.BeforeLaunch++
				ts.tc.BeforeLaunchMaxUS = max(ts.tc.BeforeLaunchMaxUS, us(-d))
			}
		}
	}
	count(ts.p.delays)
	count(ts.p.graphDelays())
}

// cpuWindow returns the first start and the last end of the trace's CPU
// launches and annotations; lo >= hi when it has none.
func cpuWindow(t *ingest.Trace) (lo, hi int64) {
	lo, hi = 1<<63-1, -1<<63
	for _, l := range t.Launches.All() {
		lo, hi = min(lo, l.Start), max(hi, l.Start+l.Dur)
	}
	for _, a := range t.Annotations.All() {
		if !a.GPU {
			lo, hi = min(lo, a.Start), max(hi, a.Start+a.Dur)
		}
	}
	return lo, hi
}

// stepExtents returns how long each step lasts on the CPU: from its mark
// to the next one, the last to the end of its mark or of the CPU window
// (end), whichever is later.
func (p *rankPass) stepExtents(end int64) []int64 {
	out := make([]int64, len(p.marks))
	for i, m := range p.marks {
		if i+1 < len(p.marks) {
			out[i] = p.marks[i+1].start - m.start
		} else {
			out[i] = max(m.end, end) - m.start
		}
	}
	return out
}
