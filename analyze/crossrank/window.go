package crossrank

import (
	"math"

	"kinetoscope/ingest"
)

// window is the time a trace covers, from its earliest record's start to
// its latest record's end (absolute ns, the trace's own clock): the
// profiler ran at least that long. A collective of another rank that ends
// before this window starts, or starts after it ends, cannot have been
// recorded here.
type window struct{ start, end int64 }

// traceWindow returns the window of every timed record of t (GPU events,
// launches, annotations, python calls, comm ops), base added.
func traceWindow(t *ingest.Trace, base int64) window {
	w := window{start: math.MaxInt64, end: math.MinInt64}
	widen(&w, &t.GPU, func(e *ingest.GPUEvent) (int64, int64) { return e.Start, e.Dur })
	widen(&w, &t.Launches, func(e *ingest.Launch) (int64, int64) { return e.Start, e.Dur })
	widen(&w, &t.Annotations, func(e *ingest.Annotation) (int64, int64) { return e.Start, e.Dur })
	widen(&w, &t.PythonCalls, func(e *ingest.Annotation) (int64, int64) { return e.Start, e.Dur })
	widen(&w, &t.CommOps, func(e *ingest.CommOp) (int64, int64) { return e.Start, e.Dur })
	if w.start > w.end {
		return window{}
	}
	return window{start: w.start + base, end: w.end + base}
}

// widen extends w to cover every record of c.
func widen[T any](w *window, c *ingest.Chunks[T], at func(*T) (start, dur int64)) {
	for _, r := range c.All() {
		s, d := at(r)
		w.start = min(w.start, s)
		w.end = max(w.end, s+max(d, 0))
	}
}

// moved returns w on another clock, off ns later.
func (w window) moved(off int64) window { return window{start: w.start + off, end: w.end + off} }

// outside counts the items of its (ordered by end) that lie outside w:
// before, those that end before w starts; after, those that start after w
// ends; slack widens w on both sides. It returns the bounds of the items
// left between them.
func outside(its []item, w window, slack int64) (lo, hi int) {
	lo, hi = 0, len(its)
	for lo < hi && its[lo].end < w.start-slack {
		lo++
	}
	for hi > lo && its[hi-1].start > w.end+slack {
		hi--
	}
	return lo, hi
}
