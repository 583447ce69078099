package analyze

// Report is the result of analysing one run (one file or a profile
// directory). Its JSON form is a contract: fields may be added, never renamed.
// Times are microseconds (float) and shares are percentages.
type Report struct {
	Source    string   `json:"source"`    // the path analysed
	Synthetic bool     `json:"synthetic"` // the trace says it was generated
	Buckets   []Bucket `json:"buckets"`   // every bucket, in display order
	Ranks     []Rank   `json:"ranks"`     // one per trace, in rank order
	// Collectives is the cross-rank matching summary; nil for one rank.
	Collectives *Collectives `json:"collectives,omitempty"`
	// MissingRanks lists the ranks of the run that have no trace: those
	// its traces' process groups declare (world size, NCCL group ranks)
	// that no trace given is of. Every figure is then of the ranks given
	// only, and their collectives cannot be split into transfer and wait.
	MissingRanks []int `json:"missing_ranks,omitempty"`
	// Bandwidth is the achieved bandwidth of the collectives per kind and
	// message size; nil when the steps hold no communication kernel.
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
	// Headline is the finding a user wants first, from the decode steps.
	Headline *Headline `json:"headline,omitempty"`
	// Account holds the thresholds every step's account was made with.
	Account *AccountOptions `json:"account,omitempty"`
	// WhatIf estimates the headline phase's step under assumptions
	// (collectives at the link's peak, no rank waiting, the host never
	// late), from the step-time account; estimates, not measurements.
	WhatIf   []WhatIf `json:"what_if,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Checks are the checks of the data itself: impossible timing, kernels
	// the rules miss, lost or cut-off events, clocks across ranks.
	Checks *Checks `json:"checks,omitempty"`
}

// Rank is the analysis of one rank's trace.
type Rank struct {
	Rank      int    `json:"rank"` // -1 when unknown
	File      string `json:"file"` // the trace file
	WorldSize int    `json:"world_size"`
	Device    string `json:"device,omitempty"` // GPU name
	// Versions holds the trace's software versions: its top-level
	// *_version keys (torch_version, cuda_runtime_version, ...), "nccl"
	// (distributedInfo.nccl_version) and "backend" (distributedInfo.backend).
	Versions map[string]string `json:"versions,omitempty"`
	// StepSource is how steps were found: "vllm", "profiler_step",
	// "sglang", "regex" or "inferred"; StepEvidence says what was used.
	StepSource   string `json:"step_source"`
	StepEvidence string `json:"step_evidence,omitempty"`
	Steps        []Step `json:"steps"` // in time order
	// Decode aggregates the decode steps (zero Steps when there are none);
	// Prefill the prefill steps.
	Decode  PhaseSummary  `json:"decode"`
	Prefill *PhaseSummary `json:"prefill,omitempty"`
	// Mixed aggregates the steps that ran prefill and decode requests
	// together; nil when there are none.
	Mixed *PhaseSummary `json:"mixed,omitempty"`
	// Layers folds each phase's steps into the model's layers (decode,
	// prefill, mixed, those that fold): per layer and per position in the
	// layer.
	Layers []LayerFold `json:"layers,omitempty"`
	// CostModel fits each phase's per-step times (span and buckets)
	// against the steps' tokens (or requests) and context (decode,
	// prefill, mixed: those with steps, each phase on its own).
	CostModel []CostModel `json:"cost_model,omitempty"`
	// TopKernels lists per bucket the kernels with the most time (decode
	// steps when there are any, else all steps).
	TopKernels map[BucketID][]KernelStat `json:"top_kernels"`
	// Unclassified lists the kernels no rule matched (bucket other).
	Unclassified []KernelStat `json:"unclassified"`
	// LaunchDelay is over eager launches (one kernel, memcpy or memset
	// each); GraphLaunchDelay over CUDA/HIP graph replays, from the
	// cudaGraphLaunch call to the replay's first kernel (its later kernels
	// wait on the graph, not on the CPU).
	LaunchDelay      LaunchDelay `json:"launch_delay"`
	GraphLaunchDelay LaunchDelay `json:"graph_launch_delay"`
	// Outside counts GPU events that fell in no step.
	Outside BucketStat `json:"outside_steps"`
	// TraceKernelUS is the kernel time of the whole trace, steps and
	// outside; TraceCommKernels its communication kernels.
	TraceKernelUS    float64  `json:"trace_kernel_us"`
	TraceCommKernels int      `json:"trace_comm_kernels"`
	Warnings         []string `json:"warnings,omitempty"`
}

// Step is one engine iteration on one rank.
type Step struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`         // the annotation's name
	Phase       string `json:"phase"`        // prefill, decode, mixed, empty (no GPU work) or unknown
	PhaseSource string `json:"phase_source"` // "annotation" or "inferred: ..."
	// Tokens and Batch come from the annotation when it says so (0 if not).
	Tokens int `json:"tokens,omitempty"`
	Batch  int `json:"batch,omitempty"`
	// Context is the KV length summed over the step's requests (each
	// request's computed plus scheduled tokens), from the annotation's
	// fields where it has them (vLLM's detailed_trace_annotation sk, SGLang's
	// c_sk/g_sk), else from the step's first attention op with shapes
	// (record_shapes: batch times key length); 0 when the trace does not
	// say. Context / Batch is the mean. ContextSource says where it came
	// from: ContextAnnotation or ContextRecordShapes.
	Context       int     `json:"context,omitempty"`
	ContextSource string  `json:"context_source,omitempty"`
	StartUS       float64 `json:"start_us"`  // CPU start of the step, trace time base
	KernelUS      float64 `json:"kernel_us"` // sum of kernel durations
	BusyUS        float64 `json:"busy_us"`   // union of kernel intervals
	SpanUS        float64 `json:"span_us"`   // first kernel start to last kernel end
	IdleUS        float64 `json:"idle_us"`   // span minus busy
	Kernels       int     `json:"kernels"`   // GPU events in the step
	// GraphLaunches counts CUDA/HIP graph launches issued in the step.
	GraphLaunches int                     `json:"graph_launches"`
	Buckets       map[BucketID]BucketStat `json:"buckets"`
	// Comm is the step's transfer/wait split; nil unless collectives were
	// aligned across ranks.
	Comm *Comm `json:"comm,omitempty"`
	// Account splits the span into parts that add up to it; nil for a
	// step with no GPU work.
	Account *Account `json:"account,omitempty"`
	// OverlapUS is the kernel time counted twice because GPU events
	// overlap the previous event on their stream (TimingCheck): KernelUS
	// holds it, BusyUS does not.
	OverlapUS float64 `json:"overlap_us,omitempty"`
	// Truncated marks the last step when the end of the profile cut it off
	// (TruncationCheck.CutStep): it is left out of every phase's figures.
	Truncated bool `json:"truncated,omitempty"`
}

