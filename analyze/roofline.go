package analyze

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"kinetoscope/ingest"
)

// Roofline is how close the compute kernels ran to the GPU's limits, per
// kernel class (bucket) and phase, from the work their ops' shapes give
// (record_shapes): achieved FLOP/s and bytes/s, arithmetic intensity, the
// roof that bounds them and the share of it reached. Kernels whose work the
// trace does not give are counted and said why, never estimated.
type Roofline struct {
	// Peak is the GPU's peak the rows are held against; nil when none is
	// known, and then PeakNote says why.
	Peak     *GPUPeak `json:"peak,omitempty"`
	PeakNote string   `json:"peak_note,omitempty"`
	// Rows are in phase order (prefill, decode, mixed, unknown), then
	// bucket display order.
	Rows []RooflineRow `json:"rows"`
	// SpeedOfLight estimates the decode step with every kernel at its roof.
	SpeedOfLight *SpeedOfLight `json:"speed_of_light,omitempty"`
	// Notes are findings about the figures as a whole.
	Notes []string `json:"notes,omitempty"`
}

// RooflineRow is one kernel class in one phase, over the phase's steps of
// every rank.
type RooflineRow struct {
	Phase  string   `json:"phase"`
	Bucket BucketID `json:"bucket"`
	Label  string   `json:"label"`
	// RankSteps is the number of steps summed over the ranks: per-step
	// figures divide by it.
	RankSteps int `json:"rank_steps"`
	// Kernels and KernelUS are every kernel of the class in the steps;
	// ShapedKernels and ShapedUS those whose work the shapes give (the
	// rates below are over them only).
	Kernels       int     `json:"kernels"`
	KernelUS      float64 `json:"kernel_us"`
	ShapedKernels int     `json:"shaped_kernels"`
	ShapedUS      float64 `json:"shaped_us"`
	// BorrowedKernels are the shaped kernels replayed from a CUDA graph
	// whose work is that of the kernel at their place in an eager step of
	// the same phase, tokens and kernel sequence.
	BorrowedKernels int `json:"borrowed_kernels,omitempty"`
	// CapturedKernels are the shaped kernels replayed from a CUDA graph
	// whose work is that of their launch, at their place in launch order,
	// in the graph's capture trace.
	CapturedKernels int `json:"captured_kernels,omitempty"`
	// FLOPs and Bytes are the work of the shaped kernels (an op's work
	// split over its kernels by their time).
	FLOPs float64 `json:"flops"`
	Bytes float64 `json:"bytes"`
	// TFLOPS and TBPerS are FLOPs and Bytes over ShapedUS (10^12 a
	// second); Intensity is FLOPs per byte.
	TFLOPS    float64 `json:"tflops"`
	TBPerS    float64 `json:"tb_per_s"`
	Intensity float64 `json:"intensity"`
	// Dtype is the peak key of most of the shaped time ("mixed" is never
	// used: Work splits it).
	Dtype string `json:"dtype,omitempty"`
	// Work is the shaped work by dtype key, in order of time.
	Work []RooflineWork `json:"work,omitempty"`
	// Unshaped says why the other kernels have no figure, most time first.
	Unshaped []RooflineGap `json:"unshaped,omitempty"`
	// Held against Roofline.Peak (holdAgainst): the roof that bounds the
	// class ("memory" or "compute", by the ridge point of its dtype's
	// peak), the share of that roof achieved (percent of HBM bandwidth or
	// of the dtype's tensor peak), the ridge point (FLOPs per byte), and
	// the time the shaped kernels would take at their roofs (per dtype,
	// max of bytes / bandwidth and FLOPs / peak).
	Bound     string  `json:"bound,omitempty"`
	PeakShare float64 `json:"peak_share,omitempty"`
	Ridge     float64 `json:"ridge,omitempty"`
	RoofUS    float64 `json:"roof_us,omitempty"`
}

// RooflineWork is the shaped work of one dtype in a row.
type RooflineWork struct {
	Dtype   string  `json:"dtype"`
	Kernels int     `json:"kernels"`
	US      float64 `json:"us"`
	FLOPs   float64 `json:"flops"`
	Bytes   float64 `json:"bytes"`
}

