package synth

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// Timing constants of the simulated machine (ns unless said otherwise).
const (
	startNS         = 10_800_000_000_000 // first event, 3 h after baseTimeNanoseconds
	stepGapNS       = 70_000             // CPU time between steps (scheduler)
	outerFrameNS    = 400                // nesting offset of the per-step python frames
	unitGapNS       = 1_200              // CPU gap between launch units
	chainStepNS     = 60                 // nesting offset of one python frame
	launchBaseNS    = 2_500              // python + dispatcher time of a launch
	runtimeNS       = 2_800              // one cudaLaunchKernel / cudaMemcpyAsync
	collectiveCPUNS = 9_000              // c10d bookkeeping of a collective
	graphLaunchNS   = 18_000             // one cudaGraphLaunch of a full decode graph
	launchLatencyNS = 1_500              // runtime call start to earliest GPU start
	graphLatencyNS  = 5_000              // graph launch start to its first kernel
	eagerGapNS      = 1_000              // GPU gap between eager kernels
	graphGapNS      = 500                // GPU gap between graph kernels
	prepBaseNS      = 40_000             // input preparation before the forward
	prepPerLayerNS  = 1_500              // ... plus this per layer
	ringBytesPerNS  = 14.0               // PCIe ring bandwidth, bytes/ns (14 GB/s)
	collBaseNS      = 15_000             // collective latency floor
)

// stepInfo identifies one step.
type stepInfo struct {
	index   int
	ph      phase
	tokens  int // tokens processed
	batch   int // requests
	context int // context length of the requests (decode)
}

// name returns the vLLM execute_* annotation of the step.
func (s stepInfo) name() string {
	ctxReqs, ctxTok, genReqs, genTok := 0, 0, s.batch, s.tokens
	if s.ph == phasePrefill {
		ctxReqs, ctxTok, genReqs, genTok = s.batch, s.tokens, 0, 0
	}
	return "execute_context_" + strconv.Itoa(ctxReqs) + "(" + strconv.Itoa(ctxTok) + ")_generation_" +
		strconv.Itoa(genReqs) + "(" + strconv.Itoa(genTok) + ")"
}

// stepTiming is everything timed in one step: the CPU side (the same on
// every rank) and the GPU side of every rank.
type stepTiming struct {
	info                 stepInfo
	plan                 *phasePlan
	outerStart, annStart int64
	annEnd, outerEnd     int64
	prepStart, prepEnd   int64
	fwdStart, fwdEnd     int64
	unitStart, unitDur   []int64 // CPU window of each unit
	rtStart, rtDur       []int64 // runtime/driver call of each op (graph ops: the graph launch)
	syncStart, syncDur   int64
	start, dur           [][]int64 // [rank][op] GPU timing
	transfer             []int64   // per collective: time after the last arrival
	maxArrival           []int64   // per collective: the last rank's arrival
}

// simulator produces the step timings of a run, deterministically from the
// seed; every rank's writer runs its own copy.
type simulator struct {
	cfg   *Config
	plans [2]*phasePlan
	bias  []float64 // per rank slowness in [0,1)
	steps []stepInfo
	clock int64 // CPU time at which the next step starts
	t     stepTiming
	rng   *rand.Rand
	base  []int64 // scratch: base durations per op
}

// newSimulator returns a simulator positioned before the first step.
func newSimulator(cfg *Config, m *model, steps []stepInfo) *simulator {
	s := &simulator{cfg: cfg, steps: steps, clock: startNS + int64(cfg.Seed%1000)*1_000_000}
	s.plans[phasePrefill] = newPhasePlan(m, phasePrefill, cfg.CUDAGraph)
	s.plans[phaseDecode] = newPhasePlan(m, phaseDecode, cfg.CUDAGraph)
	r := rand.New(rand.NewPCG(cfg.Seed, 0xb1a5))
	s.bias = make([]float64, cfg.Ranks)
	for i := range s.bias {
		s.bias[i] = r.Float64()
	}
	s.rng = rand.New(rand.NewPCG(cfg.Seed, 0))
	s.t.start = make([][]int64, cfg.Ranks)
	s.t.dur = make([][]int64, cfg.Ranks)
	return s
}

