package analyze

import (
	"cmp"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"

	"kinetoscope/analyze/crossrank"
	"kinetoscope/ingest"
)

// DefaultLaunchGapUS is the default of Options.LaunchGapUS: HTA's
// consecutive_kernel_delay (30 us), under which HTA calls a gap between
// kernels "kernel wait".
const DefaultLaunchGapUS = 30.0

// Account splits one step's span on one rank (first kernel start to last
// kernel end, every stream) into parts that add up to it exactly. Busy
// time (some GPU event running on some stream) goes to the event class of
// highest priority running at each instant: compute, then memory ops, then
// communication transfer, unsplit communication, and last communication
// wait, so that communication overlapped by compute counts as compute and
// only exposed communication is communication. The rest of the span is
// GPU idle, split by its cause (IdleCauses). For a phase (Phase.Account)
// every figure is the mean per step.
type Account struct {
	SpanUS float64 `json:"span_us"`
	// ComputeUS is the exposed time of compute kernels; Compute splits it
	// by bucket.
	ComputeUS float64              `json:"compute_us"`
	Compute   map[BucketID]float64 `json:"compute"`
	// MemoryUS is the exposed time of memcpy and memset.
	MemoryUS float64 `json:"memory_us"`
	// TransferUS and WaitUS are the exposed transfer and wait of
	// collectives aligned across ranks (Comm); WaitFor says which rank the
	// wait was for (the rank that arrived last). CommUnsplitUS is exposed
	// communication that could not be split (one rank, or unmatched).
	TransferUS float64    `json:"transfer_us"`
	WaitUS     float64    `json:"wait_us"`
	WaitFor    []RankWait `json:"wait_for,omitempty"`
	// WaitIn splits WaitUS by the collective's bucket (AllReduce, ...).
	WaitIn        map[BucketID]float64 `json:"wait_in,omitempty"`
	CommUnsplitUS float64              `json:"comm_unsplit_us"`
	// IdleUS is the span minus the busy time (no GPU event on any
	// stream); Idle splits it by cause.
	IdleUS float64    `json:"idle_us"`
	Idle   IdleCauses `json:"idle"`
	// BoundaryUS is the step boundary, outside the span: the GPU idle from
	// the previous step's last event to this step's first (scheduler and
	// Python between steps); 0 for the first step. The step's period is
	// SpanUS + BoundaryUS.
	BoundaryUS float64 `json:"boundary_us"`
}

// RankWait is communication wait for one late rank.
type RankWait struct {
	Rank int     `json:"rank"`
	US   float64 `json:"us"`
}

// IdleCauses splits GPU idle in the span by what the CPU side of the trace
// says of the gap, judged from the event that ends it and its launch call:
//   - HostLateUS: the launch call began after the GPU went idle (the host
//     did not enqueue fast enough);
//   - AfterSyncUS: as host late, but the launching thread was blocked in a
//     synchronising call (cudaStreamSynchronize, cudaDeviceSynchronize,
//     cudaEventSynchronize, a synchronous cudaMemcpy, their HIP and driver
//     forms: the .item() or .tolist() of a sampler) when the GPU went idle;
//   - GraphLaunchUS: the gap before a graph replay's first kernel whose
//     cudaGraphLaunch began before the GPU went idle;
//   - LaunchGapUS: a gap up to Options.LaunchGapUS whose launch was early;
//   - UnexplainedUS: the rest (a longer gap after an early launch: a wait on
//     another stream or an event; an event with no launch in the trace).
//
// HostLateUS + AfterSyncUS is HTA's "host wait", LaunchGapUS its "kernel
// wait" and UnexplainedUS + GraphLaunchUS its "other", but over the union of
// streams and per step where HTA goes per stream over the whole trace.
type IdleCauses struct {
	HostLateUS    float64 `json:"host_late_us"`
	LaunchGapUS   float64 `json:"launch_gap_us"`
	AfterSyncUS   float64 `json:"after_sync_us"`
	GraphLaunchUS float64 `json:"graph_launch_us"`
	UnexplainedUS float64 `json:"unexplained_us"`
}

