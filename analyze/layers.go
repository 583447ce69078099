package analyze

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"

	"kinetoscope/ingest"
)

// LayerFold is one phase's steps folded into the model's layers: the
// kernel sequence that repeats L times inside each step, found from the
// kernels themselves (their names in launch order), so that it works on
// CUDA-graph replays and traces without module names alike.
type LayerFold struct {
	Phase string `json:"phase"` // decode, prefill or mixed
	// Steps is the number of the phase's steps folded; Unfolded those
	// whose kernel sequence did not fold as the others did (say, a step
	// that ran other kernels).
	Steps    int `json:"steps"`
	Unfolded int `json:"unfolded"`
	// Layers is the number of layers found (repeats of the layer's kernel
	// sequence, plus Irregular layers before them); KernelsPerLayer the
	// length of the repeated sequence.
	Layers          int `json:"layers"`
	KernelsPerLayer int `json:"kernels_per_layer"`
	// LayersPerRepeat is how many layers the repeated sequence holds: 1,
	// or 2 when two kinds of layer alternate (sliding-window and full
	// attention, say), found as the count most of its kernels run in it.
	// KernelsPerLayer is then the length of the pair.
	LayersPerRepeat int `json:"layers_per_repeat"`
	// Irregular is the number of layers before or after the repeated ones
	// whose kernels differ from theirs (the dense first layers of a MoE
	// model, a last layer with a kernel of its own), found by the repeated
	// layer's anchor kernel (Anchor); PerLayer flags them.
	Irregular int `json:"irregular"`
	// HeadKernels and TailKernels are the kernels before the first layer
	// (embedding, input preparation) and after the last (final norm,
	// lm_head, logits gather, sampling); HeadUS and TailUS their time per
	// step, from the step's first kernel start to the first layer's, and
	// from the last layer's end to the step's last kernel end.
	HeadKernels int     `json:"head_kernels"`
	TailKernels int     `json:"tail_kernels"`
	HeadUS      float64 `json:"head_us"`
	TailUS      float64 `json:"tail_us"`
	// Anchor names the kernel the irregular layers were found by: an
	// attention kernel that runs once in every layer.
	Anchor string `json:"anchor,omitempty"`
	// PerLayer has one entry per layer, in order.
	PerLayer []LayerStat `json:"per_layer"`
	// Slots has one entry per position in the repeated layer.
	Slots []LayerSlot `json:"slots"`
	// MedianLayerUS is the median of the layers' mean times; Outliers lists
	// the layers whose mean time is at least LayerOutlierRatio times it.
	MedianLayerUS float64 `json:"median_layer_us"`
	Outliers      []int   `json:"outliers,omitempty"`
}

// LayerStat is one layer over the folded steps. Its time runs from its
// earliest kernel start to the next layer's (the last layer: to its
// latest kernel end), so it includes the idle time inside the layer.
type LayerStat struct {
	Index  int     `json:"index"`
	MeanUS float64 `json:"mean_us"`
	P50US  float64 `json:"p50_us"`
	P90US  float64 `json:"p90_us"`
	// KernelUS is the layer's kernel time per step (sum of durations);
	// Buckets splits it.
	KernelUS float64              `json:"kernel_us"`
	Buckets  map[BucketID]float64 `json:"buckets"`
	Kernels  int                  `json:"kernels"`
	// Irregular says the layer's kernels differ from the repeated
	// sequence's.
	Irregular bool `json:"irregular,omitempty"`
	// StepUS is the layer's time in each folded step, in step order (the
	// same steps for every layer): the samples a diff tests.
	StepUS []float64 `json:"step_us"`
}

// LayerSlot is one position in the repeated layer: the same kernel in
// every layer and step, with its launch shape and times over all of them.
type LayerSlot struct {
	Index int `json:"index"`
	// Layer is the slot's layer within the repeated sequence (0 unless
	// LayerFold.LayersPerRepeat > 1).
	Layer  int      `json:"layer"`
	Name   string   `json:"name"`
	Bucket BucketID `json:"bucket"`
	// Label names the slot by its bucket: "GEMM 2 of 4".
	Label string `json:"label"`
	// Module is the innermost nn.Module whose forward launched the slot's
	// kernel ("Attention", "MergedColumnParallelLinear"), without its
	// index; "" when the trace has no module events (no with_stack) or the
	// kernel was replayed from a CUDA graph (no launch of its own).
	Module string   `json:"module,omitempty"`
	Grid   [3]int32 `json:"grid"`
	Block  [3]int32 `json:"block"`
	// Shape is the GEMM's M×N×K from its op's recorded shapes
	// ("4×6144×4096"; M as a range, "1-64×6144×4096", when the steps ran
	// different batches); "" unless every kernel of the slot was launched
	// by a GEMM op with shapes of one N and K.
	Shape string `json:"shape,omitempty"`
	Count int    `json:"count"` // kernels measured: layers x steps
	// MeanUS, P50US and P90US are the kernel's duration.
	MeanUS float64 `json:"mean_us"`
	P50US  float64 `json:"p50_us"`
	P90US  float64 `json:"p90_us"`
}