// planSteps lists the steps of a run.
func planSteps(cfg *Config) []stepInfo {
	var steps []stepInfo
	for i := 0; i < cfg.PrefillSteps; i++ {
		steps = append(steps, stepInfo{index: len(steps), ph: phasePrefill, batch: cfg.Batch,
			tokens: cfg.Batch * cfg.PromptLen, context: cfg.PromptLen})
	}
	for i := 0; i < cfg.DecodeSteps; i++ {
		steps = append(steps, stepInfo{index: len(steps), ph: phaseDecode, batch: cfg.Batch,
			tokens: cfg.Batch, context: cfg.PromptLen + i})
	}
	return steps
}

// step simulates step i (steps must be simulated in order) and returns its
// timing, valid until the next call.
func (s *simulator) step(i int) *stepTiming {
	info := s.steps[i]
	s.rng = rand.New(rand.NewPCG(s.cfg.Seed, 0x9e3779b97f4a7c15^uint64(i)))
	t := &s.t
	t.info, t.plan = info, s.plans[info.ph]
	s.cpu()
	s.gpu()
	s.finish()
	return t
}

// jitter returns v scaled by 1 + rel·N(0,1), kept within [0.5v, 1.5v].
func (s *simulator) jitter(v float64, rel float64) int64 {
	f := 1 + rel*s.rng.NormFloat64()
	f = math.Max(0.5, math.Min(1.5, f))
	return int64(math.Round(v * f))
}

// resize returns b with length n, reusing its storage.
func resize(b []int64, n int) []int64 {
	if cap(b) < n {
		return make([]int64, n)
	}
	return b[:n]
}

// chainNS is the CPU time the python frames of one unit add.
func (s *simulator) chainNS() int64 {
	return 2 * int64(s.cfg.PythonFunctions+2) * chainStepNS
}

// cpu lays out the CPU side of the step: per-step frames, input preparation
// and every launch unit.
func (s *simulator) cpu() {
	t, pp := &s.t, s.t.plan
	t.outerStart = s.clock
	t.annStart = t.outerStart + 3*outerFrameNS + 1_000
	t.prepStart = t.annStart + 2_000
	t.prepEnd = t.prepStart + s.jitter(float64(prepBaseNS+prepPerLayerNS*s.cfg.Layers)+float64(s.cfg.Layers*int(s.chainNS())), 0.05)
	t.unitStart = resize(t.unitStart, len(pp.units))
	t.unitDur = resize(t.unitDur, len(pp.units))
	t.rtStart = resize(t.rtStart, len(pp.ops))
	t.rtDur = resize(t.rtDur, len(pp.ops))
	cur := t.prepEnd + unitGapNS
	t.fwdStart, t.fwdEnd = cur, cur
	for ui := range pp.units {
		u := &pp.units[ui]
		if ui == pp.modelUnits[0] {
			t.fwdStart = cur
			cur += 800
		}
		if u.layer >= 0 && pp.layerUnits[u.layer][0] == ui {
			cur += 400 // the layer's nn.Module frame opens
		}
		t.unitStart[ui] = cur
		t.unitDur[ui] = s.unitCPU(u, cur)
		cur += t.unitDur[ui] + s.jitter(unitGapNS, 0.2)
		if u.layer >= 0 && pp.layerUnits[u.layer][1] == ui {
			cur += 400
		}
		if ui == pp.modelUnits[1] {
			t.fwdEnd = cur
			cur += 800
		}
	}
	t.syncStart = cur
}

// unitCPU times the runtime calls of one unit starting at cur and returns
// the unit's CPU window length.
func (s *simulator) unitCPU(u *unit, cur int64) int64 {
	t, pp := &s.t, s.t.plan
	in := int64(s.cfg.PythonFunctions+2)*chainStepNS + s.jitter(launchBaseNS/2, 0.2)
	if u.launch < 0 {
		d := s.jitter(graphLaunchNS, 0.1)
		for _, j := range u.ops {
			t.rtStart[j], t.rtDur[j] = cur+in, d
		}
		return in + d + s.jitter(launchBaseNS/2, 0.2) + int64(s.cfg.PythonFunctions+2)*chainStepNS
	}
	if pp.launches[u.launch].kernels[0].coll != nil {
		in += s.jitter(collectiveCPUNS, 0.1)
	}
	rt := cur + in
	for _, j := range u.ops {
		t.rtStart[j] = rt
		t.rtDur[j] = s.jitter(runtimeNS, 0.15)
		rt += t.rtDur[j] + 300
	}
	return rt - cur + s.jitter(launchBaseNS/2, 0.2) + int64(s.cfg.PythonFunctions+2)*chainStepNS
}
