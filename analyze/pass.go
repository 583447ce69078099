package analyze

import (
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"kinetoscope/ingest"
)

// stepAcc accumulates one step's GPU events.
type stepAcc struct {
	kernelNS      int64
	busyNS        int64
	first, last   int64 // earliest start, latest end; first > last when empty
	events        int
	graphLaunches int
	bucketNS      []int64
	bucketN       []int32
}

// rankPass holds the per-event results of analysing one trace.
type rankPass struct {
	t *ingest.Trace
	// capture is the CUDA-graph capture trace of t's rank, nil when none
	// was given: the roofline takes graph replays' shapes from it.
	capture *ingest.Trace
	tab     bucketTab
	ec      *eventClassifier
	li      launchIndex
	marks   []stepMark
	// cutoff is the time from which events are past the last step (an
	// inferred step cut short by the end of the profile).
	cutoff int64
	// source and evidence say how the steps were found (Rank.StepSource,
	// Rank.StepEvidence).
	source, evidence string

	stepOf   []int32 // per GPU event; -1 outside every step
	launchAt []int32 // per GPU event: its launch's index in Trace.Launches, -1 when absent
	bucketOf []uint8 // per GPU event
	plainOf  []uint8 // per GPU event, its bucket outside the sampling phase (bucketOf before accumulate)
	steps    []stepAcc
	outside  stepAcc
	delays   []int64 // ns, CPU launch to kernel start (not graph replays)
	// replayStart is each graph replay's first kernel start, by the index
	// of its cudaGraphLaunch.
	replayStart map[int32]int64
	noLaunch    int // GPU events whose launch is not in the trace
	// off and order list each step's GPU events: those of step s are
	// order[off[s]:off[s+1]], in trace order.
	off, order []int32
	// opOf is each GPU event's op with shapes (linkOps, an index into
	// Trace.Shapes.Ops; -1 for none) and opNS each op's kernel time, set
	// once the steps are cut, for the layer fold's slots and the roofline.
	opOf []int32
	opNS []int64
	// works is the work of each op kernels are linked to (opWorks), for
	// the roofline rows.
	works []opWork
	// links are each GPU event's link to the work it does, linkWhy why the
	// kernels of each graph replay took none (kernelLinks).
	links    []opLink
	linkWhy  map[int32]string
	lastGEMM map[int64]int64
	// checks are the rank's checks; overlapNS the same-stream overlap per
	// step they found.
	checks    RankChecks
	overlapNS []int64
}

func newRankPass(t *ingest.Trace, tab bucketTab, c *Classifier, li launchIndex, marks []stepMark, cutoff int64) *rankPass {
	p := &rankPass{t: t, tab: tab, ec: newEventClassifier(c, tab, t), li: li,
		marks: marks, cutoff: cutoff}
	p.steps = make([]stepAcc, len(marks))
	for i := range p.steps {
		p.steps[i] = newStepAcc(len(tab.ids))
	}
	p.outside = newStepAcc(len(tab.ids))
	return p
}

func newStepAcc(nb int) stepAcc {
	return stepAcc{first: 1<<63 - 1, last: -1 << 63, bucketNS: make([]int64, nb), bucketN: make([]int32, nb)}
}

// stepAt returns the step holding ts, or -1 before the first step and
// from the cutoff on. hint speeds up mostly increasing queries.
func (p *rankPass) stepAt(ts int64, hint *int) int32 {
	ms := p.marks
	if ts >= p.cutoff {
		return -1
	}
	if h := *hint; h >= 0 && h < len(ms) && ms[h].start <= ts && (h+1 == len(ms) || ts < ms[h+1].start) {
		return int32(h)
	}
	i := sort.Search(len(ms), func(i int) bool { return ms[i].start > ts }) - 1
	*hint = i
	return int32(i)
}

func gemmKey(step int32, dev int16) int64 { return int64(step)<<16 | int64(uint16(dev)) }

// run makes every pass over the events. The passes that share no state
// run side by side: the graph launches are counted beside assign (they
// read only the launches and the step marks), the busy time beside
// accumulate (it reads only the events' steps), each writing fields of
// the steps of its own.
func (p *rankPass) run() {
	var wg sync.WaitGroup
	wg.Go(func() { defer region("countGraphLaunches")(); p.countGraphLaunches() })
	end := region("assign")
	p.assign()
	end()
	wg.Go(func() { defer region("busy")(); p.busy() })
	end = region("accumulate")
	p.accumulate()
	end()
	wg.Wait()
}

// assign finds each event's launch, step and bucket, in ranges of the
// events side by side (assignParts): each with its own launch-index hint,
// caches and maps, merged in order, so the result is the one pass's.
func (p *rankPass) assign() {
	p.assignIn(assignParts(p.t.GPU.Len(), runtime.GOMAXPROCS(0), minAssignPart))
}

