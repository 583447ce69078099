package analyze

import "fmt"

// SpeedOfLight estimates a phase's step with every kernel at its roof: an
// estimate under an assumption, set beside the measured step.
type SpeedOfLight struct {
	Phase     string `json:"phase"`
	RankSteps int    `json:"rank_steps"`
	// MeasuredSpanUS, MeasuredBusyUS and MeasuredKernelUS are the measured
	// mean step span, GPU busy time and kernel time per step over the
	// ranks' steps (the span less busy is the GPU idle the step-time
	// account splits by cause).
	MeasuredSpanUS   float64 `json:"measured_span_us"`
	MeasuredBusyUS   float64 `json:"measured_busy_us"`
	MeasuredKernelUS float64 `json:"measured_kernel_us"`
	// EstimateUS is the sum of the parts' estimates: the kernels one after
	// another, no idle time, no overlap.
	EstimateUS float64   `json:"estimate_us"`
	Parts      []SOLPart `json:"parts"`
	Assumption string    `json:"assumption"`
}

// SOLPart is one part of the estimate: its measured time per step and its
// time at its roof, and how that was had.
type SOLPart struct {
	Name       string  `json:"name"`
	MeasuredUS float64 `json:"measured_us"`
	EstimateUS float64 `json:"estimate_us"`
	Basis      string  `json:"basis"`
}

// The parts of the speed of light.
const (
	SOLShaped   = "kernels with shapes"
	SOLUnshaped = "kernels without a roofline figure"
	SOLComm     = "collectives"
)

// solAssumption is what the speed of light assumes.
const solAssumption = "every kernel whose work the shapes give at its roof " +
	"(bytes at the GPU's memory bandwidth or FLOPs at its tensor peak for the dtype, whichever is longer), " +
	"every collective's transfer at the link's peak bus bandwidth with no rank waiting, every other kernel as measured; " +
	"kernels back to back on one stream, no idle time and no overlap"

// speedOfLight estimates the decode step (nil without decode rows or a
// GPU peak).
func speedOfLight(r *Report, rf *Roofline) *SpeedOfLight {
	if rf.Peak == nil {
		return nil
	}
	const phase = PhaseDecode
	sol := &SpeedOfLight{Phase: phase, Assumption: solAssumption}
	var span, busy, kernel, comm float64
	for i := range r.Ranks {
		d := &r.Ranks[i].Decode
		sol.RankSteps += d.Steps
		span += d.SpanUS
		busy += d.BusyUS
		kernel += d.KernelUS
		for _, bk := range r.Buckets { // in display order: a sum in map order would vary in its last digits
			if bk.Group == GroupCommunication {
				comm += d.Buckets[bk.ID].US
			}
		}
	}
	if sol.RankSteps == 0 {
		return nil
	}
	n := float64(sol.RankSteps)
	sol.MeasuredSpanUS, sol.MeasuredBusyUS, sol.MeasuredKernelUS = span/n, busy/n, kernel/n
	shaped, roof := 0.0, 0.0
	for _, row := range rf.Rows {
		if row.Phase == phase {
			shaped += row.ShapedUS
			roof += row.RoofUS
		}
	}
	if shaped == 0 {
		return nil
	}
	sol.Parts = append(sol.Parts,
		SOLPart{Name: SOLShaped, MeasuredUS: shaped / n, EstimateUS: roof / n,
			Basis: fmt.Sprintf("at %s's roofs", rf.Peak.Name)},
		SOLPart{Name: SOLUnshaped, MeasuredUS: max(0, kernel-comm-shaped) / n, EstimateUS: max(0, kernel-comm-shaped) / n,
			Basis: "as measured"})
	if comm > 0 {
		est, basis := commAtPeak(r.Bandwidth, phase, comm/n)
		sol.Parts = append(sol.Parts, SOLPart{Name: SOLComm, MeasuredUS: comm / n, EstimateUS: est, Basis: basis})
	}
	for _, p := range sol.Parts {
		sol.EstimateUS += p.EstimateUS
	}
	return sol
}

// commAtPeak returns the collectives' time per step at the link's peak
// (each bandwidth row's transfer, or kernel, time per step times its share
// of peak; rows without a share as measured) and how it was had; without
// a link peak, measuredUS as measured.
func commAtPeak(b *Bandwidth, phase string, measuredUS float64) (float64, string) {
	if b == nil || b.Peak == nil {
		return measuredUS, "as measured: no link peak known"
	}
	est, unsized := 0.0, false
	for _, row := range b.Rows {
		if row.Phase != phase {
			continue
		}
		t := row.TransferUSPerStep
		if row.Basis == BasisKernel {
			t = row.KernelUSPerStep
		}
		if row.ShareOfPeak > 0 {
			est += t * min(1, row.ShareOfPeak/100)
		} else {
			est += t
			unsized = true
		}
	}
	basis := fmt.Sprintf("at %s's peak bus bandwidth", b.Peak.Name)
	if unsized {
		basis += "; collectives without message sizes as measured"
	}
	return min(est, measuredUS), basis
}