// AccountOptions are the thresholds the accounts were made with, written
// in the report (Report.Account).
type AccountOptions struct {
	LaunchGapUS float64 `json:"launch_gap_us"`
}

// Part is one named part of an account.
type Part struct {
	Name string  `json:"name"`
	US   float64 `json:"us"`
}

// Part names, as Parts gives them.
const (
	PartCompute     = "compute"
	PartMemory      = "memory ops"
	PartTransfer    = "communication transfer"
	PartWait        = "communication wait"
	PartCommUnsplit = "communication (not split)"
	PartHostLate    = "idle: host late"
	PartLaunchGap   = "idle: launch gap"
	PartAfterSync   = "idle: after a host sync"
	PartGraphLaunch = "idle: graph launch"
	PartUnexplained = "idle: unexplained"
)

// Parts returns the account's top-level parts, which add up to the span,
// in a fixed order: compute, memory, transfer, wait, unsplit
// communication, then idle by cause.
func (a *Account) Parts() []Part {
	return []Part{
		{PartCompute, a.ComputeUS}, {PartMemory, a.MemoryUS}, {PartTransfer, a.TransferUS},
		{PartWait, a.WaitUS}, {PartCommUnsplit, a.CommUnsplitUS},
		{PartHostLate, a.Idle.HostLateUS}, {PartLaunchGap, a.Idle.LaunchGapUS},
		{PartAfterSync, a.Idle.AfterSyncUS}, {PartGraphLaunch, a.Idle.GraphLaunchUS},
		{PartUnexplained, a.Idle.UnexplainedUS},
	}
}

// Largest returns the account's largest part (the first in Parts order on
// a tie).
func (a *Account) Largest() Part {
	ps := a.Parts()
	best := ps[0]
	for _, p := range ps[1:] {
		if p.US > best.US {
			best = p
		}
	}
	return best
}

// Part returns the figure of the part named name (Parts' names), 0 for an
// unknown name.
func (a *Account) Part(name string) float64 {
	for _, p := range a.Parts() {
		if p.Name == name {
			return p.US
		}
	}
	return 0
}

// LargestIdle returns the largest idle cause of a (a zero Part when the
// step has no idle).
func (a *Account) LargestIdle() Part {
	var best Part
	for _, p := range a.Parts() {
		if strings.HasPrefix(p.Name, "idle: ") && p.US > best.US {
			best = p
		}
	}
	return best
}

// Sum returns the sum of the parts: the span, up to rounding.
func (a *Account) Sum() float64 {
	s := 0.0
	for _, p := range a.Parts() {
		s += p.US
	}
	return s
}

// add adds b's figures to a.
func (a *Account) add(b *Account) {
	a.SpanUS += b.SpanUS
	a.ComputeUS += b.ComputeUS
	for id, v := range b.Compute {
		a.Compute[id] += v
	}
	a.MemoryUS += b.MemoryUS
	a.TransferUS += b.TransferUS
	a.WaitUS += b.WaitUS
	for _, w := range b.WaitFor {
		a.WaitFor = addRankWait(a.WaitFor, w.Rank, w.US)
	}
	for id, v := range b.WaitIn {
		if a.WaitIn == nil {
			a.WaitIn = make(map[BucketID]float64)
		}
		a.WaitIn[id] += v
	}
	a.CommUnsplitUS += b.CommUnsplitUS
	a.IdleUS += b.IdleUS
	a.Idle.HostLateUS += b.Idle.HostLateUS
	a.Idle.LaunchGapUS += b.Idle.LaunchGapUS
	a.Idle.AfterSyncUS += b.Idle.AfterSyncUS
	a.Idle.GraphLaunchUS += b.Idle.GraphLaunchUS
	a.Idle.UnexplainedUS += b.Idle.UnexplainedUS
	a.BoundaryUS += b.BoundaryUS
}