// assignIn is assign over the ranges of the events between parts' bounds.
func (p *rankPass) assignIn(parts []int) {
	t := p.t
	n := t.GPU.Len()
	p.lastGEMM, p.noLaunch = make(map[int64]int64), 0
	p.stepOf = make([]int32, n)
	p.launchAt = make([]int32, n)
	p.bucketOf = make([]uint8, n)
	p.plainOf = make([]uint8, n)
	p.replayStart = make(map[int32]int64)
	p.delays = make([]int64, n)
	collDep := false
	for _, ev := range t.GPU.All() { // the name cache, filled here, is only read by the ranges
		collDep = p.ec.info(ev).collDep || collDep
	}
	if collDep {
		p.ec.links.build()
	}
	done := make([]assigned, len(parts)-1)
	inParts(parts, func(k, from, to int) { done[k] = p.assignRange(from, to) })
	w := 0 // each range wrote its delays from its first event's index on: close the gaps
	for k, a := range done {
		p.noLaunch += a.noLaunch
		w += copy(p.delays[w:], p.delays[parts[k]:parts[k]+a.delays])
		for k, v := range a.lastGEMM {
			if w, ok := p.lastGEMM[k]; !ok || v > w {
				p.lastGEMM[k] = v
			}
		}
		for j, v := range a.replayStart {
			if w, ok := p.replayStart[j]; !ok || v < w {
				p.replayStart[j] = v
			}
		}
	}
	p.delays = p.delays[:w]
}

// inParts runs f on the ranges between parts' bounds side by side: f(k,
// from, to) for range k.
func inParts(parts []int, f func(k, from, to int)) {
	var wg sync.WaitGroup
	for k := range len(parts) - 1 {
		wg.Go(func() { f(k, parts[k], parts[k+1]) })
	}
	wg.Wait()
}

// assignParts returns the bounds of the ranges of n events assign works
// on: one a core of cores, of at least least events.
func assignParts(n, cores, least int) []int {
	k := max(min(cores, n/least), 1)
	parts := make([]int, k+1)
	for i := range parts {
		parts[i] = i * n / k
	}
	return parts
}

// minAssignPart is the fewest events assign gives a goroutine of its own.
const minAssignPart = 1 << 15

// assigned is what assign found in one range of the events besides
// their launch, step and bucket: the rest of rankPass's per-event state.
type assigned struct {
	noLaunch    int
	delays      int // written to rankPass.delays from the range's start
	lastGEMM    map[int64]int64
	replayStart map[int32]int64
}

// assignRange assigns events lo to hi.
func (p *rankPass) assignRange(lo, hi int) assigned {
	t := p.t
	li := p.li // its own hint
	ec := *p.ec
	ec.colls = make(map[collKey]uint8) // its own cache; the name cache is filled
	a := assigned{lastGEMM: make(map[int64]int64), replayStart: make(map[int32]int64)}
	isGraph := make(map[ingest.StrID]bool)
	hint := 0
	for i := lo; i < hi; i++ {
		ev := t.GPU.At(i)
		j := li.find(ev.Correlation)
		p.launchAt[i] = j
		var l *ingest.Launch
		if j >= 0 {
			l = t.Launches.At(int(j))
		}
		ts := ev.Start
		if l == nil {
			a.noLaunch++
		} else {
			ts = l.Start
		}
		s := p.stepAt(ts, &hint)
		b := ec.bucket(ev, l)
		p.stepOf[i], p.bucketOf[i], p.plainOf[i] = s, b, b
		if s >= 0 && p.tab.isGEMM(b) {
			k := gemmKey(s, ev.Device)
			if v, ok := a.lastGEMM[k]; !ok || ev.Start > v {
				a.lastGEMM[k] = ev.Start
			}
		}
		switch {
		case l == nil:
		case !graphLaunch(t, l, isGraph):
			p.delays[lo+a.delays] = ev.Start - l.Start
			a.delays++
		default:
			if v, ok := a.replayStart[j]; !ok || ev.Start < v {
				a.replayStart[j] = ev.Start
			}
		}
	}
	return a
}

// graphLaunch says whether l is a CUDA/HIP graph launch; cache holds the
// answer per name.
func graphLaunch(t *ingest.Trace, l *ingest.Launch, cache map[ingest.StrID]bool) bool {
	g, ok := cache[l.Name]
	if !ok {
		g = strings.Contains(t.Name(l.Name), "GraphLaunch")
		cache[l.Name] = g
	}
	return g
}

func (p *rankPass) countGraphLaunches() {
	cache := make(map[ingest.StrID]bool)
	hint := 0
	for _, l := range p.t.Launches.All() {
		if graphLaunch(p.t, l, cache) {
			if s := p.stepAt(l.Start, &hint); s >= 0 {
				p.steps[s].graphLaunches++
			}
		}
	}
}