// RooflineGap is a group of kernels of a row without a figure, and why.
type RooflineGap struct {
	Reason  string  `json:"reason"`
	Kernels int     `json:"kernels"`
	US      float64 `json:"us"`
}

// The bounds of RooflineRow.Bound.
const (
	BoundMemory  = "memory"
	BoundCompute = "compute"
)

// Reasons of RooflineGap for kernels linked to no op with shapes.
const (
	GapGraph   = "CUDA graph replay: no op with shapes launched it"
	GapNoOp    = "launched by no op with shapes (GEMM, attention) in the trace"
	GapNoTrace = "the trace records no shapes: profile with record_shapes=True"
	// GapNoExtID: the kernel was launched outside every recorded op (a
	// C++/CUDA extension called without a torch op around it).
	GapNoExtID = "launched outside any recorded op (no External id): its caller is not a torch op, so no shapes are recorded"
	// GapOldFormat: PyTorch 1.x traces give a kernel its correlation as
	// External id, not its op's.
	GapOldFormat = "kernels carry no op's External id (a PyTorch 1.x trace): not linked to the ops' shapes"
	// GapCaptureNone and GapCaptureMismatch: a graph replay beside a
	// capture trace that holds no captured graph, or none that matches
	// the replay one for one (the rest of the reason says how).
	GapCaptureNone     = "CUDA graph replay: the capture trace holds no graph capture (cudaStreamBeginCapture)"
	GapCaptureMismatch = "CUDA graph replay: the capture trace does not match it"
)

// rooflineBuckets are the classes that get a row even when none of their
// kernels has shapes: the ones the figures are for.
var rooflineBuckets = []BucketID{GEMM, MarlinGEMM, Attention}

// rowKey names a row while accumulating.
type rowKey struct {
	phase  string
	bucket uint8
}

// rooflineAcc accumulates the rows of every rank.
type rooflineAcc struct {
	rows  map[rowKey]*RooflineRow
	work  map[rowKey]map[string]*RooflineWork
	gaps  map[rowKey]map[string]*RooflineGap
	steps map[string]int // rank-steps by phase
}

// rooflineOf measures the roofline rows of every rank and holds them
// against the GPU name's peak, overridden by spec (Options.GPUPeak); the
// speed of light, which needs the bandwidth, is left to the caller.
func rooflineOf(r *Report, passes []*rankPass, spec string) *Roofline {
	acc := &rooflineAcc{rows: map[rowKey]*RooflineRow{}, work: map[rowKey]map[string]*RooflineWork{},
		gaps: map[rowKey]map[string]*RooflineGap{}, steps: map[string]int{}}
	var tab bucketTab
	for i, p := range passes {
		tab = p.tab
		acc.rank(p, r.Ranks[i].Steps)
	}
	if len(acc.rows) == 0 {
		return nil
	}
	rf := &Roofline{Rows: acc.finish(tab)}
	rf.Peak, rf.PeakNote = deviceGPUPeakOf(passes)
	if spec != "" {
		p, err := ParseGPUPeak(spec, rf.Peak) // checked by Analyze
		if err == nil {
			rf.Peak, rf.PeakNote = p, ""
		}
	}
	rf.holdAgainst()
	return rf
}

// deviceGPUPeakOf returns the GPU name's peak when every rank names the
// same GPU, and a note when none is known.
func deviceGPUPeakOf(passes []*rankPass) (*GPUPeak, string) {
	var p *GPUPeak
	name := ""
	for _, ps := range passes {
		ds := ps.t.Meta.Devices
		if len(ds) == 0 || ds[0].Name == "" {
			continue
		}
		if name != "" && ds[0].Name != name {
			return nil, fmt.Sprintf("the ranks run on different GPUs (%s, %s): pass --gpu-peak", name, ds[0].Name)
		}
		name = ds[0].Name
		p = deviceGPUPeak(name, ds[0].TotalMemBytes)
	}
	switch {
	case name == "":
		return nil, "the trace names no GPU: pass --gpu-peak hbm=TB/s,bf16=TFLOPs"
	case p == nil:
		return nil, fmt.Sprintf("no peak known for GPU %q: pass --gpu-peak hbm=TB/s,bf16=TFLOPs", name)
	}
	return p, ""
}

