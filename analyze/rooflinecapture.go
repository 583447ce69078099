package analyze

import (
	"cmp"
	"fmt"
	"slices"

	"kinetoscope/ingest"
)

// captureFor returns the capture trace of t's rank among captures: the one
// of the same rank, or the only one when t's rank or its rank is unknown;
// nil when none is.
func captureFor(t *ingest.Trace, captures []*ingest.Trace) *ingest.Trace {
	var same []*ingest.Trace
	for _, c := range captures {
		if c.Rank == t.Rank || (len(captures) == 1 && (c.Rank < 0 || t.Rank < 0)) {
			same = append(same, c)
		}
	}
	if len(same) != 1 {
		return nil
	}
	return same[0]
}

// captureShapes gives the kernels of each graph replay of p, in a step
// with roofline rows, the ops of the graph p.capture recorded, launch j of
// the capture doing the work of replayed kernel j (in start order). A
// replay takes a graph only when exactly one captured graph launched as
// many kernels as it ran (several: the one captured at the step's tokens),
// since the capture names no kernel; its kernels' shares of an op are
// their parts of the op's kernel time in that replay. It returns why the
// kernels of each replay that took none (by the index of its
// cudaGraphLaunch).
func captureShapes(p *rankPass, steps []Step, links []opLink) map[int32]string {
	if p.capture == nil {
		return nil
	}
	graphs := p.capture.CapturedGraphs()
	why := map[int32]string{}
	for launch, ks := range graphReplays(p, steps) {
		g, reason := matchGraph(graphs, len(ks), steps[p.stepOf[ks[0]]].Tokens)
		if g == nil {
			why[launch] = reason
			continue
		}
		ns := map[int32]int64{}
		for j, i := range ks {
			if op := g.Launches[j].Op; op >= 0 {
				ns[op] += p.t.GPU.At(int(i)).Dur
			}
		}
		for j, i := range ks {
			if op := g.Launches[j].Op; op >= 0 && links[i].op < 0 {
				links[i] = opLink{op: op, share: float64(p.t.GPU.At(int(i)).Dur) / float64(max(ns[op], 1)), captured: true}
			}
		}
	}
	return why
}

// graphReplays returns the kernels of each graph replay of p in a step
// with roofline rows, in start order, by the index of its cudaGraphLaunch.
func graphReplays(p *rankPass, steps []Step) map[int32][]int32 {
	cache := map[ingest.StrID]bool{}
	out := map[int32][]int32{}
	for i := range p.t.GPU.Len() {
		j := p.launchAt[i]
		if j < 0 || !inWorkStep(p, i, steps) || !graphLaunch(p.t, p.t.Launches.At(int(j)), cache) {
			continue
		}
		out[j] = append(out[j], int32(i))
	}
	for _, ks := range out {
		slices.SortStableFunc(ks, func(a, b int32) int { return cmp.Compare(p.t.GPU.At(int(a)).Start, p.t.GPU.At(int(b)).Start) })
	}
	return out
}

// matchGraph returns the captured graph of graphs that a replay of n
// kernels in a step of tokens ran, or why none is taken.
func matchGraph(graphs []ingest.CapturedGraph, n, tokens int) (*ingest.CapturedGraph, string) {
	var same []*ingest.CapturedGraph
	for i := range graphs {
		if len(graphs[i].Launches) == n {
			same = append(same, &graphs[i])
		}
	}
	if len(same) > 1 {
		same = slices.DeleteFunc(same, func(g *ingest.CapturedGraph) bool { return g.Tokens != int64(tokens) })
	}
	switch {
	case len(same) == 1:
		return same[0], ""
	case len(graphs) == 0:
		return nil, GapCaptureNone
	case len(same) == 0:
		return nil, fmt.Sprintf("%s: none of its %d graphs launched the %d kernels a replay ran (%s)",
			GapCaptureMismatch, len(graphs), n, launchCounts(graphs))
	}
	return nil, fmt.Sprintf("%s: %d of its graphs launched the %d kernels a replay ran, none captured at the step's %d tokens alone",
		GapCaptureMismatch, len(same), n, tokens)
}

// launchCounts lists the graphs' kernel launch counts ("126, 130").
func launchCounts(graphs []ingest.CapturedGraph) string {
	s := ""
	for i, g := range graphs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(len(g.Launches))
	}
	return s
}