// scale multiplies every figure of a by f.
func (a *Account) scale(f float64) {
	a.SpanUS *= f
	a.ComputeUS *= f
	for id := range a.Compute {
		a.Compute[id] *= f
	}
	a.MemoryUS *= f
	a.TransferUS *= f
	a.WaitUS *= f
	for i := range a.WaitFor {
		a.WaitFor[i].US *= f
	}
	for id := range a.WaitIn {
		a.WaitIn[id] *= f
	}
	a.CommUnsplitUS *= f
	a.IdleUS *= f
	a.Idle.HostLateUS *= f
	a.Idle.LaunchGapUS *= f
	a.Idle.AfterSyncUS *= f
	a.Idle.GraphLaunchUS *= f
	a.Idle.UnexplainedUS *= f
	a.BoundaryUS *= f
}

func addRankWait(ws []RankWait, rank int, us float64) []RankWait {
	for i := range ws {
		if ws[i].Rank == rank {
			ws[i].US += us
			return ws
		}
	}
	ws = append(ws, RankWait{Rank: rank, US: us})
	slices.SortFunc(ws, func(a, b RankWait) int { return a.Rank - b.Rank })
	return ws
}

// meanAccount returns the mean account over the steps keep selects; nil
// when none has one.
func meanAccount(steps []Step, keep func(*Step) bool) *Account {
	m := &Account{Compute: make(map[BucketID]float64)}
	n := 0
	for i := range steps {
		if s := &steps[i]; s.Account != nil && keep(s) {
			m.add(s.Account)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	m.scale(1 / float64(n))
	return m
}

// isSyncCall says whether a CPU runtime or driver call named name blocks
// its thread until GPU work completes.
func isSyncCall(name string) bool {
	if strings.Contains(name, "Synchronize") {
		return true
	}
	switch name {
	case "cudaMemcpy", "cudaMemcpy2D", "hipMemcpy", "hipMemcpyWithStream", "hipMemcpy2D",
		"cuMemcpyDtoH", "cuMemcpyDtoH_v2", "cuMemcpy", "hipMemcpyDtoH":
		return true
	}
	return false
}

// syncIndex holds each CPU thread's synchronising calls, in start order
// (calls on one thread do not overlap), by thread index (Launch.Thread),
// with a cursor per thread: queries come mostly in time order.
type syncIndex struct {
	calls  [][]ingest.Launch
	cursor []int
}

func newSyncIndex(t *ingest.Trace) *syncIndex {
	x := &syncIndex{calls: make([][]ingest.Launch, len(t.Threads)), cursor: make([]int, len(t.Threads))}
	known := make([]int8, t.Strings.Len()) // 0 unknown, 1 sync, -1 not
	for _, l := range t.Launches.All() {
		k := known[l.Name]
		if k == 0 {
			k = -1
			if isSyncCall(t.Name(l.Name)) {
				k = 1
			}
			known[l.Name] = k
		}
		if k == 1 && int(l.Thread) >= 0 && int(l.Thread) < len(x.calls) {
			x.calls[l.Thread] = append(x.calls[l.Thread], *l)
		}
	}
	for _, ls := range x.calls {
		slices.SortFunc(ls, func(a, b ingest.Launch) int { return cmp.Compare(a.Start, b.Start) })
	}
	return x
}

// blocked says whether thread was in a synchronising call that began
// before launch and had not returned when the GPU went idle at idleFrom.
func (x *syncIndex) blocked(thread int32, idleFrom, launch int64) bool {
	if thread < 0 || int(thread) >= len(x.calls) {
		return false
	}
	ls := x.calls[thread]
	// i: the number of calls that began before launch.
	i := x.cursor[thread]
	if i > len(ls) || (i > 0 && ls[i-1].Start >= launch) {
		i, _ = slices.BinarySearchFunc(ls, launch, func(l ingest.Launch, t int64) int { return cmp.Compare(l.Start, t) })
	}
	for i < len(ls) && ls[i].Start < launch {
		i++
	}
	x.cursor[thread] = i
	return i > 0 && ls[i-1].Start+ls[i-1].Dur >= idleFrom
}

// lateRanks returns, per matched collective instance, the rank that
// arrived last: the one whose kernel waited least (the others wait for
// it; ties go to the rank listed first).
func lateRanks(a *crossrank.Alignment) []int {
	if a == nil || a.Matched == 0 {
		return nil
	}
	late := make([]int, a.Matched)
	least := make([]int64, a.Matched)
	for i := range late {
		late[i], least[i] = -1, 1<<62
	}
	for _, rc := range a.Ranks {
		for gi, s := range rc.All() {
			k, ok := rc.Instance(gi)
			if ok && k < len(late) && s.WaitNS < least[k] {
				late[k], least[k] = rc.Rank, s.WaitNS
			}
		}
	}
	return late
}

// Account event classes, in priority order after the compute buckets
// (0..nb-1) and memory buckets (nb..2nb-1).
const (
	clsTransferOff = iota // + 2nb
	clsUnsplitOff
	clsWaitOff // + 2nb + k: wait for the k-th late rank of the step
)

// maxClasses bounds the classes of one step's sweep (the active set is a
// two-word bit set); wait for late ranks past it is lumped with the last.
const maxClasses = 128

// accountPass holds what the account of one rank needs beyond its pass.
type accountPass struct {
	p        *rankPass
	rc       *crossrank.RankComm // nil without an alignment
	late     []int               // late rank per matched instance
	syncs    *syncIndex
	gapNS    int64
	isGraph  map[ingest.StrID]bool
	nb       int
	group    []Group   // per bucket index
	waitRank []waitKey // this step's (late rank, bucket) pairs, by wait class offset
	// starts and ends are the interval ends of the step being swept.
	starts, ends []point
}

// waitKey is what a wait class is for: the rank waited for and the
// collective's bucket.
type waitKey struct {
	rank   int
	bucket uint8
}

// point is one end of an event's (or an event part's) interval.
type point struct {
	t     int64
	ev    int32 // GPU event index
	cls   int16
	start bool
}

// addAccounts sets Step.Account of every step of rk and the phase means.
// The steps are swept in ranges side by side (minAccountSteps at least),
// each with scratch, caches and cursors of its own; the boundary to the
// step before is set after, in order.
func addAccounts(rk *Rank, p *rankPass, rc *crossrank.RankComm, late []int, opt Options) {
	addAccountsIn(rk, p, rc, late, opt, runtime.GOMAXPROCS(0), minAccountSteps)
}

// addAccountsIn is addAccounts with the steps swept in ranges, one a core
// of cores, of least steps at least (assignParts).
func addAccountsIn(rk *Rank, p *rankPass, rc *crossrank.RankComm, late []int, opt Options, cores, least int) {
	ap := accountPass{p: p, rc: rc, late: late, syncs: newSyncIndex(p.t),
		gapNS: int64(launchGapUS(opt) * 1e3), nb: len(p.tab.ids), group: p.tab.group}
	inParts(assignParts(len(rk.Steps), cores, least), func(_, from, to int) {
		ap := ap // its own scratch, graph cache and sync cursors
		ap.isGraph = make(map[ingest.StrID]bool)
		ap.syncs = &syncIndex{calls: ap.syncs.calls, cursor: make([]int, len(ap.syncs.cursor))}
		for s := from; s < to; s++ {
			if p.steps[s].events > 0 {
				rk.Steps[s].Account = ap.step(s)
			}
		}
	})
	prevEnd := int64(-1 << 63)
	for s := range rk.Steps {
		if p.steps[s].events == 0 {
			continue
		}
		if first := p.steps[s].first; prevEnd > -1<<63 && first > prevEnd {
			rk.Steps[s].Account.BoundaryUS = us(first - prevEnd)
		}
		prevEnd = max(prevEnd, p.steps[s].last)
	}
	setPhaseAccounts(rk)
}

// minAccountSteps is the fewest steps addAccounts sweeps on a goroutine of
// its own.
const minAccountSteps = 16

// setPhaseAccounts sets the mean account of each phase of rk.
func setPhaseAccounts(rk *Rank) {
	rk.Decode.Account = meanAccount(rk.Steps, isPhase(PhaseDecode))
	if rk.Prefill != nil {
		rk.Prefill.Account = meanAccount(rk.Steps, isPhase(PhasePrefill))
	}
	if rk.Mixed != nil {
		rk.Mixed.Account = meanAccount(rk.Steps, isPhase(PhaseMixed))
	}
}

func launchGapUS(opt Options) float64 {
	if opt.LaunchGapUS > 0 {
		return opt.LaunchGapUS
	}
	return DefaultLaunchGapUS
}

// step sweeps the interval ends of step s's events in time order: between
// two ends the time goes to the running class of highest priority, or,
// when nothing runs, to the idle cause of the gap.
func (ap *accountPass) step(s int) *Account {
	p := ap.p
	ap.starts, ap.ends = ap.starts[:0], ap.ends[:0]
	ap.waitRank = ap.waitRank[:0]
	for _, i := range p.order[p.off[s]:p.off[s+1]] {
		ap.addEvent(i)
	}
	// Starts and ends are each nearly in order already (events come in
	// trace order, and a stream runs one at a time): two sorts of nearly
	// sorted runs and a merge cost less than one sort of both.
	byTime := func(a, b point) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return int(a.ev) - int(b.ev)
	}
	slices.SortFunc(ap.starts, byTime)
	slices.SortFunc(ap.ends, byTime)
	nc := 2*ap.nb + clsWaitOff + len(ap.waitRank)
	byCls := make([]int64, nc)
	count := make([]int32, nc)
	var active [2]uint64
	acc := &Account{Compute: make(map[BucketID]float64)}
	var idle IdleCauses
	var idleNS int64
	var prev int64
	for k, i, j := 0, 0, 0; i < len(ap.starts) || j < len(ap.ends); k++ {
		var pt point
		if j < len(ap.ends) && (i == len(ap.starts) || ap.ends[j].t <= ap.starts[i].t) { // ends first
			pt, j = ap.ends[j], j+1
		} else {
			pt, i = ap.starts[i], i+1
		}
		if k > 0 {
			if d := pt.t - prev; d > 0 {
				if c := topClass(active); c >= 0 {
					byCls[c] += d
				} else {
					idleNS += d
					ap.gap(&idle, prev, pt)
				}
			}
		}
		prev = pt.t
		c := pt.cls
		if pt.start {
			if count[c] == 0 {
				active[c>>6] |= 1 << (c & 63)
			}
			count[c]++
		} else {
			count[c]--
			if count[c] == 0 {
				active[c>>6] &^= 1 << (c & 63)
			}
		}
	}
	ap.fill(acc, byCls)
	acc.Idle = idle
	acc.IdleUS = us(idleNS)
	st := &p.steps[s]
	acc.SpanUS = us(st.last - st.first)
	return acc
}

// fill moves the per-class times into acc.
func (ap *accountPass) fill(acc *Account, byCls []int64) {
	var compute, memory int64
	for b := range ap.nb {
		if v := byCls[b]; v > 0 {
			compute += v
			acc.Compute[ap.p.tab.ids[b]] = us(v)
		}
		memory += byCls[ap.nb+b]
	}
	acc.ComputeUS, acc.MemoryUS = us(compute), us(memory)
	acc.TransferUS = us(byCls[2*ap.nb+clsTransferOff])
	acc.CommUnsplitUS = us(byCls[2*ap.nb+clsUnsplitOff])
	var wait int64
	for k, w := range ap.waitRank {
		v := byCls[2*ap.nb+clsWaitOff+k]
		wait += v
		if v > 0 {
			acc.WaitFor = addRankWait(acc.WaitFor, w.rank, us(v))
			if acc.WaitIn == nil {
				acc.WaitIn = make(map[BucketID]float64)
			}
			acc.WaitIn[ap.p.tab.ids[w.bucket]] += us(v)
		}
	}
	acc.WaitUS = us(wait)
}

// topClass returns the lowest set bit of active, -1 when none is.
func topClass(active [2]uint64) int {
	if active[0] != 0 {
		return bits.TrailingZeros64(active[0])
	}
	if active[1] != 0 {
		return 64 + bits.TrailingZeros64(active[1])
	}
	return -1
}

// addEvent adds the interval ends of GPU event i: a collective aligned
// across ranks as its wait (first) and its transfer, any other event whole.
func (ap *accountPass) addEvent(i int32) {
	p := ap.p
	ev := p.t.GPU.At(int(i))
	b := int(p.bucketOf[i])
	start, end := ev.Start, ev.Start+ev.Dur
	switch ap.group[b] {
	case GroupCompute:
		ap.seg(i, start, end, b)
	case GroupMemory:
		ap.seg(i, start, end, ap.nb+b)
	default:
		s, ok := crossrank.Split{}, false
		if ap.rc != nil {
			s, ok = ap.rc.Split(int(i))
		}
		if !ok {
			ap.seg(i, start, end, 2*ap.nb+clsUnsplitOff)
			return
		}
		if s.WaitNS > 0 {
			ap.seg(i, start, start+s.WaitNS, ap.waitClass(int(i)))
		}
		ap.seg(i, start+s.WaitNS, end, 2*ap.nb+clsTransferOff)
	}
}

// waitClass returns the class of the wait of matched collective i: one per
// late rank and bucket of the step.
func (ap *accountPass) waitClass(i int) int {
	r := -1
	if k, ok := ap.rc.Instance(i); ok && k < len(ap.late) {
		r = ap.late[k]
	}
	key := waitKey{r, ap.p.bucketOf[i]}
	k := slices.Index(ap.waitRank, key)
	if k < 0 {
		if 2*ap.nb+clsWaitOff+len(ap.waitRank) >= maxClasses && len(ap.waitRank) > 0 {
			// Past the bit set: lumped with the last late rank.
			return 2*ap.nb + clsWaitOff + len(ap.waitRank) - 1
		}
		ap.waitRank = append(ap.waitRank, key)
		k = len(ap.waitRank) - 1
	}
	return 2*ap.nb + clsWaitOff + k
}

func (ap *accountPass) seg(i int32, start, end int64, cls int) {
	if end < start {
		end = start
	}
	ap.starts = append(ap.starts, point{start, i, int16(cls), true})
	ap.ends = append(ap.ends, point{end, i, int16(cls), false})
}

// gap adds the idle from idleFrom to next's start (next is the start of the
// event that ends the gap) to its cause.
func (ap *accountPass) gap(idle *IdleCauses, idleFrom int64, next point) {
	p := ap.p
	d := us(next.t - idleFrom)
	ev := p.t.GPU.At(int(next.ev))
	var l *ingest.Launch
	j := p.launchAt[next.ev]
	if j >= 0 {
		l = p.t.Launches.At(int(j))
	}
	switch {
	case l == nil:
		idle.UnexplainedUS += d
	case l.Start > idleFrom && ap.syncs.blocked(l.Thread, idleFrom, l.Start):
		idle.AfterSyncUS += d
	case l.Start > idleFrom:
		idle.HostLateUS += d
	case graphLaunch(p.t, l, ap.isGraph) && p.replayStart[j] == ev.Start:
		idle.GraphLaunchUS += d
	case next.t-idleFrom <= ap.gapNS:
		idle.LaunchGapUS += d
	default:
		idle.UnexplainedUS += d
	}
}

// addRankAccounts sets the account of every step and phase of every rank,
// with the wait of aligned collectives attributed to the late rank.
func addRankAccounts(r *Report, passes []*rankPass, a *crossrank.Alignment, opt Options) {
	late := lateRanks(a)
	var wg sync.WaitGroup
	for i := range r.Ranks {
		var rc *crossrank.RankComm
		if a != nil && a.Matched > 0 && i < len(a.Ranks) {
			rc = a.Ranks[i]
		}
		wg.Go(func() { addAccounts(&r.Ranks[i], passes[i], rc, late, opt) })
	}
	wg.Wait()
	r.Account = &AccountOptions{LaunchGapUS: launchGapUS(opt)}
}

// MeanAccount returns the mean account of steps; nil when a step has none
// or there are no steps.
func MeanAccount(steps []*Step) *Account {
	m := &Account{Compute: make(map[BucketID]float64)}
	for _, s := range steps {
		if s.Account == nil {
			return nil
		}
		m.add(s.Account)
	}
	if len(steps) == 0 {
		return nil
	}
	m.scale(1 / float64(len(steps)))
	return m
}
