package render

import (
	"errors"
	"fmt"
	"sort"

	"gonum.org/v1/plot/vg"

	"kinetoscope/analyze"
)

// TimelineInput is what the step timeline draws: the GPU events of one step
// on one rank. analyze produces it from the ingested trace (the Report keeps
// no per-kernel data).
type TimelineInput struct {
	Rank  int    // rank number, -1 when unknown
	Step  int    // step index
	Phase string // the step's phase
	// StartUS is the time the axis starts from (the step's first kernel),
	// in the trace's time base; kernel times are absolute in the same base.
	StartUS float64
	Kernels []TimelineKernel
	// Buckets describes the bucket ids used (Report.Buckets); empty means
	// analyze.Buckets().
	Buckets []analyze.Bucket
	// Notes are printed under the chart (caveats of how it was built).
	Notes []string
}

// TimelineKernel is one GPU event of the step.
type TimelineKernel struct {
	Stream  int
	StartUS float64
	DurUS   float64
	Bucket  analyze.BucketID
	Name    string
}

// minKernelWidth is the narrowest a kernel is drawn, in points.
const minKernelWidth = vg.Length(0.6)

// Timeline draws one step's kernels as bars on a time axis, one row per
// stream, coloured by bucket.
func Timeline(in *TimelineInput, f Format) ([]byte, error) {
	if in == nil || len(in.Kernels) == 0 {
		return nil, errors.New("timeline chart: the step has no kernels")
	}
	streams := streamRows(in.Kernels)
	present := map[analyze.BucketID]bool{}
	var bars boxes
	end := 0.0
	for _, k := range in.Kernels {
		y := streams[k.Stream]
		x0 := (k.StartUS - in.StartUS) / 1000
		x1 := x0 + k.DurUS/1000
		bars = append(bars, box{X0: x0, X1: x1, Y0: y - 0.38, Y1: y + 0.38, Color: BucketColor(k.Bucket), MinWidth: minKernelWidth})
		present[k.Bucket] = true
		end = max(end, x1)
	}
	ys, names := streamTicks(streams)
	phase := ""
	if in.Phase != "" {
		phase = " (" + in.Phase + ")"
	}
	rank := "rank ?"
	if in.Rank >= 0 {
		rank = fmt.Sprintf("rank %d", in.Rank)
	}
	title := fmt.Sprintf("Step %d%s on %s: kernels per stream, coloured by bucket\n%s, %s ms from first kernel start to last kernel end",
		in.Step, phase, rank, plural(len(in.Kernels), "GPU event"), ms(end*1000))
	p := newPlot(title, "ms from the step's first kernel", "")
	p.Add(bars)
	p.Y.Tick.Marker = ticks(ys, names)
	p.X.Min, p.X.Max = 0, max(end, 1e-3)*1.01
	p.Y.Min, p.Y.Max = -0.6, float64(len(streams))-0.4
	r := &analyze.Report{Buckets: in.Buckets}
	if len(r.Buckets) == 0 {
		r.Buckets = analyze.Buckets()
	}
	legend := bucketLegend(r, bucketOrder(r.Buckets, present), present)
	h := max(clampHeight(rowHeight*1.3*vg.Length(len(streams))+marginTop+marginBot+20), legendHeight(len(legend)))
	fg := &figure{plot: p, legend: legend, w: chartWidth, h: h,
		notes: append([]string{fmt.Sprintf("Kernels shorter than %.1f pt are drawn %.1f pt wide so that they stay visible.", float64(minKernelWidth), float64(minKernelWidth))}, in.Notes...)}
	return fg.encode(f)
}

// streamRows maps each stream to its row, lowest stream at the top.
func streamRows(ks []TimelineKernel) map[int]float64 {
	seen := map[int]bool{}
	var ids []int
	for _, k := range ks {
		if !seen[k.Stream] {
			seen[k.Stream] = true
			ids = append(ids, k.Stream)
		}
	}
	sort.Ints(ids)
	rows := make(map[int]float64, len(ids))
	for i, id := range ids {
		rows[id] = float64(len(ids) - 1 - i)
	}
	return rows
}

// streamTicks labels the stream rows.
func streamTicks(rows map[int]float64) ([]float64, []string) {
	var ys []float64
	var names []string
	for id, y := range rows {
		ys = append(ys, y)
		names = append(names, fmt.Sprintf("stream %d", id))
	}
	return ys, names
}