// LayerOutlierRatio: a layer whose mean time is this multiple of the
// median layer's is named an outlier.
const LayerOutlierRatio = 1.2

// fold is where a step's kernel sequence repeats: from start, layers
// repeats of period kernels.
type fold struct {
	start, period, layers int
}

// findFold returns the longest exact repetition in seq: the period (among
// the gaps between occurrences of one name) whose periodic run covers
// the most kernels with at least two repeats, the shortest such period on
// a tie (two layers also repeat). ok is false when nothing repeats.
func findFold(seq []ingest.StrID) (fold, bool) {
	n := len(seq)
	last := map[ingest.StrID]int{}
	gaps := map[int]int{}
	for i, id := range seq {
		if j, ok := last[id]; ok && i-j <= n/2 {
			gaps[i-j]++
		}
		last[id] = i
	}
	periods := make([]int, 0, len(gaps))
	for p, c := range gaps {
		if c >= 2 {
			periods = append(periods, p)
		}
	}
	sort.Ints(periods)
	var best fold
	for _, p := range periods {
		start, run := longestRun(seq, p)
		f := fold{start: start, period: p, layers: (run + p) / p}
		if f.layers >= 2 && f.layers*f.period > best.layers*best.period {
			best = f
		}
	}
	return best, best.layers >= 2
}

// longestRun returns the longest stretch of indexes i with seq[i] ==
// seq[i+p]: its start and length.
func longestRun(seq []ingest.StrID, p int) (start, length int) {
	cur := 0
	for i := 0; i+p < len(seq); i++ {
		if seq[i] == seq[i+p] {
			cur++
			if cur > length {
				start, length = i-cur+1, cur
			}
		} else {
			cur = 0
		}
	}
	return start, length
}

// stepSequence is one step's GPU events in launch order.
type stepSequence struct {
	step   int
	events []int32 // indexes into the trace's GPU events
	hash   uint64  // of the events' names, in order
}

// names returns the kernel names of the step's events, in order.
func (s *stepSequence) names(gpu *ingest.Chunks[ingest.GPUEvent]) []ingest.StrID {
	out := make([]ingest.StrID, len(s.events))
	for k, e := range s.events {
		out[k] = gpu.At(int(e)).Name
	}
	return out
}

// layerFolds folds the steps of each phase into layers.
func (p *rankPass) layerFolds(steps []Step) []LayerFold {
	return p.layerFoldsIn(steps, runtime.GOMAXPROCS(0), minFoldSteps)
}

// layerFoldsIn is layerFolds with its steps worked on in ranges, one a
// core of cores, of least steps at least (assignParts).
func (p *rankPass) layerFoldsIn(steps []Step, cores, least int) []LayerFold {
	seqs := p.stepSequences(steps)
	var out []LayerFold
	for _, phase := range []string{PhaseDecode, PhasePrefill, PhaseMixed} {
		var in []*stepSequence
		for i := range seqs {
			if s := &seqs[i]; len(s.events) > 0 && inPhase(phase, &steps[s.step]) {
				in = append(in, s)
			}
		}
		if lf, ok := p.foldPhase(phase, in, cores, least); ok {
			out = append(out, lf)
		}
	}
	return out
}

