package synth

import "strconv"

// stepFrames are the python frames around every step's annotation.
func stepFrames() []frame {
	return []frame{
		{name: "vllm/v1/worker/worker_base.py(361): execute_model", module: -1},
		{name: "torch/utils/_contextlib.py(120): decorate_context", module: -1},
		{name: "vllm/v1/worker/gpu_model_runner.py(2296): execute_model", module: -1},
	}
}

// writeStep simulates step i and writes its CPU and GPU events.
func (w *rankWriter) writeStep(i int) {
	t := w.sim.step(i)
	pp := t.plan
	w.acc.resizeOps(len(pp.ops))
	withStack := w.cfg.PythonFunctions > 0
	var top int64
	if withStack {
		for j, f := range stepFrames() {
			off := int64(j) * outerFrameNS
			top = w.pyFrame(f, t.outerStart+off, t.outerEnd-t.outerStart-2*off, top)
		}
	}
	ann := w.cpuOp(catUserAnnotation, t.info.name(), t.annStart, t.annEnd-t.annStart)
	fwd, layer := top, top
	if withStack {
		w.prep(t, top)
		fwd = w.pyFrame(frame{name: "vllm/v1/worker/gpu_model_runner.py(2135): _model_forward", module: -1},
			t.fwdStart, t.fwdEnd-t.fwdStart, top)
	}
	for ui := range pp.units {
		u := &pp.units[ui]
		parent := top
		if u.model {
			parent = fwd
		}
		if u.layer >= 0 && withStack {
			lu := pp.layerUnits[u.layer]
			if lu[0] == ui {
				s, e := t.unitStart[lu[0]]-300, t.unitStart[lu[1]]+t.unitDur[lu[1]]+300
				layer = w.pyFrame(frame{name: module("DeepseekV2DecoderLayer", u.layer), module: int64(u.layer)}, s, e-s, fwd)
			}
			parent = layer
		}
		w.unit(t, ui, parent)
	}
	w.sync(t, top)
	w.gpuAnnotation(t, ann)
	w.gpuEvents(t)
}

// gpuAnnotation writes the GPU-side range of the step annotation on the
// stream, from the step's first GPU op to its last.
func (w *rankWriter) gpuAnnotation(t *stepTiming, ext int64) {
	s, d := t.start[w.rank], t.dur[w.rank]
	last := len(s) - 1
	w.complete(catGPUAnnotation, t.info.name(), w.rank, gpuStream, s[0], s[last]+d[last]-s[0])
	w.argInt("External id", ext, true)
	w.closeArgs()
}

// prep writes the input preparation chains, one per layer.
func (w *rankWriter) prep(t *stepTiming, parent int64) {
	n := int64(w.cfg.Layers)
	width := (t.prepEnd - t.prepStart) / n
	for i := int64(0); i < n; i++ {
		s := t.prepStart + i*width
		w.chain(w.prepChain, s+50, s+width-50, parent)
	}
}

// unit writes one launch unit: its python chain, cpu_ops and runtime calls.
func (w *rankWriter) unit(t *stepTiming, ui int, parent int64) {
	pp := t.plan
	u := &pp.units[ui]
	start, end := t.unitStart[ui], t.unitStart[ui]+t.unitDur[ui]
	w.chain(w.chains[pp][ui], start, end, parent)
	if u.launch < 0 {
		w.corr++
		j0 := u.ops[0]
		w.runtimeCall(apiGraphLaunch, t.rtStart[j0], t.rtDur[j0], 0, w.corr)
		w.flow(true, w.corr, w.cpuPID, w.cpuPID, t.rtStart[j0])
		for _, j := range u.ops {
			w.acc.opCorr[j], w.acc.opExt[j] = w.corr, 0
		}
		return
	}
	l := &pp.launches[u.launch]
	in := int64(w.cfg.PythonFunctions+1) * chainStepNS
	opS, opE := start+in, end-in
	var ext int64
	switch k := l.kernels[0]; {
	case k.coll != nil && w.cfg.CollectiveArgs:
		w.cpuOp(catCPUOp, k.coll.cpuOp, opS, opE-opS)
		ext = w.commOp(k, t.info, opS+1_000, opE-opS-1_500)
	case k.coll != nil:
		ext = w.cpuOp(catCPUOp, k.coll.vllmOp, opS, opE-opS)
	default:
		ext = w.cpuOp(catCPUOp, l.cpuOp, opS, opE-opS)
	}
	for _, j := range u.ops {
		w.corr++
		w.runtimeCall(l.api, t.rtStart[j], t.rtDur[j], ext, w.corr)
		w.flow(true, w.corr, w.cpuPID, w.cpuPID, t.rtStart[j])
		w.acc.opCorr[j], w.acc.opExt[j] = w.corr, ext
	}
}

