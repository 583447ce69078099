package synth

// rankAccum collects a rank's truth while its events are written.
type rankAccum struct {
	bidx      map[string]int
	steps     []StepTime
	infos     []StepInfo
	waits     []int64 // AllReduce wait per step
	transfers []int64 // AllReduce transfer per step
	colls     map[string]*CollectiveTime
	// opCorr and opExt are the correlation and External ids of the current
	// step's ops.
	opCorr, opExt []int64
}

// init sizes the accumulator for n steps.
func (a *rankAccum) init(n int) {
	a.bidx = bucketIndex()
	a.steps = make([]StepTime, 0, n)
	a.infos = make([]StepInfo, 0, n)
	a.colls = map[string]*CollectiveTime{}
}

// resizeOps makes room for n ops' ids.
func (a *rankAccum) resizeOps(n int) {
	a.opCorr = resize(a.opCorr, n)
	a.opExt = resize(a.opExt, n)
}

// beginStep opens the record of a step and returns it.
func (a *rankAccum) beginStep(t *stepTiming) *StepTime {
	a.infos = append(a.infos, StepInfo{Index: t.info.index, Name: t.info.name(), Phase: t.info.ph.String(),
		Tokens: t.info.tokens, Batch: t.info.batch, StartNS: t.annStart, EndNS: t.annEnd})
	a.steps = append(a.steps, StepTime{Index: t.info.index, GPUStart: -1, BucketNS: make([]int64, len(a.bidx))})
	a.waits = append(a.waits, 0)
	a.transfers = append(a.transfers, 0)
	return &a.steps[len(a.steps)-1]
}

// add accounts one GPU op of the step.
func (a *rankAccum) add(st *StepTime, op *gpuOp, ts, dur int64) {
	if st.GPUStart < 0 {
		st.GPUStart = ts
	}
	st.GPUNS += dur
	st.SpanNS = ts + dur - st.GPUStart
	st.BucketNS[a.bidx[op.k.bucket]] += dur
}

// collective accounts the wait and transfer of one collective.
func (a *rankAccum) collective(st *StepTime, k *kernel, ts, dur, lastArrival, transfer int64) {
	c := a.colls[k.coll.name]
	if c == nil {
		c = &CollectiveTime{}
		a.colls[k.coll.name] = c
	}
	wait := lastArrival - ts
	c.Count++
	c.KernelNS += dur
	c.WaitNS += wait
	c.TransferNS += transfer
	if wait == 0 {
		c.LastArrivals++
	}
	if k.coll.allReduce {
		st.AllReduceWaitNS += wait
		a.waits[len(a.waits)-1] += wait
		a.transfers[len(a.transfers)-1] += transfer
	}
}

// truth returns the rank's truth.
func (a *rankAccum) truth() RankTruth {
	return RankTruth{
		Decode:      phaseTime(a.steps, a.infos, phaseDecode, a.waits, a.transfers),
		Prefill:     phaseTime(a.steps, a.infos, phasePrefill, a.waits, a.transfers),
		Steps:       a.steps,
		Collectives: a.colls,
	}
}
