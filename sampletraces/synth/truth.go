package synth

// ShareDefinition says exactly what Config.AllReduceShare sets.
const ShareDefinition = "In every decode step, the sum of the AllReduce transfer times " +
	"(for each AllReduce: the time from the last rank's arrival to the common end, which is the " +
	"AllReduce kernel time of the last-arriving rank) divided by the step's GPU time " +
	"(sum of all GPU event durations, kernels and memcpys, which is the same on every rank " +
	"by construction). A rank's own AllReduce kernel time adds its wait for later ranks."

// Truth is what a synthetic run holds by construction. Times are integer
// nanoseconds in the trace's time base unless a field says otherwise.
type Truth struct {
	Synthetic bool   `json:"synthetic"` // always true
	Note      string `json:"note"`
	Generator string `json:"generator"`
	Config    Config `json:"config"`
	// AllReduceShareDefinition explains Config.AllReduceShare.
	AllReduceShareDefinition string `json:"allreduce_share_definition"`
	TimeUnit                 string `json:"time_unit"` // "ns"
	// BaseTimeNS is the files' baseTimeNanoseconds.
	BaseTimeNS int64      `json:"base_time_ns"`
	Steps      []StepInfo `json:"steps"`
	// PerStep holds the per-step counts of each phase ("prefill", "decode").
	PerStep map[string]PhaseCounts `json:"per_step"`
	// KernelBuckets maps every GPU event name to its bucket id.
	KernelBuckets map[string]string `json:"kernel_buckets"`
	// BucketOrder is the order of the per-step bucket arrays below.
	BucketOrder []string    `json:"bucket_order"`
	Ranks       []RankTruth `json:"ranks"`
}

// StepInfo describes one step (the same on every rank).
type StepInfo struct {
	Index   int    `json:"index"`
	Name    string `json:"name"` // the execute_* annotation
	Phase   string `json:"phase"`
	Tokens  int    `json:"tokens"`
	Batch   int    `json:"batch"`
	StartNS int64  `json:"start_ns"` // annotation start
	EndNS   int64  `json:"end_ns"`   // annotation end
}

// PhaseCounts are the per-step counts of one phase, identical on every rank
// and every step of the phase.
type PhaseCounts struct {
	Steps      int            `json:"steps"`
	GPUEvents  int            `json:"gpu_events"` // kernels + memcpys
	Kernels    int            `json:"kernels"`    // category kernel
	Memcpys    int            `json:"memcpys"`
	ByBucket   map[string]int `json:"gpu_events_by_bucket"`
	ByName     map[string]int `json:"gpu_events_by_name"`
	Collective map[string]int `json:"collectives"` // by "Collective name"
	// GraphLaunches is the number of cudaGraphLaunch calls; GraphKernels the
	// GPU events sharing their correlation id.
	GraphLaunches int `json:"graph_launches"`
	GraphKernels  int `json:"graph_kernels"`
	// Launches counts runtime/driver calls that launch GPU work.
	Launches int `json:"launches"`
	CPUOps   int `json:"cpu_ops"`
	// CommOps counts record_param_comms ops (eager collectives only: a
	// graph replay has none).
	CommOps         int `json:"comm_ops"`
	PythonFunctions int `json:"python_functions"`
}

// RankTruth is one rank's file and its timing.
type RankTruth struct {
	Rank int    `json:"rank"`
	File string `json:"file"`
	// Slowness in [0,1) biases the rank's extra compute before collectives:
	// the slowest rank tends to arrive last and wait least.
	Slowness          float64          `json:"slowness"`
	PID               int              `json:"pid"`
	UncompressedBytes int64            `json:"uncompressed_bytes"`
	Events            int64            `json:"events"`
	EventsByCategory  map[string]int64 `json:"events_by_category"`
	// Decode and Prefill are per-step means over the phase's steps.
	Decode  *PhaseTime `json:"decode,omitempty"`
	Prefill *PhaseTime `json:"prefill,omitempty"`
	Steps   []StepTime `json:"steps"`
	// Collectives totals over all steps by "Collective name".
	Collectives map[string]*CollectiveTime `json:"collectives"`
}

// PhaseTime are per-step means of one phase on one rank.
type PhaseTime struct {
	Steps    int                `json:"steps"`
	GPUNS    float64            `json:"gpu_ns"`  // sum of GPU event durations
	SpanNS   float64            `json:"span_ns"` // first GPU start to last GPU end
	BucketNS map[string]float64 `json:"bucket_ns"`
	// BucketShare is BucketNS / GPUNS.
	BucketShare map[string]float64 `json:"bucket_share"`
	// AllReduceWaitNS and AllReduceTransferNS split the AllReduce bucket.
	AllReduceWaitNS     float64 `json:"allreduce_wait_ns"`
	AllReduceTransferNS float64 `json:"allreduce_transfer_ns"`
}

// StepTime is one step on one rank.
type StepTime struct {
	Index    int     `json:"index"`
	GPUNS    int64   `json:"gpu_ns"`
	SpanNS   int64   `json:"span_ns"`
	GPUStart int64   `json:"gpu_start_ns"`
	BucketNS []int64 `json:"bucket_ns"` // in Truth.BucketOrder
	// AllReduceWaitNS is this rank's total wait in the step's AllReduces.
	AllReduceWaitNS int64 `json:"allreduce_wait_ns"`
}

// CollectiveTime totals one kind of collective on one rank.
type CollectiveTime struct {
	Count      int   `json:"count"`
	KernelNS   int64 `json:"kernel_ns"`   // = WaitNS + TransferNS
	WaitNS     int64 `json:"wait_ns"`     // waiting for later ranks
	TransferNS int64 `json:"transfer_ns"` // after the last arrival
	// LastArrivals counts the collectives this rank arrived at last (ties
	// count for every tied rank).
	LastArrivals int `json:"last_arrivals"`
}

// bucketOrder lists the buckets the generator uses, in analyze's display
// order.
func bucketOrder() []string {
	return []string{"allreduce", "allgather", "marlin_gemm", "gemm", "attention", "moe_routing",
		"norm", "activation", "elementwise", "sampling", "memcpy"}
}

// bucketIndex maps bucket ids to their index in bucketOrder.
func bucketIndex() map[string]int {
	m := map[string]int{}
	for i, b := range bucketOrder() {
		m[b] = i
	}
	return m
}

// phaseTime averages a rank's steps of phase p.
func phaseTime(steps []StepTime, infos []StepInfo, p phase, waits, transfers []int64) *PhaseTime {
	pt := &PhaseTime{BucketNS: map[string]float64{}, BucketShare: map[string]float64{}}
	order := bucketOrder()
	for i, st := range steps {
		if infos[i].Phase != p.String() {
			continue
		}
		pt.Steps++
		pt.GPUNS += float64(st.GPUNS)
		pt.SpanNS += float64(st.SpanNS)
		for b, ns := range st.BucketNS {
			pt.BucketNS[order[b]] += float64(ns)
		}
		pt.AllReduceWaitNS += float64(waits[i])
		pt.AllReduceTransferNS += float64(transfers[i])
	}
	if pt.Steps == 0 {
		return nil
	}
	n := float64(pt.Steps)
	pt.GPUNS /= n
	pt.SpanNS /= n
	pt.AllReduceWaitNS /= n
	pt.AllReduceTransferNS /= n
	for b := range pt.BucketNS {
		pt.BucketNS[b] /= n
		pt.BucketShare[b] = pt.BucketNS[b] / pt.GPUNS
	}
	return pt
}