// rank adds one rank's kernels in its steps of a phase.
func (acc *rooflineAcc) rank(p *rankPass, steps []Step) {
	t := p.t
	hasShapes := false
	for _, o := range t.Shapes.Ops.All() {
		if len(o.Inputs) > 0 {
			hasShapes = true
			break
		}
	}
	for i := range steps {
		if ph := steps[i].Phase; isWorkPhase(ph) && !steps[i].Truncated {
			acc.steps[ph]++
		}
	}
	links, why := p.links, p.linkWhy
	type workKey struct {
		op       int32
		captured bool
	}
	captured, graphs := map[workKey]opWork{}, map[ingest.StrID]bool{} // the work of the capture trace's ops
	for i, ev := range t.GPU.All() {
		s := p.stepOf[i]
		if !inWorkStep(p, i, steps) {
			continue
		}
		b := p.bucketOf[i]
		op := links[i].op
		if op < 0 && !slices.Contains(rooflineBuckets, p.tab.ids[b]) {
			continue
		}
		row := acc.row(rowKey{steps[s].Phase, b}, p.tab)
		row.Kernels++
		row.KernelUS += us(ev.Dur)
		if op < 0 {
			acc.gap(rowKey{steps[s].Phase, b}, unlinkedReason(p, i, hasShapes, graphs, why), ev.Dur)
			continue
		}
		var w opWork
		if links[i].captured {
			k := workKey{op, true}
			var ok bool
			if w, ok = captured[k]; !ok {
				w = workOf(p.capture, p.capture.Shapes.Ops.At(int(op)))
				captured[k] = w
			}
		} else {
			w = p.works[op]
		}
		if w.why != "" {
			acc.gap(rowKey{steps[s].Phase, b}, w.why, ev.Dur)
			continue
		}
		acc.addWork(rowKey{steps[s].Phase, b}, w, links[i], ev.Dur)
	}
}

// linkOps returns the op with shapes of each GPU event of p in a step of
// steps that gets roofline rows (Trace.Shapes.Ops index, -1 for none), and
// the kernel time of each op in ns; byExt is the trace's
// Shapes.ByExternalID. The events are linked in ranges side by side
// (assignParts), each writing its own events' ops.
func linkOps(p *rankPass, steps []Step, byExt map[int64]int) ([]int32, []int64) {
	t := p.t
	opOf := make([]int32, t.GPU.Len())
	inParts(assignParts(len(opOf), runtime.GOMAXPROCS(0), minAssignPart), func(_, from, to int) {
		for i := from; i < to; i++ {
			opOf[i] = -1
			if !inWorkStep(p, i, steps) {
				continue
			}
			if ev := t.GPU.At(i); ev.ExternalID != 0 {
				if j, ok := byExt[ev.ExternalID]; ok && launchedBy(p, i, t.Shapes.Ops.At(j)) {
					opOf[i] = int32(j)
				}
			}
		}
	})
	opNS := make([]int64, t.Shapes.Ops.Len())
	for i, ev := range t.GPU.All() {
		if j := opOf[i]; j >= 0 {
			opNS[j] += ev.Dur
		}
	}
	return opOf, opNS
}

// opWorks returns the work of each op of p that kernels are linked to
// (opNS), indexed as Trace.Shapes.Ops, worked out in ranges of the ops
// side by side.
func opWorks(p *rankPass) []opWork {
	ops := &p.t.Shapes.Ops
	works := make([]opWork, ops.Len())
	inParts(assignParts(len(works), runtime.GOMAXPROCS(0), minAssignPart/8), func(_, from, to int) {
		for j := from; j < to; j++ {
			if p.opNS[j] > 0 {
				works[j] = workOf(p.t, ops.At(j))
			}
		}
	})
	return works
}