// stepSequences returns each step's GPU events in launch order (by
// correlation id, the CPU's launch order; the kernels of one graph replay
// share it and go by start time), in one array of 4 bytes an event.
func (p *rankPass) stepSequences(steps []Step) []stepSequence {
	gpu := &p.t.GPU
	counts := make([]int, len(steps))
	n := 0
	for _, s := range p.stepOf {
		if s >= 0 && int(s) < len(steps) {
			counts[s]++
			n++
		}
	}
	all := make([]int32, n)
	seqs := make([]stepSequence, len(steps))
	at := 0
	for i := range seqs {
		seqs[i] = stepSequence{step: i, events: all[at : at : at+counts[i]]}
		at += counts[i]
	}
	for i, s := range p.stepOf {
		if s >= 0 && int(s) < len(steps) {
			seqs[s].events = append(seqs[s].events, int32(i))
		}
	}
	var buf [4]byte
	for i := range seqs {
		sq := &seqs[i]
		slices.SortStableFunc(sq.events, func(a, b int32) int {
			ea, eb := gpu.At(int(a)), gpu.At(int(b))
			if ea.Correlation != eb.Correlation {
				return cmp.Compare(ea.Correlation, eb.Correlation)
			}
			return cmp.Compare(ea.Start, eb.Start)
		})
		h := fnv.New64a()
		for _, e := range sq.events {
			id := gpu.At(int(e)).Name
			buf[0], buf[1], buf[2], buf[3] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
			h.Write(buf[:])
		}
		sq.hash = h.Sum64()
	}
	return seqs
}

// foldPhase folds the steps of one phase: the sequence most of them share
// sets the layer; a step of another sequence counts as folded when it
// repeats the same layer as often, with as many irregular layers.
func (p *rankPass) foldPhase(phase string, seqs []*stepSequence, cores, least int) (LayerFold, bool) {
	if len(seqs) == 0 {
		return LayerFold{}, false
	}
	count := map[uint64]int{}
	var ref *stepSequence
	for _, s := range seqs {
		count[s.hash]++
		if ref == nil || count[s.hash] > count[ref.hash] {
			ref = s
		}
	}
	gpu := &p.t.GPU
	refNames := ref.names(gpu)
	f, ok := findFold(refNames)
	if !ok {
		return LayerFold{}, false
	}
	block := refNames[f.start : f.start+f.period]
	attention := make([]bool, f.period)
	for i, ev := range ref.events[f.start : f.start+f.period] {
		attention[i] = p.tab.ids[p.bucketOf[ev]] == Attention
	}
	split := layerSplit(block, attention)
	an := p.layerAnchor(ref.events[f.start:f.start+f.period], block, split)
	lf := LayerFold{Phase: phase, KernelsPerLayer: f.period, LayersPerRepeat: len(split)}
	// Each step's fold and layers, found side by side; then, in order,
	// the steps whose irregular layers are the first folded step's; then
	// those measured in ranges side by side, merged in order.
	type folded struct {
		f      fold
		bounds []int
		irr    []bool
		ok     bool
	}
	folds := make([]folded, len(seqs))
	inParts(assignParts(len(seqs), cores, least), func(_, from, to int) {
		for k := from; k < to; k++ {
			s, sf, names := seqs[k], f, refNames
			if s.hash != ref.hash {
				names = s.names(gpu)
				got, ok := findFold(names)
				if !ok || got.period != f.period || got.layers != f.layers || !slices.Equal(names[got.start:got.start+got.period], block) {
					continue
				}
				sf = got
			}
			head, tail, tailEnd := an.layers(names, sf, f.period/len(split))
			bounds, irr := layerBounds(sf, split, head, tail, tailEnd)
			folds[k] = folded{sf, bounds, irr, true}
		}
	})
	acc := newLayerAcc(p, f.period, split, 0)
	var measured []int // of seqs
	for k, fd := range folds {
		switch {
		case !fd.ok:
		case acc.irregular == nil:
			acc.start(len(fd.bounds)-1, fd.irr)
			fallthrough
		case slices.Equal(fd.irr, acc.irregular):
			measured = append(measured, k)
			lf.Steps++
			continue
		}
		lf.Unfolded++
	}
	parts := assignParts(len(measured), cores, least)
	accs := make([]*layerAcc, len(parts)-1)
	inParts(parts, func(r, from, to int) {
		accs[r] = acc.fork((to - from) * f.layers)
		for _, k := range measured[from:to] {
			accs[r].measure(seqs[k], folds[k].f, folds[k].bounds)
		}
	})
	for _, b := range accs {
		acc.merge(b)
	}
	if lf.Steps == 0 {
		return LayerFold{}, false
	}
	acc.finish(&lf, f)
	if lf.Irregular > 0 {
		lf.Anchor = p.t.Name(an.id)
	}
	return lf, true
}

// minFoldSteps is the fewest steps a goroutine of the fold works on.
const minFoldSteps = 32

