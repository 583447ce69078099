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

// captureWarnings returns a warning for each capture trace no pass took
// (each took its rank's, captureFor).
func captureWarnings(passes []*rankPass, captures []*ingest.Trace) []string {
	used := map[*ingest.Trace]bool{}
	for _, p := range passes {
		used[p.capture] = true
	}
	var w []string
	for _, c := range captures {
		if !used[c] {
			w = append(w, fmt.Sprintf("%s: CUDA-graph capture trace of rank %d matches no one trace of the run by rank: its shapes are not used", c.Path, c.Rank))
		}
	}
	return w
}

// captureShapes gives the kernels of each graph replay of p, in a step
// with roofline rows, the ops of the graph p.capture recorded, launch j of
// the capture doing the work of replayed kernel j (in start order). The
// capture names no kernel, so a replay takes a graph by its kernel count
// (matchGraph); its kernels' shares of an op are their parts of the op's
// kernel time in that replay. It returns why the kernels of each replay
// that took none did not (by the index of its cudaGraphLaunch).
func captureShapes(p *rankPass, steps []Step, links []opLink) map[int32]string {
	if p.capture == nil {
		return nil
	}
	graphs := p.capture.CapturedGraphs()
	why := map[int32]string{}
	for launch, ks := range graphReplays(p, steps) {
		same := func(a, b *ingest.CapturedGraph) bool { return sameWork(p.capture, a, b) }
		g, reason := matchGraph(graphs, len(ks), steps[p.stepOf[ks[0]]].Tokens, same)
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
// kernels in a step of tokens ran, or why none is taken: the one graph
// that launched n kernels; among several, the one captured at the step's
// tokens, else at the fewest tokens above them (an engine pads a batch up
// to the next size it captured, as vLLM does), else, when they all do the
// same work (the same ops with the same shapes, as a piecewise capture's
// identical layers do), the first.
func matchGraph(graphs []ingest.CapturedGraph, n, tokens int, same func(a, b *ingest.CapturedGraph) bool) (*ingest.CapturedGraph, string) {
	var cands []*ingest.CapturedGraph
	for i := range graphs {
		if len(graphs[i].Launches) == n {
			cands = append(cands, &graphs[i])
		}
	}
	if len(cands) > 1 {
		cands = byTokens(cands, int64(tokens))
	}
	if len(cands) > 1 && !slices.ContainsFunc(cands[1:], func(g *ingest.CapturedGraph) bool { return !same(cands[0], g) }) {
		cands = cands[:1]
	}
	switch {
	case len(cands) == 1:
		return cands[0], ""
	case len(graphs) == 0:
		return nil, GapCaptureNone
	case len(cands) == 0:
		return nil, fmt.Sprintf("%s: none of its %d graphs launched the %d kernels a replay ran (%s)",
			GapCaptureMismatch, len(graphs), n, launchCounts(graphs))
	}
	return nil, fmt.Sprintf("%s: %d of its graphs launched the %d kernels a replay ran, with different ops, and the step's %d tokens pick none",
		GapCaptureMismatch, len(cands), n, tokens)
}

// byTokens returns the graphs of gs captured at tokens, else those at the
// fewest tokens above them, else gs.
func byTokens(gs []*ingest.CapturedGraph, tokens int64) []*ingest.CapturedGraph {
	var at, above []*ingest.CapturedGraph
	for _, g := range gs {
		switch {
		case g.Tokens == tokens:
			at = append(at, g)
		case g.Tokens > tokens && (len(above) == 0 || g.Tokens < above[0].Tokens):
			above = append(above[:0], g)
		case g.Tokens > tokens && g.Tokens == above[0].Tokens:
			above = append(above, g)
		}
	}
	switch {
	case len(at) > 0:
		return at
	case len(above) > 0:
		return above
	}
	return gs
}

// sameWork says whether captured graphs a and b of trace c launch the same
// ops with the same input shapes and types, launch by launch.
func sameWork(c *ingest.Trace, a, b *ingest.CapturedGraph) bool {
	if len(a.Launches) != len(b.Launches) {
		return false
	}
	for j := range a.Launches {
		x, y := a.Launches[j].Op, b.Launches[j].Op
		if (x < 0) != (y < 0) {
			return false
		}
		if x >= 0 && !sameOp(c.Shapes.Ops.At(int(x)), c.Shapes.Ops.At(int(y))) {
			return false
		}
	}
	return true
}

// sameOp says whether two ops of one trace have the same name and inputs
// (dims, types and concrete values).
func sameOp(x, y *ingest.ShapedOp) bool {
	return x.Name == y.Name && slices.EqualFunc(x.Inputs, y.Inputs, func(a, b ingest.OpInput) bool {
		av, aok := a.Float()
		bv, bok := b.Float()
		ai, _ := a.Int()
		bi, _ := b.Int()
		return a.Kind == b.Kind && a.Type == b.Type && a.ListLen == b.ListLen && a.Value == b.Value &&
			slices.Equal(a.Dims, b.Dims) && ai == bi && aok == bok && av == bv
	})
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