// inWorkStep says whether GPU event i is a kernel in a step that gets
// roofline rows (not cut off by the end of the profile).
func inWorkStep(p *rankPass, i int, steps []Step) bool {
	s := p.stepOf[i]
	return s >= 0 && p.t.GPU.At(i).Kind == ingest.KindKernel && isWorkPhase(steps[s].Phase) && !steps[s].Truncated
}

// isWorkPhase says whether a step of this phase gets roofline rows.
func isWorkPhase(ph string) bool {
	return ph == PhasePrefill || ph == PhaseDecode || ph == PhaseMixed || ph == PhaseUnknown
}

// launchedBy says whether GPU event i was launched inside op: its launch
// call on the op's thread within the op's time. A kernel without its
// launch in the trace is taken at its External id's word.
func launchedBy(p *rankPass, i int, op *ingest.ShapedOp) bool {
	j := p.launchAt[i]
	if j < 0 {
		return true
	}
	l := p.t.Launches.At(int(j))
	return l.Thread == op.Thread && l.Start >= op.Start && l.Start <= op.Start+op.Dur
}

// unlinkedReason says why kernel i has no op with shapes; graphs caches
// graphLaunch's answers by launch name, why holds the capture's reasons
// by graph launch (captureShapes).
func unlinkedReason(p *rankPass, i int, hasShapes bool, graphs map[ingest.StrID]bool, why map[int32]string) string {
	if j := p.launchAt[i]; j >= 0 && graphLaunch(p.t, p.t.Launches.At(int(j)), graphs) {
		if r := why[j]; r != "" {
			return r
		}
		return GapGraph
	}
	if !hasShapes {
		return GapNoTrace
	}
	switch ev := p.t.GPU.At(i); {
	case ev.ExternalID == 0:
		return GapNoExtID
	case ev.ExternalID == ev.Correlation:
		return GapOldFormat
	}
	return GapNoOp
}

// row returns the row of k, adding it.
func (acc *rooflineAcc) row(k rowKey, tab bucketTab) *RooflineRow {
	if r, ok := acc.rows[k]; ok {
		return r
	}
	id := tab.ids[k.bucket]
	b, _ := BucketByID(id)
	r := &RooflineRow{Phase: k.phase, Bucket: id, Label: b.Label}
	acc.rows[k] = r
	return r
}

// gap counts a kernel without a figure.
func (acc *rooflineAcc) gap(k rowKey, reason string, dur int64) {
	m := acc.gaps[k]
	if m == nil {
		m = map[string]*RooflineGap{}
		acc.gaps[k] = m
	}
	g := m[reason]
	if g == nil {
		g = &RooflineGap{Reason: reason}
		m[reason] = g
	}
	g.Kernels++
	g.US += us(dur)
}

// addWork adds the share of an op's work one kernel did.
func (acc *rooflineAcc) addWork(k rowKey, w opWork, l opLink, dur int64) {
	share := l.share
	r := acc.rows[k]
	r.ShapedKernels++
	if l.borrowed {
		r.BorrowedKernels++
	}
	if l.captured {
		r.CapturedKernels++
	}
	r.ShapedUS += us(dur)
	r.FLOPs += w.flops * share
	r.Bytes += w.bytes * share
	m := acc.work[k]
	if m == nil {
		m = map[string]*RooflineWork{}
		acc.work[k] = m
	}
	d := m[w.dtype]
	if d == nil {
		d = &RooflineWork{Dtype: w.dtype}
		m[w.dtype] = d
	}
	d.Kernels++
	d.US += us(dur)
	d.FLOPs += w.flops * share
	d.Bytes += w.bytes * share
}