// layerSplit returns where the layers start in the repeated sequence
// block: [0] when it holds one layer; when most of its kernels run k > 1
// times in it (two kinds of layer alternating), the positions of the
// earliest kernel that runs k times. attention says which of block's
// kernels are attention: every layer of a decoder has one, so a split
// with a part that holds none (the attention and MLP halves of one layer,
// whose norm and residual kernels repeat) is no split into layers. A block
// with no attention kernel at all is split on the counts alone.
func layerSplit(block []ingest.StrID, attention []bool) []int {
	n := map[ingest.StrID]int{}
	for _, id := range block {
		n[id]++
	}
	byCount := map[int]int{}
	for _, c := range n {
		byCount[c]++
	}
	k, most := 1, 0
	for c, names := range byCount {
		if names > most || (names == most && c < k) {
			k, most = c, names
		}
	}
	if k <= 1 {
		return []int{0}
	}
	for _, id := range block {
		if n[id] == k {
			at := positions(block, id)
			if !eachHoldsAttention(at, attention) {
				return []int{0}
			}
			return at
		}
	}
	return []int{0}
}

// eachHoldsAttention says whether each part of a block cut at the
// positions at (the first part from 0, and the block's end wrapping round
// to the part before at[0]) holds an attention kernel; true when the block
// holds none.
func eachHoldsAttention(at []int, attention []bool) bool {
	if !slices.Contains(attention, true) {
		return true
	}
	for i, start := range at {
		end := len(attention)
		if i+1 < len(at) {
			end = at[i+1]
		}
		part := slices.Contains(attention[start:end], true)
		if i == len(at)-1 && at[0] > 0 {
			part = part || slices.Contains(attention[:at[0]], true)
		}
		if !part {
			return false
		}
	}
	return true
}

// positions returns the indexes of id in seq.
func positions(seq []ingest.StrID, id ingest.StrID) []int {
	var at []int
	for j, other := range seq {
		if other == id {
			at = append(at, j)
		}
	}
	return at
}

// layerAnchor is the kernel that marks a layer outside the repeated ones:
// an attention kernel that runs once in each layer of the repeated
// sequence (every layer of a decoder has one, dense or MoE, first or
// last), and its distance from its layer's start. ok is false when the
// repeated sequence has none.
type layerAnchor struct {
	id     ingest.StrID
	offset int
	ok     bool
}

// layerAnchor finds the anchor of the repeated sequence block (its events
// and names; its layers start at split).
func (p *rankPass) layerAnchor(events []int32, block []ingest.StrID, split []int) layerAnchor {
	n := map[ingest.StrID]int{}
	for _, id := range block {
		n[id]++
	}
	for i, id := range block {
		if n[id] != len(split) || p.tab.ids[p.bucketOf[events[i]]] != Attention {
			continue
		}
		start := 0
		for _, o := range split {
			if o <= i {
				start = o
			}
		}
		return layerAnchor{id: id, offset: i - start, ok: true}
	}
	return layerAnchor{}
}

// layers returns where the irregular layers of a step's sequence start,
// before the repeated ones (each anchor in the head, less its offset) and
// after them (each anchor in the tail), and where the last of those after
// ends: at its start plus one layer's kernels (layerLen), or the step's end.
func (an layerAnchor) layers(seq []ingest.StrID, f fold, layerLen int) (head, tail []int, tailEnd int) {
	end := f.start + f.layers*f.period
	tailEnd = end
	if !an.ok {
		return nil, nil, tailEnd
	}
	for _, q := range positions(seq[:f.start], an.id) {
		head = append(head, max(0, q-an.offset))
	}
	for _, q := range positions(seq[end:], an.id) {
		tail = append(tail, max(end, end+q-an.offset))
	}
	if len(tail) > 0 {
		tailEnd = min(len(seq), tail[len(tail)-1]+layerLen)
	}
	return head, tail, tailEnd
}

// layerAcc gathers layer and slot figures over the folded steps.
type layerAcc struct {
	p        *rankPass
	layerNS  [][]int64 // per layer, per step
	kernelNS [][]int64
	bucketNS [][]int64 // per layer, per bucket number
	bucketIn [][]bool  // per layer, per bucket number: a kernel of it seen
	kernels  []int
	// irregular flags the irregular layers, set by the first step added.
	irregular []bool
	// slotNS holds per slot each kernel's duration, for its quantiles (4
	// bytes a kernel: clamped at 4.29 s, far above any kernel of a layer);
	// slotSum their exact sum, for the mean.
	slotNS    [][]uint32
	slotSum   []int64
	slotFirst []int32 // per slot, an event of it
	slotShape []slotShape
	split     []int // layer starts in the repeated sequence
	measured  int   // steps measured
	headNS    []int64
	tailNS    []int64
	head      []int
	tail      []int
}

