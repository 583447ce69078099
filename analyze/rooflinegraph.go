package analyze

import (
	"cmp"
	"hash/maphash"
	"slices"

	"kinetoscope/ingest"
)

// opLink is the op whose work a kernel does a share of: its index in
// Trace.Shapes.Ops (-1: none) and the share, the kernel's part of the
// op's kernel time. A kernel replayed from a CUDA graph takes the op of
// its launch in the graph's capture trace (captured: op indexes
// rankPass.capture's Shapes.Ops), else borrows the link of the kernel at
// its place in an eager step (borrowed).
type opLink struct {
	op       int32
	share    float64
	borrowed bool
	captured bool
}

// kernelLinks returns the op link of each GPU event of p in a step with
// roofline rows: its own op's (linkOps), or, for a kernel of a step
// replayed from a CUDA graph, its launch's op in the capture trace
// (captureShapes), else the one borrowed from an eager step of the same
// trace (borrowShapes); and why the replays that took no capture's ops
// did not, by the index of their cudaGraphLaunch.
func kernelLinks(p *rankPass, steps []Step) ([]opLink, map[int32]string) {
	links := make([]opLink, len(p.opOf))
	for i, op := range p.opOf {
		links[i].op = op
		if op >= 0 {
			links[i].share = float64(p.t.GPU.At(i).Dur) / float64(max(p.opNS[op], 1))
		}
	}
	why := captureShapes(p, steps, links)
	borrowShapes(p, steps, links)
	return links, why
}

// borrowShapes gives the kernels of each step replayed from a CUDA graph
// the op links of an eager step of the same trace that is its exact
// double: the same phase and token count (known, not 0), and the same
// kernel names in the same order (by start time). Kernel j of the replay
// then does op j's share of the eager step; nothing is borrowed from a
// step that differs in any kernel, since one graph kernel's shape cannot
// be told from another's.
func borrowShapes(p *rankPass, steps []Step, links []opLink) {
	seqs := make([][]int32, len(steps))
	donors := map[uint64][]int{} // by the hash of (phase, tokens, names)
	seed := maphash.MakeSeed()
	for s := range steps {
		if !isWorkPhase(steps[s].Phase) || steps[s].Truncated || steps[s].Tokens <= 0 {
			continue
		}
		seqs[s] = stepKernels(p, s)
		if steps[s].GraphLaunches == 0 {
			k := stepKey(seed, p, steps[s], seqs[s])
			donors[k] = append(donors[k], s)
		}
	}
	for s := range steps {
		if seqs[s] == nil || steps[s].GraphLaunches == 0 {
			continue
		}
		for _, d := range donors[stepKey(seed, p, steps[s], seqs[s])] {
			if sameStep(p, steps, s, d, seqs) {
				lend(seqs[s], seqs[d], links)
				break
			}
		}
	}
}

// stepKernels returns step s's kernels, GPU event indices in start order.
func stepKernels(p *rankPass, s int) []int32 {
	var ks []int32
	for _, i := range p.order[p.off[s]:p.off[s+1]] {
		if p.t.GPU.At(int(i)).Kind == ingest.KindKernel {
			ks = append(ks, i)
		}
	}
	slices.SortStableFunc(ks, func(a, b int32) int { return cmp.Compare(p.t.GPU.At(int(a)).Start, p.t.GPU.At(int(b)).Start) })
	return ks
}

// stepKey hashes a step's phase, tokens and kernel names.
func stepKey(seed maphash.Seed, p *rankPass, s Step, seq []int32) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(s.Phase)
	var b [8]byte
	for _, v := range append([]int64{int64(s.Tokens), int64(len(seq))}, namesOf(p, seq)...) {
		for j := range b {
			b[j] = byte(v >> (8 * j))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

// namesOf returns the name ids of the GPU events seq.
func namesOf(p *rankPass, seq []int32) []int64 {
	out := make([]int64, len(seq))
	for i, e := range seq {
		out[i] = int64(p.t.GPU.At(int(e)).Name)
	}
	return out
}

// sameStep says whether steps s and d are doubles (phase, tokens and
// kernel names equal), beyond their hash.
func sameStep(p *rankPass, steps []Step, s, d int, seqs [][]int32) bool {
	return steps[s].Phase == steps[d].Phase && steps[s].Tokens == steps[d].Tokens &&
		slices.Equal(namesOf(p, seqs[s]), namesOf(p, seqs[d]))
}

// lend gives each kernel of the replay without an op the link of the
// eager kernel at its place.
func lend(replay, eager []int32, links []opLink) {
	for j, i := range replay {
		if links[i].op >= 0 {
			continue
		}
		if l := links[eager[j]]; l.op >= 0 {
			links[i] = opLink{op: l.op, share: l.share, borrowed: true}
		}
	}
}
