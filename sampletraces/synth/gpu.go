package synth

import "math"

// gpu lays out every rank's GPU stream for the step. Compute kernels take
// the same time on every rank except for a per-rank extra on the heaviest
// kernel before each collective; a collective ends at the same time on all
// ranks, max(arrival) + transfer, so a rank's wait is max(arrival) minus its
// own arrival.
func (s *simulator) gpu() {
	t, pp := &s.t, s.t.plan
	n := len(pp.ops)
	s.base = resize(s.base, n)
	gap := make([]int64, n)
	ready := make([]int64, n)
	for j := range pp.ops {
		op := &pp.ops[j]
		if op.coll < 0 {
			s.base[j] = s.opDur(op.k)
		}
		if pp.units[op.unit].launch < 0 {
			gap[j] = s.jitter(graphGapNS, 0.3)
			ready[j] = t.rtStart[j] + graphLatencyNS
		} else {
			gap[j] = s.jitter(eagerGapNS, 0.3)
			ready[j] = t.rtStart[j] + s.jitter(launchLatencyNS, 0.2)
		}
	}
	extra := s.extras()
	s.transfers(extra)
	g0 := s.origin(gap, ready)
	for r := range t.start {
		t.start[r] = resize(t.start[r], n)
		t.dur[r] = resize(t.dur[r], n)
	}
	s.timeline(g0, gap, extra)
}

// origin returns the GPU start of the step: late enough that no op starts
// before its launch, so each rank's stream then runs back to back.
func (s *simulator) origin(gap, ready []int64) int64 {
	t, pp := &s.t, s.t.plan
	g0, off := ready[0], int64(0)
	for j := range pp.ops {
		g0 = max(g0, ready[j]-off)
		off += s.base[j] + gap[j]
		if c := pp.ops[j].coll; c >= 0 {
			off += t.transfer[c]
		}
	}
	return g0
}

// timeline runs all ranks' streams in lockstep from g0.
func (s *simulator) timeline(g0 int64, gap []int64, extra [][]int64) {
	t, pp := &s.t, s.t.plan
	ranks := len(t.start)
	cursor := make([]int64, ranks)
	for r := range cursor {
		cursor[r] = g0
	}
	t.maxArrival = resize(t.maxArrival, len(pp.colls))
	for j := range pp.ops {
		op := &pp.ops[j]
		if op.coll >= 0 {
			last := cursor[0]
			for _, c := range cursor {
				last = max(last, c)
			}
			end := last + t.transfer[op.coll]
			t.maxArrival[op.coll] = last
			for r := range cursor {
				t.start[r][j], t.dur[r][j] = cursor[r], end-cursor[r]
				cursor[r] = end + gap[j]
			}
			continue
		}
		for r := range cursor {
			d := s.base[j]
			if op.seg >= 0 && pp.heavy[op.seg] == j {
				d += extra[r][op.seg]
			}
			t.start[r][j], t.dur[r][j] = cursor[r], d
			cursor[r] += d + gap[j]
		}
	}
}

// extras draws each rank's extra compute time before each collective:
// skew·(0.55·bias + 0.45·U), so slow ranks tend to stay slow.
func (s *simulator) extras() [][]int64 {
	pp := s.t.plan
	skew := s.cfg.SkewUS * 1000
	if pp.ph == phasePrefill {
		skew *= 4
	}
	extra := make([][]int64, s.cfg.Ranks)
	for r := range extra {
		extra[r] = make([]int64, len(pp.colls))
		for c := range pp.colls {
			u := s.rng.Float64()
			if pp.heavy[c] >= 0 {
				extra[r][c] = int64(skew * (0.55*s.bias[r] + 0.45*u))
			}
		}
	}
	return extra
}

// transfers sets each collective's transfer time. Prefill and gathers follow
// a ring bandwidth model; decode AllReduces are scaled so that their total
// transfer is AllReduceShare of the step's GPU time.
func (s *simulator) transfers(extra [][]int64) {
	t, pp := &s.t, s.t.plan
	t.transfer = resize(t.transfer, len(pp.colls))
	var other, compute, arNeeded float64
	for c, j := range pp.colls {
		k := pp.ops[j].k
		t.transfer[c] = s.ringTime(k)
		if pp.ph == phaseDecode && k.coll.allReduce {
			arNeeded++
			continue
		}
		other += float64(t.transfer[c])
	}
	if arNeeded == 0 {
		return
	}
	for j := range pp.ops {
		compute += float64(s.base[j])
	}
	for c := range pp.colls {
		var m int64
		for r := range extra {
			m = max(m, extra[r][c])
		}
		compute += float64(m)
	}
	share := s.cfg.AllReduceShare
	s.spreadAllReduce(int64(math.Round(share / (1 - share) * (compute + other))))
}

// spreadAllReduce splits total over the decode AllReduces with ±3% noise,
// exactly.
func (s *simulator) spreadAllReduce(total int64) {
	t, pp := &s.t, s.t.plan
	w := make([]float64, 0, len(pp.colls))
	idx := make([]int, 0, len(pp.colls))
	var sum float64
	for c, j := range pp.colls {
		if pp.ops[j].k.coll.allReduce {
			f := max(0.5, 1+0.03*s.rng.NormFloat64())
			w, idx, sum = append(w, f), append(idx, c), sum+f
		}
	}
	left := total
	for i, c := range idx {
		v := int64(float64(total) * w[i] / sum)
		if i == len(idx)-1 {
			v = left
		}
		t.transfer[c], left = v, left-v
	}
}

// ringTime is a ring collective's transfer time for kernel k in this step.
func (s *simulator) ringTime(k *kernel) int64 {
	n := float64(s.cfg.Ranks)
	_, out := collElems(k, s.t.info, s.cfg.Ranks)
	bytes := float64(out) * 2 * (n - 1) / n
	if k.coll.allReduce {
		bytes *= 2
	}
	return s.jitter(collBaseNS+bytes/ringBytesPerNS, 0.03)
}

// collElems returns the In and Out msg nelems of collective kernel k.
func collElems(k *kernel, info stepInfo, ranks int) (in, out int64) {
	if k.coll.gather {
		in = int64(info.batch) * k.coll.elemsPerToken / int64(ranks)
		return in, in * int64(ranks)
	}
	in = int64(info.tokens) * k.coll.elemsPerToken
	return in, in
}

// opDur draws the duration of compute or memcpy op k in this step.
func (s *simulator) opDur(k *kernel) int64 {
	info := s.t.info
	us := k.decodeUS * (0.55 + 0.45*float64(info.batch)/32)
	if info.ph == phasePrefill && k.prefillUSPerK > 0 {
		us = k.decodeUS + k.prefillUSPerK*float64(info.tokens)/1000
	}
	if k.heavy && k.bucket == "attention" && info.ph == phaseDecode {
		us *= 1 + float64(info.context)/8192
	}
	return max(500, s.jitter(us*1000, 0.04))
}

// finish closes the step on the CPU: the host waits for the sampled tokens,
// then the annotation and the per-step frames end.
func (s *simulator) finish() {
	t := &s.t
	var gpuEnd int64
	for r := range t.start {
		last := len(t.start[r]) - 1
		gpuEnd = max(gpuEnd, t.start[r][last]+t.dur[r][last])
	}
	t.syncDur = max(500, gpuEnd+1_500-t.syncStart)
	t.annEnd = t.syncStart + t.syncDur + s.chainNS() + 6_000
	t.outerEnd = t.annEnd + 3*outerFrameNS
	s.clock = t.outerEnd + s.jitter(stepGapNS, 0.2)
}