// newLayerAcc returns an accumulator for a layer of period kernels split
// at split, sized for perSlot kernels a slot.
func newLayerAcc(p *rankPass, period int, split []int, perSlot int) *layerAcc {
	a := &layerAcc{p: p, slotNS: make([][]uint32, period), slotSum: make([]int64, period),
		slotFirst: make([]int32, period), slotShape: make([]slotShape, period), split: split}
	for j := range a.slotNS {
		a.slotNS[j] = make([]uint32, 0, perSlot)
	}
	return a
}

// layerBounds returns the layer start indexes of one folded step, then
// where its last layer ends, and which layers are irregular: irregular
// layers starting at irrHead, f.layers repeats of the layer split at
// split, irregular layers starting at irrTail up to tailEnd (indexes into
// its sequence).
func layerBounds(f fold, split, irrHead, irrTail []int, tailEnd int) (bounds []int, irr []bool) {
	bounds = slices.Clone(irrHead)
	irr = make([]bool, len(irrHead))
	for k := range f.layers {
		for _, o := range split {
			bounds = append(bounds, f.start+k*f.period+o)
			irr = append(irr, false)
		}
	}
	for _, t := range irrTail {
		bounds = append(bounds, t)
		irr = append(irr, true)
	}
	for i := range irrHead {
		irr[i] = true
	}
	return append(bounds, tailEnd), irr
}

// start readies a for steps of nl layers, irregular where irr says.
func (a *layerAcc) start(nl int, irr []bool) {
	a.layerNS, a.kernelNS = make([][]int64, nl), make([][]int64, nl)
	a.bucketNS, a.bucketIn, a.kernels = make([][]int64, nl), make([][]bool, nl), make([]int, nl)
	for i := range a.bucketNS {
		a.bucketNS[i], a.bucketIn[i] = make([]int64, len(a.p.tab.ids)), make([]bool, len(a.p.tab.ids))
	}
	a.irregular = irr
}

// fork returns an empty accumulator of a's layout, for perSlot kernels a
// slot, to measure a range of the steps that merge adds back.
func (a *layerAcc) fork(perSlot int) *layerAcc {
	b := newLayerAcc(a.p, len(a.slotNS), a.split, perSlot)
	b.start(len(a.layerNS), a.irregular)
	return b
}

// merge adds b's steps, measured after a's, to a.
func (a *layerAcc) merge(b *layerAcc) {
	if b.measured == 0 {
		return
	}
	a.measured += b.measured
	for l := range a.layerNS {
		a.layerNS[l] = append(a.layerNS[l], b.layerNS[l]...)
		a.kernelNS[l] = append(a.kernelNS[l], b.kernelNS[l]...)
		for x, v := range b.bucketNS[l] {
			a.bucketNS[l][x] += v
			a.bucketIn[l][x] = a.bucketIn[l][x] || b.bucketIn[l][x]
		}
		a.kernels[l] = b.kernels[l]
	}
	a.headNS, a.tailNS = append(a.headNS, b.headNS...), append(a.tailNS, b.tailNS...)
	a.head, a.tail = append(a.head, b.head...), append(a.tail, b.tail...)
	for j := range a.slotNS {
		a.slotNS[j] = append(a.slotNS[j], b.slotNS[j]...)
		a.slotSum[j] += b.slotSum[j]
		a.slotFirst[j] = b.slotFirst[j]
		a.slotShape[j].merge(b.slotShape[j])
	}
}

