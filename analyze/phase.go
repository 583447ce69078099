package analyze

// buildSteps turns the step accumulators into Steps.
func (p *rankPass) buildSteps() []Step {
	out := make([]Step, len(p.steps))
	looked, ctx := p.embeddingTokens(), p.shapeContexts()
	for i := range p.steps {
		a, m := &p.steps[i], &p.marks[i]
		s := Step{Index: i, Name: m.name, Phase: m.phase, PhaseSource: m.phaseSource,
			Tokens: m.tokens, Batch: m.batch, Context: m.context, StartUS: us(m.start),
			KernelUS: us(a.kernelNS), BusyUS: us(a.busyNS), Kernels: a.events,
			GraphLaunches: a.graphLaunches, Buckets: p.bucketStats(a)}
		if s.Tokens == 0 {
			s.Tokens = int(looked[i])
		}
		if s.Context > 0 {
			s.ContextSource = ContextAnnotation
		} else if ctx[i] > 0 {
			s.Context, s.ContextSource = int(ctx[i]), ContextRecordShapes
		}
		if a.events > 0 {
			s.SpanUS = us(a.last - a.first)
			s.IdleUS = max(0, s.SpanUS-s.BusyUS)
		}
		out[i] = s
	}
	return out
}

// embeddingTokens sums, per step, the tokens the embedding looked up in it
// (the trace's recorded shapes; zeros without them). A lookup belongs to the
// step in which it ran on the CPU.
func (p *rankPass) embeddingTokens() []int64 {
	out := make([]int64, len(p.steps))
	hint := 0
	for _, e := range p.t.Embeddings.All() {
		if s := p.stepAt(e.Start, &hint); s >= 0 {
			out[s] += e.Tokens
		}
	}
	return out
}

// bucketStats lists the buckets that have events.
func (p *rankPass) bucketStats(a *stepAcc) map[BucketID]BucketStat {
	m := make(map[BucketID]BucketStat)
	for b, n := range a.bucketN {
		if n > 0 {
			m[p.tab.ids[b]] = BucketStat{US: us(a.bucketNS[b]), Count: int(n)}
		}
	}
	return m
}

// Aggregate sums the steps that keep selects (all of them when keep is
// nil) into a Phase: totals, span mean/p50/p90, and per bucket the time and
// calls per step and the shares of kernel time and of span.
func Aggregate(steps []Step, keep func(*Step) bool) PhaseSummary {
	ph := PhaseSummary{Buckets: make(map[BucketID]BucketShare)}
	var spans []float64
	for i := range steps {
		s := &steps[i]
		if keep != nil && !keep(s) {
			continue
		}
		ph.Steps++
		ph.KernelUS += s.KernelUS
		ph.BusyUS += s.BusyUS
		ph.SpanUS += s.SpanUS
		spans = append(spans, s.SpanUS)
		for id, b := range s.Buckets {
			x := ph.Buckets[id]
			x.US += b.US
			x.Count += b.Count
			ph.Buckets[id] = x
		}
	}
	if ph.Steps == 0 {
		return ph
	}
	n := float64(ph.Steps)
	ph.SpanMeanUS = ph.SpanUS / n
	ph.KernelPerStepUS = ph.KernelUS / n
	ph.SpanP50US = quantileFloat(spans, 0.5)
	ph.SpanP90US = quantileFloat(spans, 0.9)
	for id, b := range ph.Buckets {
		b.USPerStep = b.US / n
		b.CallsPerStep = float64(b.Count) / n
		b.ShareOfKernel = pctOf(b.US, ph.KernelUS)
		b.ShareOfSpan = pctOf(b.US, ph.SpanUS)
		ph.Buckets[id] = b
	}
	return ph
}

func pctOf(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}

// isPhase selects the steps of a phase for Aggregate, as InPhase.
func isPhase(name string) func(*Step) bool {
	return func(s *Step) bool { return inPhase(name, s) }
}

// InPhase says whether step s counts in the figures of phase (decode,
// prefill, mixed, or "all": every step with GPU work): a step cut off by
// the end of the profile (Step.Truncated) counts in none.
func InPhase(phase string, s *Step) bool { return inPhase(phase, s) }
