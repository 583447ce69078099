// Package fromtrace builds chart input that needs per-kernel data, which
// the analysis Report does not keep, from the ingested traces: the GPU
// events of one step for the step timeline.
//
// It reproduces analyze's step assignment (an event belongs to the last
// step that started at or before its CPU launch, or its GPU start when
// steps were inferred or the launch is missing) and classifies events with
// analyze's rules. Collective kernels without collective args need a
// search of the trace each; past a few hundred in one step they are
// classified once per kernel name, and the chart says so.
package fromtrace

import (
	"fmt"
	"math"

	"kinetoscope/analyze"
	"kinetoscope/ingest"
	"kinetoscope/render"
)

// Timeline returns the GPU events of step stepIndex on rank rank (-1: the
// first rank; stepIndex -1: the slowest step of the rank's main phase).
func Timeline(set *ingest.Set, r *analyze.Report, opt analyze.Options, rank, stepIndex int) (*render.TimelineInput, error) {
	t, rk, err := pickRank(set, r, rank)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	i, err := pickStep(rk, stepIndex)
	if err != nil {
		return nil, fmt.Errorf("timeline %s: %w", t.Path, err)
	}
	cls, err := classifier(opt)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	lo, hi := window(rk.Steps, i)
	in := &render.TimelineInput{Rank: rk.Rank, Step: rk.Steps[i].Index, Phase: rk.Steps[i].Phase, Buckets: r.Buckets}
	launches := launchStarts(t)
	byGPU := rk.StepSource == "inferred"
	eb := &eventBuckets{cls: cls, t: t, byName: map[ingest.StrID]analyze.BucketID{}, memo: map[matchKey]analyze.BucketID{}}
	first := int64(math.MaxInt64)
	var evs []evInfo // per kernel
	for _, ev := range t.GPU.All() {
		ts, ok := launches[ev.Correlation]
		if !ok || byGPU {
			ts = ev.Start
		}
		if ts < lo || ts >= hi {
			continue
		}
		evs = append(evs, evInfo{ev.Device, ev.Kind})
		in.Kernels = append(in.Kernels, render.TimelineKernel{Stream: int(ev.Stream), StartUS: float64(ev.Start) / 1000,
			DurUS: float64(ev.Dur) / 1000, Bucket: eb.bucket(ev), Name: t.Name(ev.Name)})
		first = min(first, ev.Start)
	}
	samplingPhase(eb, in.Kernels, evs)
	if len(in.Kernels) == 0 {
		return nil, fmt.Errorf("timeline %s: step %d has no GPU events", t.Path, in.Step)
	}
	in.StartUS = float64(first) / 1000
	if eb.approx {
		in.Notes = append(in.Notes, fmt.Sprintf("Collective kernels after the first %d were classified by kernel name only.", maxExact))
	}
	return in, nil
}

// samplingPhase moves to their sampling-phase bucket the kernels whose
// name has one and that start after the step's last GEMM on their device,
// as analyze does. (analyze also counts kernels launched inside a sampler
// annotation; the timeline does not look for those.)
func samplingPhase(eb *eventBuckets, ks []render.TimelineKernel, evs []evInfo) {
	last := map[int16]float64{}
	for i, k := range ks {
		if k.Bucket == analyze.GEMM || k.Bucket == analyze.MarlinGEMM {
			if v, ok := last[evs[i].device]; !ok || k.StartUS > v {
				last[evs[i].device] = k.StartUS
			}
		}
	}
	for i := range ks {
		k, kind := &ks[i], evs[i].kind
		if v, ok := last[evs[i].device]; !ok || k.StartUS <= v {
			continue
		}
		if eb.match(k.Name, kind, "", false) == k.Bucket {
			k.Bucket = eb.match(k.Name, kind, "", true)
		}
	}
}

// evInfo is what samplingPhase needs of a kernel's event.
type evInfo struct {
	device int16
	kind   ingest.GPUKind
}

// classifier builds the classifier analyze used.
func classifier(opt analyze.Options) (*analyze.Classifier, error) {
	rules := append([]analyze.Rule(nil), opt.Rules...)
	if opt.RulesFile != "" {
		fr, err := analyze.LoadRules(opt.RulesFile)
		if err != nil {
			return nil, err
		}
		rules = append(rules, fr...)
	}
	return analyze.NewClassifier(rules)
}