// sync writes the host's wait for the sampled tokens.
func (w *rankWriter) sync(t *stepTiming, parent int64) {
	in := int64(w.cfg.PythonFunctions+1) * chainStepNS
	w.chain(w.syncChain, t.syncStart, t.syncStart+t.syncDur+2*in, parent)
	w.corr++
	w.runtimeCall(apiEventSync, t.syncStart+in, t.syncDur, 0, w.corr)
}

// gpuEvents writes this rank's GPU ops of the step and accounts them.
func (w *rankWriter) gpuEvents(t *stepTiming) {
	pp, r := t.plan, w.rank
	st := w.acc.beginStep(t)
	for j := range pp.ops {
		op := &pp.ops[j]
		ts, dur := t.start[r][j], t.dur[r][j]
		w.gpuEvent(op.k, t.info, ts, dur, w.acc.opExt[j], w.acc.opCorr[j])
		w.flow(false, w.acc.opCorr[j], r, gpuStream, ts)
		w.acc.add(st, op, ts, dur)
		if op.coll >= 0 {
			w.acc.collective(st, op.k, ts, dur, t.maxArrival[op.coll], t.transfer[op.coll])
		}
	}
}

// gpuEvent writes one kernel or memcpy event.
func (w *rankWriter) gpuEvent(k *kernel, info stepInfo, ts, dur, ext, corr int64) {
	c := catKernel
	if k.kind == kindMemcpy {
		c = catMemcpy
	}
	w.complete(c, k.name, w.rank, gpuStream, ts, dur)
	first := true
	if ext > 0 {
		w.argInt("External id", ext, true)
		first = false
	}
	if c == catKernel {
		w.argInt("queued", 0, first)
		first = false
	}
	w.argInt("device", int64(w.rank), first)
	w.argInt("context", 1, false)
	w.argInt("stream", gpuStream, false)
	w.argInt("correlation", corr, false)
	if c == catMemcpy {
		n := int64(info.batch)
		if k.perToken {
			n = int64(info.tokens)
		}
		bytes := k.bytesPerReq * n
		w.argInt("bytes", bytes, false)
		w.b = append(w.b, `, "memory bandwidth (GB/s)": `...)
		w.b = strconv.AppendFloat(w.b, float64(bytes)/float64(max(dur, 1)), 'g', -1, 64)
		w.closeArgs()
		return
	}
	w.b = append(w.b, k.argsTail...)
	if k.coll != nil && w.cfg.CollectiveArgs {
		w.collArgs(k, info)
	}
	w.closeArgs()
}

// collArgs appends the collective args Kineto attaches to NCCL kernels.
func (w *rankWriter) collArgs(k *kernel, info stepInfo) {
	in, out := collElems(k, info, w.cfg.Ranks)
	w.argStr("Collective name", k.coll.name)
	w.argInt("In msg nelems", in, false)
	w.argInt("Out msg nelems", out, false)
	w.argInt("Group size", int64(w.cfg.Ranks), false)
	w.argStr("dtype", "BFloat16")
	w.argStr("In split size", "[]")
	w.argStr("Out split size", "[]")
	w.argStr("Process Group Name", "0")
	w.argStr("Process Group Description", "default_pg")
	w.argStr("Process Group Ranks", w.pgRank)
}
