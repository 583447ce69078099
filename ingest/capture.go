package ingest

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
)

// CapturedGraph is one CUDA graph as a capture trace recorded it: the
// kernel launch calls made on one thread between a cudaStreamBeginCapture
// and its cudaStreamEndCapture, in the order they were made, which is the
// order the graph's kernels run in when it is replayed (a stream capture
// records a chain). No kernel ran during the capture, so the trace names
// none: a launch carries only its call and the op that made it.
type CapturedGraph struct {
	Start, End int64 // ns: the begin and end capture calls
	Thread     int32
	// Launches are the kernel launches in call order.
	Launches []CapturedLaunch
	// Tokens are the token ids the graph's embedding looked up (0 when it
	// has none or the trace recorded no shapes): the batch it was
	// captured at.
	Tokens int64
}

// CapturedLaunch is one kernel launch of a captured graph.
type CapturedLaunch struct {
	Call StrID // the launch call (cudaLaunchKernel, cuLaunchKernelEx, ...)
	// Op is the op with shapes that launched it (an index into
	// Trace.Shapes.Ops), -1 for none.
	Op int32
}

// IsKernelLaunch says whether a runtime or driver call launches a kernel
// (cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel(Ex),
// cudaLaunchCooperativeKernel, hip(Ext)(Module)LaunchKernel).
func IsKernelLaunch(name string) bool {
	return strings.Contains(name, "LaunchKernel") || strings.Contains(name, "LaunchCooperativeKernel")
}

// CapturedGraphs returns the graphs a capture trace recorded, in the order
// they were captured. A driver launch made inside a runtime launch call
// on the same thread (the runtime calling the driver) is the same kernel
// and is counted once.
func (t *Trace) CapturedGraphs() []CapturedGraph {
	order := make([]int, t.Launches.Len())
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t.Launches.At(a).Start, t.Launches.At(b).Start) })
	byExt := t.Shapes.ByExternalID()
	open := map[int32]*CapturedGraph{} // by thread
	lastRuntime := map[int32]*Launch{}
	var out []CapturedGraph
	for _, i := range order {
		l := t.Launches.At(i)
		name := t.Name(l.Name)
		switch g := open[l.Thread]; {
		case strings.Contains(name, "StreamBeginCapture"):
			open[l.Thread] = &CapturedGraph{Start: l.Start, Thread: l.Thread}
		case g == nil:
		case strings.Contains(name, "StreamEndCapture"):
			g.End = l.Start
			g.Tokens = t.embeddingTokens(g)
			out = append(out, *g)
			delete(open, l.Thread)
		case IsKernelLaunch(name):
			if r := lastRuntime[l.Thread]; l.Kind == LaunchDriver && r != nil && l.Start >= r.Start && l.Start <= r.Start+r.Dur {
				continue
			}
			if l.Kind == LaunchRuntime {
				lastRuntime[l.Thread] = l
			}
			g.Launches = append(g.Launches, CapturedLaunch{Call: l.Name, Op: t.launchOp(l, byExt)})
		}
	}
	return out
}

// launchOp returns the op with shapes that made launch l (its External id,
// the call on the op's thread within its time), or -1.
func (t *Trace) launchOp(l *Launch, byExt map[int64]int) int32 {
	j, ok := byExt[l.ExternalID]
	if !ok || l.ExternalID == 0 {
		return -1
	}
	op := t.Shapes.Ops.At(j)
	if op.Thread != l.Thread || l.Start < op.Start || l.Start > op.Start+op.Dur {
		return -1
	}
	return int32(j)
}

// embeddingTokens returns the tokens of the first embedding on g's thread
// inside g's capture, 0 when none.
func (t *Trace) embeddingTokens(g *CapturedGraph) int64 {
	for _, e := range t.Embeddings.All() {
		if e.Thread == g.Thread && e.Start >= g.Start && e.Start <= g.End {
			return e.Tokens
		}
	}
	return 0
}

// WithCaptures returns in with the local trace files at paths added as
// CUDA-graph capture traces (Source.Capture), read beside its own: the
// graph replays of the rank each one names take their kernels' shapes
// from it. A path that is not a regular file makes an input whose
// OpenInput fails, saying so.
func (in Input) WithCaptures(paths []string) Input {
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			in.err = fmt.Errorf("capture trace: %w", err)
			return in
		case !st.Mode().IsRegular():
			in.err = fmt.Errorf("capture trace %s: not a regular file (%s)", p, st.Mode().Type())
			return in
		}
		if i := slices.IndexFunc(in.Sources, func(s Source) bool { return s.Name == p }); i >= 0 {
			in.Sources[i].Capture = true // found already (under a capture_traces directory, say)
			continue
		}
		src := localSource(p, st.Size())
		src.Capture = true
		in.Sources = append(in.Sources, src)
	}
	return in
}