// BucketStat is the time and number of GPU events of one bucket.
type BucketStat struct {
	US    float64 `json:"us"`
	Count int     `json:"count"`
}

// PhaseSummary aggregates the steps of one phase (prefill, decode, mixed)
// on one rank. US fields are totals over the steps; the per-step figures
// are their means.
type PhaseSummary struct {
	Steps      int     `json:"steps"`
	KernelUS   float64 `json:"kernel_us"` // as Step's, summed over the steps
	BusyUS     float64 `json:"busy_us"`
	SpanUS     float64 `json:"span_us"`
	SpanMeanUS float64 `json:"span_mean_us"` // mean and quantiles of the step spans
	SpanP50US  float64 `json:"span_p50_us"`
	SpanP90US  float64 `json:"span_p90_us"`
	// KernelPerStepUS is KernelUS / Steps.
	KernelPerStepUS float64                  `json:"kernel_per_step_us"`
	Buckets         map[BucketID]BucketShare `json:"buckets"`
	Comm            *Comm                    `json:"comm,omitempty"`
	// Account is the mean account of the phase's steps.
	Account *Account `json:"account,omitempty"`
}

// BucketShare is one bucket over the steps of a phase.
type BucketShare struct {
	US            float64 `json:"us"`
	Count         int     `json:"count"`
	USPerStep     float64 `json:"us_per_step"`
	CallsPerStep  float64 `json:"calls_per_step"`
	ShareOfKernel float64 `json:"share_of_kernel"` // percent of kernel time
	ShareOfSpan   float64 `json:"share_of_span"`   // percent of step span
}

// Comm splits communication kernel time into transfer and wait, from
// collectives aligned across ranks.
type Comm struct {
	KernelUS   float64 `json:"kernel_us"` // communication kernel time
	TransferUS float64 `json:"transfer_us"`
	WaitUS     float64 `json:"wait_us"`
	// TransferShareNetOfWait is TransferUS / (phase kernel_us - WaitUS) in
	// percent: the figure comparable across ranks.
	TransferShareNetOfWait float64 `json:"transfer_share_net_of_wait"`
	// WaitShare is WaitUS / phase kernel_us in percent.
	WaitShare float64 `json:"wait_share"`
}

// KernelStat summarises one kernel name.
type KernelStat struct {
	Name   string   `json:"name"`
	Bucket BucketID `json:"bucket"`
	Count  int      `json:"count"`
	US     float64  `json:"us"`
	MeanUS float64  `json:"mean_us"`
	P50US  float64  `json:"p50_us"`
	P99US  float64  `json:"p99_us"`
}

// LaunchDelay is the time from a CPU launch to its kernel's start.
type LaunchDelay struct {
	Count int     `json:"count"`
	P50US float64 `json:"p50_us"`
	P99US float64 `json:"p99_us"`
}