// inSampling says whether GPU event i, ev, is in its step's sampling phase:
// it starts after the step's last GEMM on its device (the LM head; not in
// a training trace, whose last GEMMs are the backward pass's and whose
// optimizer comes after), or was launched in a sampler annotation. spans
// is filled on first use.
func (p *rankPass) inSampling(i int, ev *ingest.GPUEvent, spans *samplerSpans, training bool) bool {
	if s := p.stepOf[i]; s >= 0 && !training {
		if last, ok := p.lastGEMM[gemmKey(s, ev.Device)]; ok && ev.Start > last {
			return true
		}
	}
	if *spans == nil {
		*spans = findSamplerSpans(p.t)
	}
	if len(*spans) == 0 {
		return false
	}
	l := p.launch(i)
	return l != nil && spans.holds(l)
}

// launch returns the CPU launch of GPU event i, or nil when the trace
// lacks it (assign found it). It is safe for concurrent use.
func (p *rankPass) launch(i int) *ingest.Launch {
	if j := p.launchAt[i]; j >= 0 {
		return p.t.Launches.At(int(j))
	}
	return nil
}

// accumulate moves sampling-phase events to their sampling bucket, then sums
// time and counts per step and bucket.
func (p *rankPass) accumulate() {
	var spans samplerSpans
	training := p.training()
	for i, ev := range p.t.GPU.All() {
		if ni := p.ec.info(ev); ni.phaseDep && p.bucketOf[i] == ni.plain && p.inSampling(i, ev, &spans, training) {
			p.bucketOf[i] = ni.sampling
		}
		a := &p.outside
		if s := p.stepOf[i]; s >= 0 {
			a = &p.steps[s]
		}
		b := p.bucketOf[i]
		a.kernelNS += ev.Dur
		a.events++
		a.bucketNS[b] += ev.Dur
		a.bucketN[b]++
		a.first = min(a.first, ev.Start)
		a.last = max(a.last, ev.Start+ev.Dur)
	}
}

type interval struct {
	dev        int16
	start, end int64
}

// training says whether the trace ran training kernels: backward passes or
// optimizers. It reads the distinct names seen by the classifier.
func (p *rankPass) training() bool {
	for k := range p.ec.names {
		for id, ni := range p.ec.names[k] {
			if ni.done && trainingNames.MatchString(p.t.Name(ingest.StrID(id))) {
				return true
			}
		}
	}
	return false
}

// busy computes each step's busy time: the union of its events' intervals
// on each device, summed over devices.
func (p *rankPass) busy() {
	ns := len(p.steps)
	if ns == 0 {
		return
	}
	off := make([]int32, ns+1)
	for _, s := range p.stepOf {
		if s >= 0 {
			off[s+1]++
		}
	}
	for i := 1; i <= ns; i++ {
		off[i] += off[i-1]
	}
	order := make([]int32, off[ns])
	next := slices.Clone(off[:ns])
	for i, s := range p.stepOf {
		if s >= 0 {
			order[next[s]] = int32(i)
			next[s]++
		}
	}
	p.off, p.order = off, order
	var buf []interval
	for s := range ns {
		buf = buf[:0]
		for _, i := range order[off[s]:off[s+1]] {
			ev := p.t.GPU.At(int(i))
			buf = append(buf, interval{ev.Device, ev.Start, ev.Start + ev.Dur})
		}
		p.steps[s].busyNS = unionLength(buf)
	}
}

// unionLength sorts iv and returns the length of its union per device,
// summed.
func unionLength(iv []interval) int64 {
	slices.SortFunc(iv, func(a, b interval) int {
		if a.dev != b.dev {
			return int(a.dev) - int(b.dev)
		}
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	var total int64
	for i := 0; i < len(iv); {
		dev, s, e := iv[i].dev, iv[i].start, iv[i].end
		for i++; i < len(iv) && iv[i].dev == dev && iv[i].start <= e; i++ {
			e = max(e, iv[i].end)
		}
		total += e - s
	}
	return total
}

// traceTotals returns the kernel time of every GPU event of the trace, in
// steps or not, and the number of its communication kernels.
func (p *rankPass) traceTotals() (kernelUS float64, commKernels int) {
	var ns int64
	add := func(a *stepAcc) {
		ns += a.kernelNS
		for b, n := range a.bucketN {
			if p.tab.isComm(uint8(b)) {
				commKernels += int(n)
			}
		}
	}
	for i := range p.steps {
		add(&p.steps[i])
	}
	add(&p.outside)
	return us(ns), commKernels
}

// graphDelays returns, per graph replay, the time from its cudaGraphLaunch
// to its first kernel's start.
func (p *rankPass) graphDelays() []int64 {
	out := make([]int64, 0, len(p.replayStart))
	for j, start := range p.replayStart {
		out = append(out, start-p.t.Launches.At(int(j)).Start)
	}
	return out
}