// pickRank finds the trace and the report rank of rank (-1: the first).
func pickRank(set *ingest.Set, r *analyze.Report, rank int) (*ingest.Trace, *analyze.Rank, error) {
	if set == nil || r == nil || len(r.Ranks) == 0 {
		return nil, nil, fmt.Errorf("no ranks")
	}
	for i := range r.Ranks {
		rk := &r.Ranks[i]
		if rank >= 0 && rk.Rank != rank {
			continue
		}
		for _, t := range set.Traces {
			if t.Path == rk.File {
				return t, rk, nil
			}
		}
		return nil, nil, fmt.Errorf("no trace file %s in %s", rk.File, set.Path)
	}
	return nil, nil, fmt.Errorf("no rank %d", rank)
}

// pickStep returns the position of the step with index idx, or for -1 of
// the slowest step of the main phase (decode when there is any).
func pickStep(rk *analyze.Rank, idx int) (int, error) {
	if len(rk.Steps) == 0 {
		return 0, fmt.Errorf("no steps")
	}
	if idx >= 0 {
		for i, s := range rk.Steps {
			if s.Index == idx {
				return i, nil
			}
		}
		return 0, fmt.Errorf("no step %d (steps %d to %d)", idx, rk.Steps[0].Index, rk.Steps[len(rk.Steps)-1].Index)
	}
	phase := ""
	if rk.Decode.Steps > 0 {
		phase = "decode"
	}
	best := -1
	for i, s := range rk.Steps {
		if (phase == "" || s.Phase == phase) && (best < 0 || s.SpanUS > rk.Steps[best].SpanUS) {
			best = i
		}
	}
	return best, nil
}

// window is the time range, in ns, whose launches belong to step i: from
// its start to the next step's start (the last step never ends).
func window(steps []analyze.Step, i int) (lo, hi int64) {
	lo, hi = nsOf(steps[i].StartUS), math.MaxInt64
	if i+1 < len(steps) {
		hi = nsOf(steps[i+1].StartUS)
	}
	return lo, hi
}

// nsOf converts report microseconds back to trace nanoseconds.
func nsOf(us float64) int64 { return int64(math.Round(us * 1000)) }

// launchStarts maps correlation id to CPU launch start, keeping the
// earliest launch of an id.
func launchStarts(t *ingest.Trace) map[int64]int64 {
	m := make(map[int64]int64, t.Launches.Len())
	for _, l := range t.Launches.All() {
		if v, ok := m[l.Correlation]; !ok || l.Start < v {
			m[l.Correlation] = l.Start
		}
	}
	return m
}

// maxExact is how many collective kernels without collective args are
// classified one by one (each a search of the trace); beyond it, by kernel
// name.
const maxExact = 256

// eventBuckets classifies the GPU events of one trace.
type eventBuckets struct {
	cls    *analyze.Classifier
	t      *ingest.Trace
	exact  int
	byName map[ingest.StrID]analyze.BucketID
	memo   map[matchKey]analyze.BucketID
	approx bool // some collective kernels were classified by name only
}

// matchKey is one question to the classifier.
type matchKey struct {
	name     string
	kind     ingest.GPUKind
	coll     string
	sampling bool
}

// match asks the classifier once per distinct question.
func (e *eventBuckets) match(name string, kind ingest.GPUKind, coll string, sampling bool) analyze.BucketID {
	k := matchKey{name, kind, coll, sampling}
	b, ok := e.memo[k]
	if !ok {
		b = e.cls.Match(name, kind, coll, sampling)
		e.memo[k] = b
	}
	return b
}

// bucket classifies ev: by name, except collective kernels, which need
// their collective (from their args, else from the CPU side).
func (e *eventBuckets) bucket(ev *ingest.GPUEvent) analyze.BucketID {
	t := e.t
	name := t.Name(ev.Name)
	if ev.Coll >= 0 && int(ev.Coll) < len(t.Collectives) {
		return e.match(name, ev.Kind, t.Name(t.Collectives[ev.Coll].Name), false)
	}
	b := e.match(name, ev.Kind, "", false)
	if info, ok := analyze.BucketByID(b); !ok || info.Group != analyze.GroupCommunication {
		return b
	}
	if e.exact < maxExact {
		e.exact++
		return e.cls.Classify(t, ev)
	}
	if b, ok := e.byName[ev.Name]; ok {
		return b
	}
	e.approx = true
	b = e.cls.Classify(t, ev)
	e.byName[ev.Name] = b
	return b
}