// finish orders the rows and fills their derived figures.
func (acc *rooflineAcc) finish(tab bucketTab) []RooflineRow {
	keys := make([]rowKey, 0, len(acc.rows))
	for k := range acc.rows {
		keys = append(keys, k)
	}
	order := map[string]int{PhasePrefill: 0, PhaseDecode: 1, PhaseMixed: 2, PhaseUnknown: 3}
	slices.SortFunc(keys, func(a, b rowKey) int {
		return cmp.Or(cmp.Compare(order[a.phase], order[b.phase]), cmp.Compare(a.bucket, b.bucket))
	})
	rows := make([]RooflineRow, 0, len(keys))
	for _, k := range keys {
		r := acc.rows[k]
		r.RankSteps = acc.steps[k.phase]
		if r.ShapedUS > 0 {
			r.TFLOPS = r.FLOPs / r.ShapedUS / 1e6
			r.TBPerS = r.Bytes / r.ShapedUS / 1e6
		}
		if r.Bytes > 0 {
			r.Intensity = r.FLOPs / r.Bytes
		}
		for _, w := range acc.work[k] {
			r.Work = append(r.Work, *w)
		}
		slices.SortFunc(r.Work, func(a, b RooflineWork) int {
			return cmp.Or(cmp.Compare(b.US, a.US), cmp.Compare(a.Dtype, b.Dtype))
		})
		if len(r.Work) > 0 {
			r.Dtype = r.Work[0].Dtype
		}
		for _, g := range acc.gaps[k] {
			r.Unshaped = append(r.Unshaped, *g)
		}
		slices.SortFunc(r.Unshaped, func(a, b RooflineGap) int {
			return cmp.Or(cmp.Compare(b.US, a.US), cmp.Compare(a.Reason, b.Reason))
		})
		rows = append(rows, *r)
	}
	return rows
}

// holdAgainst fills each row's bound, share of peak, ridge and time at
// the roofs from rf.Peak (cleared when there is none).
func (rf *Roofline) holdAgainst() {
	for i := range rf.Rows {
		r := &rf.Rows[i]
		r.Bound, r.PeakShare, r.Ridge, r.RoofUS = "", 0, 0, 0
		if rf.Peak == nil || r.ShapedUS == 0 {
			continue
		}
		memUS, compUS := 0.0, 0.0
		for _, w := range r.Work {
			m, c := rf.Peak.roofUS(w)
			memUS += m
			compUS += c
			r.RoofUS += max(m, c)
		}
		peak := rf.Peak.Rate(r.Dtype)
		if peak > 0 && rf.Peak.HBMTBPerS > 0 {
			r.Ridge = peak / rf.Peak.HBMTBPerS
		}
		switch {
		case memUS >= compUS && rf.Peak.HBMTBPerS > 0:
			r.Bound, r.PeakShare = BoundMemory, 100*r.TBPerS/rf.Peak.HBMTBPerS
		case compUS > memUS && peak > 0:
			r.Bound, r.PeakShare = BoundCompute, 100*r.TFLOPS/peak
		}
	}
}

// roofUS returns the time in microseconds w takes at the memory roof and
// at its dtype's compute roof (0 for a roof the peak has no figure for).
func (p *GPUPeak) roofUS(w RooflineWork) (memUS, compUS float64) {
	if p.HBMTBPerS > 0 {
		memUS = w.Bytes / (p.HBMTBPerS * 1e6)
	}
	if f := p.Rate(w.Dtype); f > 0 {
		compUS = w.FLOPs / (f * 1e6)
	}
	return memUS, compUS
}

// WithGPUPeak returns r with its roofline held against the peak spec
// names (ParseGPUPeak over the GPU name's peak; "" keeps r's), leaving r
// as it was. The speed of light is estimated again.
func WithGPUPeak(r *Report, spec string) (*Report, error) {
	if r.Roofline == nil || strings.TrimSpace(spec) == "" {
		return r, nil
	}
	base := r.Roofline.Peak
	if base != nil && !strings.HasPrefix(base.Source, "device name") {
		base = nil // an earlier --gpu-peak's, not the device's
	}
	p, err := ParseGPUPeak(spec, base)
	if err != nil {
		return nil, err
	}
	out := *r
	rf := *r.Roofline
	rf.Rows = slices.Clone(rf.Rows)
	rf.Peak, rf.PeakNote = p, ""
	rf.holdAgainst()
	out.Roofline = &rf
	rf.SpeedOfLight = speedOfLight(&out, &rf)
	return &out, nil
}
