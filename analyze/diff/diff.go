// Package diff compares two analysed profiling runs (base and head): step
// span, per-bucket time and calls per step, kernels matched by name,
// communication transfer vs wait, launch delay and metadata, each change in
// step time and bucket time tested against run-to-run noise.
//
// The JSON form of Diff is a contract: fields may be added, never renamed.
// Times are microseconds (float), shares and deltas in percent.
package diff

import "kinetoscope/analyze"

// Options selects what Compare compares.
type Options struct {
	// Rank selects one rank on both sides; nil pools all ranks: the k-th
	// step of the phase on every rank is averaged into one sample, so the
	// noise test counts steps, not rank-steps.
	Rank *int
	// Phase is the step phase compared: "decode" (the default when empty),
	// "prefill", "mixed", "unknown", or "all". When either side has no step of the phase, all
	// steps are compared on both sides and Diff.Phase says "all".
	Phase string
	// Resamples is the number of bootstrap resamples (default 2000).
	Resamples int
	// Seed seeds the bootstrap; the same seed gives the same intervals.
	Seed uint64
}

// Diff is the comparison of two runs.
type Diff struct {
	// HeadlineText is the first line a user reads, as render.DiffHeadlineText
	// words it from the fields below; set by the driver (Compare leaves it
	// empty), kept in the JSON for its readers.
	HeadlineText string `json:"headline"`
	Phase        string `json:"phase"` // the phase compared: decode, prefill or all
	RankSel      string `json:"rank"`  // "all" (pooled) or the rank number
	Noise        Method `json:"noise"` // how changes were tested against noise
	Base         Side   `json:"base"`
	Head         Side   `json:"head"`
	Step         Step   `json:"step"` // the step span, with its noise test
	// Buckets holds every bucket present on either side.
	Buckets map[analyze.BucketID]BucketDiff `json:"buckets"`
	// BucketOrder lists the bucket ids of Buckets, largest |delta_us| first.
	BucketOrder []analyze.BucketID `json:"bucket_order"`
	Kernels     Kernels            `json:"kernels"`
	// Account compares the step-time account part by part; nil unless
	// every step compared on both sides has one.
	Account *AccountDiff `json:"account,omitempty"`
	// Comm compares transfer and wait; nil unless both sides have them
	// (collectives aligned across ranks).
	Comm *CommDiff `json:"comm,omitempty"`
	// Bandwidth compares collective bandwidth per phase, kind and message
	// size; empty when neither run has any.
	Bandwidth []BandwidthDiff `json:"bandwidth,omitempty"`
	// Layers compares the steps folded into layers; nil when neither run's
	// steps fold.
	Layers *LayersDiff `json:"layers,omitempty"`
	// CostModel compares the two runs' cost models of the phase, slope by
	// slope; nil when neither run's steps were fitted.
	CostModel   *CostModelDiff  `json:"cost_model,omitempty"`
	LaunchDelay LaunchDelayDiff `json:"launch_delay"`
	// Metadata lists every compared key; Differs marks the differences.
	Metadata []MetaDiff `json:"metadata"`
	Warnings []string   `json:"warnings,omitempty"`
}

// Method names the noise test and its parameters.
type Method struct {
	Name       string  `json:"name"` // "bootstrap CI of the difference of means"
	Resamples  int     `json:"resamples"`
	Confidence float64 `json:"confidence"` // percent, e.g. 95
	Seed       uint64  `json:"seed"`
	// FloorUS and FloorPct: a change is significant only when its interval
	// excludes zero and |delta| exceeds both floors.
	FloorUS  float64 `json:"floor_us"`
	FloorPct float64 `json:"floor_pct"`
	MinSteps int     `json:"min_steps"` // fewer steps a side: "not enough steps"
}

// Side describes one run.
type Side struct {
	Path        string   `json:"path"`         // the run's Report.Source
	Ranks       int      `json:"ranks"`        // ranks compared (1 with Options.Rank)
	DecodeSteps int      `json:"decode_steps"` // decode steps, summed over the ranks compared
	Steps       int      `json:"steps"`        // samples compared (steps of Diff.Phase)
	Phases      []string `json:"phases"`       // phases present
	Devices     []string `json:"devices,omitempty"`
	WorldSize   int      `json:"world_size"`
	// Accounts holds each compared rank's mean step-time account over the
	// steps of Diff.Phase.
	Accounts []RankAccount `json:"accounts,omitempty"`
}

// RankAccount is one rank's mean step-time account.
type RankAccount struct {
	Rank    int              `json:"rank"`
	Account *analyze.Account `json:"account"`
}

// AccountDiff compares the step-time account (analyze.Account) part by
// part, as means per step (pooled ranks: the mean over the ranks), each
// change with the noise test of the buckets.
type AccountDiff struct {
	// Parts holds every part, in analyze.Account.Parts order.
	Parts []PartDiff `json:"parts"`
	// Order lists the names of Parts, largest |delta_us| first.
	Order []string `json:"order"`
	// BaseBoundaryUS and HeadBoundaryUS are the step boundary (outside
	// the span) per step.
	BaseBoundaryUS float64 `json:"base_boundary_us"`
	HeadBoundaryUS float64 `json:"head_boundary_us"`
}

// PartDiff compares one part of the account.
type PartDiff struct {
	Name     string  `json:"name"`
	BaseUS   float64 `json:"base_us"`
	HeadUS   float64 `json:"head_us"`
	DeltaUS  float64 `json:"delta_us"`
	DeltaPct float64 `json:"delta_pct"`
	Test
}