// Headline is the first finding, from the decode steps (else the prefill,
// else the mixed steps, else every step): how long a step takes and how
// busy the GPU is in it, the bucket that leads its kernel time (or
// communication when it dominates), and communication as transfer vs wait.
// When the step split looks wrong, Problem says why and Fix names the flag
// that fixes it, and no figure of it is to be read as a finding.
type Headline struct {
	Bucket        BucketID `json:"bucket"`
	Label         string   `json:"label"`
	ShareOfKernel float64  `json:"share_of_kernel"`
	USPerStep     float64  `json:"us_per_step"`
	CallsPerStep  float64  `json:"calls_per_step"`
	Steps         int      `json:"steps"`
	Ranks         int      `json:"ranks"`
	Phase         string   `json:"phase"` // the phase it describes: decode, prefill, mixed, or all
	// SpanMeanUS and SpanP50US are the step span's mean and median over the
	// phase's steps of every rank; BusyShare is busy time as a percent of
	// span over the same steps.
	SpanMeanUS float64 `json:"span_mean_us"`
	SpanP50US  float64 `json:"span_p50_us"`
	BusyShare  float64 `json:"busy_share"`
	// PerRank is set when the ranks diverge (GPU busy or wait shares far
	// apart), so that no mean that no rank has is read as a finding.
	PerRank []HeadlineRank `json:"per_rank,omitempty"`
	// Outlier is the phase's step whose span is most inflated, when one is
	// (far above the median span, or mostly idle).
	Outlier *StepOutlier `json:"outlier,omitempty"`
	// Comm is set when collectives were aligned across ranks: it splits the
	// communication of the same steps into transfer and wait, as means over
	// the ranks, so that a raw share inflated by waiting is not read as
	// transfer.
	Comm *HeadlineComm `json:"comm,omitempty"`
	// Account is the step-time account behind the headline: the largest
	// part of the slowest rank's step, per rank where ranks diverge, and
	// whom each waiting rank waits for; nil when no step has an account.
	Account *HeadlineAccount `json:"account,omitempty"`
	// Problem says why the step split looks wrong; Fix what to do.
	Problem string `json:"problem,omitempty"`
	Fix     string `json:"fix,omitempty"`
	// Caveats says, one sentence each, what in the data makes the figures
	// doubtful (see Report.Checks); empty when nothing does.
	Caveats []string `json:"caveats,omitempty"`
}

// HeadlineRank is one rank's figures behind a headline.
type HeadlineRank struct {
	Rank       int     `json:"rank"`
	SpanMeanUS float64 `json:"span_mean_us"`
	BusyShare  float64 `json:"busy_share"` // busy, percent of span
	// WaitShare is the wait in collectives as a percent of kernel time;
	// 0 without a cross-rank split.
	WaitShare float64 `json:"wait_share"`
}

// StepOutlier is a step whose span does not describe its phase.
type StepOutlier struct {
	Rank         int     `json:"rank"`
	Step         int     `json:"step"` // Step.Index
	SpanUS       float64 `json:"span_us"`
	BusyShare    float64 `json:"busy_share"` // busy, percent of the step's span
	MedianSpanUS float64 `json:"median_span_us"`
}

// HeadlineComm is the cross-rank split behind a headline, as means over the
// ranks of the per-rank figures of Comm.
type HeadlineComm struct {
	TransferUSPerStep      float64 `json:"transfer_us_per_step"`
	WaitUSPerStep          float64 `json:"wait_us_per_step"`
	TransferShareNetOfWait float64 `json:"transfer_share_net_of_wait"`
	WaitShare              float64 `json:"wait_share"`
	// Straggler is the rank that arrives last most often, -1 if none.
	Straggler int `json:"straggler"`
}

// Collectives summarises matching collectives across ranks.
type Collectives struct {
	Matched   int `json:"matched"`
	Unmatched int `json:"unmatched"`
	// Clock is "shared", "estimated", "unknown" (ranks could not be put on
	// one clock, nothing paired) or "single" (one trace).
	Clock string `json:"clock"`
	// ClockOffsetsUS holds, per rank, the estimated offset added to that
	// rank's times (zero with a shared clock).
	ClockOffsetsUS map[int]float64 `json:"clock_offsets_us,omitempty"`
	// Straggler lists the ranks that arrived last, most often first.
	Straggler []Straggler `json:"straggler"`
	// Mismatches describes collectives that could not be paired.
	Mismatches []string `json:"mismatches,omitempty"`
}

// Straggler is a rank that arrives last at collectives.
type Straggler struct {
	Rank      int     `json:"rank"`
	LateCount int     `json:"late_count"` // collectives it arrived at last
	LateUS    float64 `json:"late_us"`    // how much later than the second-latest rank, summed
}