// measure adds the layers of one step, bounded by bounds, and its slots.
func (a *layerAcc) measure(s *stepSequence, f fold, bounds []int) {
	a.measured++
	gpu := a.p.t.GPU
	nl := len(bounds) - 1
	starts := make([]int64, nl)
	for l := range nl {
		starts[l] = a.span(s.events[bounds[l]:bounds[l+1]], true)
	}
	end := a.span(s.events[bounds[nl-1]:bounds[nl]], false)
	tailEnd := end
	if bounds[nl] < len(s.events) {
		tailEnd = max(end, a.span(s.events[bounds[nl]:], false))
	}
	for l := range nl {
		stop := end
		if l+1 < nl {
			stop = starts[l+1]
		}
		a.layerNS[l] = append(a.layerNS[l], stop-starts[l])
		var kns int64
		for _, e := range s.events[bounds[l]:bounds[l+1]] {
			ev := gpu.At(int(e))
			kns += ev.Dur
			b := a.p.bucketOf[e]
			a.bucketNS[l][b] += ev.Dur
			a.bucketIn[l][b] = true
		}
		a.kernelNS[l] = append(a.kernelNS[l], kns)
		a.kernels[l] = bounds[l+1] - bounds[l]
	}
	a.headNS = append(a.headNS, starts[0]-a.span(s.events, true))
	a.tailNS = append(a.tailNS, tailEnd-end)
	a.head = append(a.head, bounds[0])
	a.tail = append(a.tail, len(s.events)-bounds[nl])
	for k := range f.layers {
		for j := range f.period {
			e := s.events[f.start+k*f.period+j]
			d := gpu.At(int(e)).Dur
			a.slotNS[j] = append(a.slotNS[j], uint32(min(d, math.MaxUint32)))
			a.slotSum[j] += d
			a.slotFirst[j] = e
			a.slotShape[j].add(a.p, e)
		}
	}
}

// span returns the earliest start (first) or the latest end of events.
func (a *layerAcc) span(events []int32, first bool) int64 {
	gpu := a.p.t.GPU
	v := int64(-1 << 63)
	if first {
		v = 1<<63 - 1
	}
	for _, e := range events {
		ev := gpu.At(int(e))
		if first {
			v = min(v, ev.Start)
		} else {
			v = max(v, ev.End())
		}
	}
	return v
}

// finish writes the figures into lf.
func (a *layerAcc) finish(lf *LayerFold, f fold) {
	steps := float64(lf.Steps)
	lf.Layers = len(a.layerNS)
	for _, irr := range a.irregular {
		if irr {
			lf.Irregular++
		}
	}
	lf.HeadKernels, lf.TailKernels = median(a.head), median(a.tail)
	lf.HeadUS, lf.TailUS = meanUS(a.headNS), meanUS(a.tailNS)
	means := make([]float64, len(a.layerNS))
	for l, ns := range a.layerNS {
		st := LayerStat{Index: l, MeanUS: meanUS(ns), Kernels: a.kernels[l], Irregular: a.irregular[l],
			KernelUS: meanUS(a.kernelNS[l]), Buckets: map[BucketID]float64{}}
		st.StepUS = make([]float64, len(ns))
		for k, v := range ns {
			st.StepUS[k] = us(v)
		}
		st.P50US, st.P90US = us(quantile(slices.Clone(ns), 0.5)), us(quantile(slices.Clone(ns), 0.9))
		for b, v := range a.bucketNS[l] {
			if a.bucketIn[l][b] {
				st.Buckets[a.p.tab.ids[b]] = us(v) / steps
			}
		}
		lf.PerLayer = append(lf.PerLayer, st)
		means[l] = st.MeanUS
	}
	med := median(means)
	lf.MedianLayerUS = med
	for l, m := range means {
		if med > 0 && m >= LayerOutlierRatio*med {
			lf.Outliers = append(lf.Outliers, l)
		}
	}
	lf.Slots = a.slots(f)
	a.p.slotModules(lf.Slots, a.slotFirst)
}

// slotModules names each slot's module: the innermost nn.Module forward
// (Trace.Modules) on the launching thread whose interval holds the launch
// of the slot's kernel (an event of it: first).
func (p *rankPass) slotModules(slots []LayerSlot, first []int32) {
	mods := &p.t.Modules
	if mods.Len() == 0 {
		return
	}
	byThread := map[int32][]*ingest.Annotation{}
	for _, m := range mods.All() {
		byThread[m.Thread] = append(byThread[m.Thread], m)
	}
	for _, ms := range byThread {
		slices.SortStableFunc(ms, func(a, b *ingest.Annotation) int { return cmp.Compare(a.Start, b.Start) })
	}
	isGraph := map[ingest.StrID]bool{}
	for j := range slots {
		l := p.launch(int(first[j]))
		if l == nil || graphLaunch(p.t, l, isGraph) {
			continue
		}
		ms := byThread[l.Thread]
		i := sort.Search(len(ms), func(i int) bool { return ms[i].Start > l.Start }) - 1
		for ; i >= 0; i-- {
			if ms[i].Start+ms[i].Dur >= l.Start {
				slots[j].Module = moduleName(p.t.Name(ms[i].Name))
				break
			}
		}
	}
}