// Test is the noise test of one change.
type Test struct {
	Significant bool `json:"significant"` // the verdict is "significant"
	// Verdict is "significant", "within noise", "below floor" or "not
	// enough steps".
	Verdict string `json:"verdict"`
	// CILowUS and CIHighUS bound head mean minus base mean (zero when not
	// tested).
	CILowUS  float64 `json:"ci_low_us"`
	CIHighUS float64 `json:"ci_high_us"`
}

// Step compares the step span (first kernel start to last kernel end).
type Step struct {
	BaseUS   float64 `json:"base_us"` // mean span
	HeadUS   float64 `json:"head_us"`
	DeltaUS  float64 `json:"delta_us"`
	DeltaPct float64 `json:"delta_pct"`
	Test
	BaseP50US float64 `json:"base_p50_us"`
	HeadP50US float64 `json:"head_p50_us"`
	BaseP90US float64 `json:"base_p90_us"`
	HeadP90US float64 `json:"head_p90_us"`
	// Busy is the union of kernel time, Idle the span minus busy, per step.
	BaseBusyUS float64 `json:"base_busy_us"`
	HeadBusyUS float64 `json:"head_busy_us"`
	BaseIdleUS float64 `json:"base_idle_us"`
	HeadIdleUS float64 `json:"head_idle_us"`
	// Kernel time (sum of durations) per step.
	BaseKernelUS float64 `json:"base_kernel_us"`
	HeadKernelUS float64 `json:"head_kernel_us"`
	// GPU events and graph launches per step.
	BaseKernels       float64 `json:"base_kernels"`
	HeadKernels       float64 `json:"head_kernels"`
	BaseGraphLaunches float64 `json:"base_graph_launches"`
	HeadGraphLaunches float64 `json:"head_graph_launches"`
}

// BucketDiff compares one bucket. Shares are percent of kernel time.
type BucketDiff struct {
	Label         string  `json:"label"`
	BaseUSPerStep float64 `json:"base_us_per_step"`
	HeadUSPerStep float64 `json:"head_us_per_step"`
	DeltaUS       float64 `json:"delta_us"`
	DeltaPct      float64 `json:"delta_pct"` // 0 when base is 0
	Test
	BaseCallsPerStep  float64 `json:"base_calls_per_step"`
	HeadCallsPerStep  float64 `json:"head_calls_per_step"`
	DeltaCallsPerStep float64 `json:"delta_calls_per_step"`
	BaseShare         float64 `json:"base_share"`
	HeadShare         float64 `json:"head_share"`
	DeltaSharePts     float64 `json:"delta_share_pts"` // percentage points
}

// Kernels lists kernels present in one run only and kernels matched.
type Kernels struct {
	Added   []KernelUse    `json:"added"`   // in head only
	Removed []KernelUse    `json:"removed"` // in base only
	Changed []KernelChange `json:"changed"` // matched, largest |delta| first
	// Complete is false when the reports list only the top kernels of each
	// bucket, so a kernel missing from a list may still have run.
	Complete bool `json:"complete"`
}

// KernelUse is one kernel in one run.
type KernelUse struct {
	Name         string           `json:"name"`
	Bucket       analyze.BucketID `json:"bucket"`
	USPerStep    float64          `json:"us_per_step"`
	CallsPerStep float64          `json:"calls_per_step"`
}

// KernelChange is a kernel matched in both runs.
type KernelChange struct {
	Name string `json:"name"` // the base name, or the normalised name
	// Match is "exact" or "normalized" (names differing only in template
	// arguments, tile shapes and numbers).
	Match            string           `json:"match"`
	BaseNames        []string         `json:"base_names,omitempty"` // normalized matches only
	HeadNames        []string         `json:"head_names,omitempty"`
	Bucket           analyze.BucketID `json:"bucket"`
	BaseUSPerStep    float64          `json:"base_us_per_step"`
	HeadUSPerStep    float64          `json:"head_us_per_step"`
	DeltaUS          float64          `json:"delta_us"`
	DeltaPct         float64          `json:"delta_pct"`
	BaseCallsPerStep float64          `json:"base_calls_per_step"`
	HeadCallsPerStep float64          `json:"head_calls_per_step"`
}

// CommDiff compares communication transfer and wait per step.
type CommDiff struct {
	BaseKernelUS   float64 `json:"base_kernel_us"`
	HeadKernelUS   float64 `json:"head_kernel_us"`
	BaseTransferUS float64 `json:"base_transfer_us"`
	HeadTransferUS float64 `json:"head_transfer_us"`
	DeltaTransfer  float64 `json:"delta_transfer_us"`
	BaseWaitUS     float64 `json:"base_wait_us"`
	HeadWaitUS     float64 `json:"head_wait_us"`
	DeltaWait      float64 `json:"delta_wait_us"`
}

// LaunchDelayDiff compares CPU launch to kernel start delay (pooled over
// ranks by launch count).
type LaunchDelayDiff struct {
	BaseCount  int     `json:"base_count"`
	HeadCount  int     `json:"head_count"`
	BaseP50US  float64 `json:"base_p50_us"`
	HeadP50US  float64 `json:"head_p50_us"`
	DeltaP50US float64 `json:"delta_p50_us"`
	BaseP99US  float64 `json:"base_p99_us"`
	HeadP99US  float64 `json:"head_p99_us"`
	DeltaP99US float64 `json:"delta_p99_us"`
}

// MetaDiff is one metadata key on both sides.
type MetaDiff struct {
	Key     string `json:"key"`
	Base    string `json:"base"`
	Head    string `json:"head"`
	Differs bool   `json:"differs"`
}

// Compare diffs two analysed runs.
func Compare(base, head *analyze.Report, opt Options) (*Diff, error) {
	return compare(base, head, opt)
}
