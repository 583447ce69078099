package synth

// unit is one CPU-side launch unit of a step: an eager launch, or the single
// CUDA graph launch that replays every graphed launch of a decode step.
type unit struct {
	launch int   // index into the phase's launches; -1 for the graph launch
	ops    []int // GPU ops it launches, indices into phasePlan.ops
	layer  int   // decoder layer of an eager launch, -1 otherwise
	model  bool  // part of the model forward (inside _model_forward)
}

// gpuOp is one GPU op of a step, in stream order.
type gpuOp struct {
	k    *kernel
	unit int // index into phasePlan.units
	coll int // index into phasePlan.colls, -1 if not a collective
	seg  int // collective this op precedes (its segment), -1 after the last
}

// phasePlan is the fixed structure of every step of one phase.
type phasePlan struct {
	ph       phase
	graph    bool // decode replays a CUDA graph
	launches []launch
	units    []unit
	ops      []gpuOp
	colls    []int // op index of each collective, in order
	heavy    []int // per collective, the op absorbing a rank's extra time; -1 none
	// layerUnits[l] is the first and last unit of layer l (eager only).
	layerUnits [][2]int
	// modelUnits is the first and last unit of the model forward.
	modelUnits [2]int
}

// newPhasePlan lays out the units, ops and collective segments of phase p.
func newPhasePlan(m *model, p phase, graph bool) *phasePlan {
	pp := &phasePlan{ph: p, graph: graph && p == phaseDecode, launches: m.launches(p)}
	graphUnit := -1
	for i := range pp.launches {
		l := &pp.launches[i]
		u := len(pp.units)
		if pp.graph && l.inGraph {
			if graphUnit < 0 {
				graphUnit = u
				pp.units = append(pp.units, unit{launch: -1, layer: -1, model: true})
			}
			u = graphUnit
		} else {
			pp.units = append(pp.units, unit{launch: i, layer: l.layer, model: l.inGraph})
		}
		for _, k := range l.kernels {
			pp.units[u].ops = append(pp.units[u].ops, len(pp.ops))
			op := gpuOp{k: k, unit: u, coll: -1}
			if k.coll != nil {
				op.coll = len(pp.colls)
				pp.colls = append(pp.colls, len(pp.ops))
			}
			pp.ops = append(pp.ops, op)
		}
	}
	pp.segments()
	pp.layerUnits = layerUnits(pp.units, m.layers)
	pp.modelUnits = [2]int{-1, -1}
	for i, u := range pp.units {
		if u.model {
			if pp.modelUnits[0] < 0 {
				pp.modelUnits[0] = i
			}
			pp.modelUnits[1] = i
		}
	}
	return pp
}

// segments assigns each op the collective it precedes and picks the heavy
// op of each segment.
func (pp *phasePlan) segments() {
	pp.heavy = make([]int, len(pp.colls))
	c := 0
	best := -1
	for j := range pp.ops {
		op := &pp.ops[j]
		if c >= len(pp.colls) {
			op.seg = -1
			continue
		}
		op.seg = c
		switch {
		case op.coll >= 0:
			pp.heavy[c] = best
			c++
			best = -1
		case op.k.kind == kindKernel && (best < 0 || op.k.heavy && !pp.ops[best].k.heavy ||
			op.k.heavy == pp.ops[best].k.heavy && op.k.decodeUS > pp.ops[best].k.decodeUS):
			best = j
		}
	}
}

// layerUnits returns the first and last unit index of each layer, -1 when a
// layer has no eager unit (CUDA graph).
func layerUnits(units []unit, layers int) [][2]int {
	lu := make([][2]int, layers)
	for i := range lu {
		lu[i] = [2]int{-1, -1}
	}
	for i, u := range units {
		if u.layer < 0 || u.launch < 0 {
			continue
		}
		if lu[u.layer][0] < 0 {
			lu[u.layer][0] = i
		}
		lu[u.layer][1] = i
	}
	return lu
}