// moduleName returns a module's class from its event name: "nn.Module:
// QKVParallelLinear_0" is "QKVParallelLinear".
func moduleName(event string) string {
	name := strings.TrimPrefix(event, "nn.Module: ")
	if i := strings.LastIndexByte(name, '_'); i > 0 && i < len(name)-1 && strings.Trim(name[i+1:], "0123456789") == "" {
		name = name[:i]
	}
	return name
}

// slots describes each position of the layer, labelled by bucket ("GEMM
// 2 of 4").
func (a *layerAcc) slots(f fold) []LayerSlot {
	gpu := a.p.t.GPU
	out := make([]LayerSlot, f.period)
	of := map[BucketID]int{}
	for j := range out {
		e := a.slotFirst[j]
		ev := gpu.At(int(e))
		b := a.p.tab.ids[a.p.bucketOf[e]]
		of[b]++
		ns := make([]int64, len(a.slotNS[j]))
		for k, d := range a.slotNS[j] {
			ns[k] = int64(d)
		}
		a.slotNS[j] = nil
		layer := 0
		for i, o := range a.split {
			if j >= o {
				layer = i
			}
		}
		out[j] = LayerSlot{Index: j, Layer: layer, Name: a.p.t.Name(ev.Name), Bucket: b, Grid: ev.Grid, Block: ev.Block,
			Shape: a.slotShape[j].text(), Count: len(ns), MeanUS: us(a.slotSum[j]) / float64(max(1, len(ns)))}
		out[j].P90US = us(quantile(ns, 0.9))
		out[j].P50US = us(quantile(ns, 0.5))
	}
	labels := bucketLabels()
	nth := map[BucketID]int{}
	for j := range out {
		b := out[j].Bucket
		nth[b]++
		out[j].Label = fmt.Sprintf("%s %d of %d", labels[b], nth[b], of[b])
	}
	return out
}

// slotShape gathers the GEMM dims of a slot's kernels.
type slotShape struct {
	mMin, mMax, n, k int64
	seen             bool
	bad              bool // a kernel without a GEMM op with shapes, or another N or K
}

// add takes the dims of GPU event e's op.
func (s *slotShape) add(p *rankPass, e int32) {
	if s.bad {
		return
	}
	op := int32(-1)
	if int(e) < len(p.opOf) {
		op = p.opOf[e]
	}
	if op < 0 {
		s.bad = true
		return
	}
	m, n, k, ok := opMNK(p.t, p.t.Shapes.Ops.At(int(op)))
	switch {
	case !ok || s.seen && (n != s.n || k != s.k):
		s.bad = true
	case !s.seen:
		*s = slotShape{mMin: m, mMax: m, n: n, k: k, seen: true}
	default:
		s.mMin, s.mMax = min(s.mMin, m), max(s.mMax, m)
	}
}

// merge takes the dims b gathered, as add would have.
func (s *slotShape) merge(b slotShape) {
	switch {
	case s.bad || !b.seen && !b.bad:
	case b.bad || s.seen && (b.n != s.n || b.k != s.k):
		s.bad = true
	case !s.seen:
		*s = b
	default:
		s.mMin, s.mMax = min(s.mMin, b.mMin), max(s.mMax, b.mMax)
	}
}

// text writes the slot's M×N×K, "" when unknown.
func (s *slotShape) text() string {
	switch {
	case s.bad || !s.seen:
		return ""
	case s.mMin == s.mMax:
		return fmt.Sprintf("%d×%d×%d", s.mMin, s.n, s.k)
	}
	return fmt.Sprintf("%d-%d×%d×%d", s.mMin, s.mMax, s.n, s.k)
}

// bucketLabels maps each bucket to its label.
func bucketLabels() map[BucketID]string {
	m := map[BucketID]string{}
	for _, b := range Buckets() {
		m[b.ID] = b.Label
	}
	return m
}

func meanUS(ns []int64) float64 {
	if len(ns) == 0 {
		return 0
	}
	var s int64
	for _, v := range ns {
		s += v
	}
	return us(s) / float64(len(ns))
}

// median returns the upper median of xs (its middle element once sorted,
// the upper of the two for an even count); zero for none.
func median[T cmp.Ordered](xs []T) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
