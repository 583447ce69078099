package render

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"kinetoscope/analyze"
)

// TimelineInput is what the step timeline draws: the GPU events of one step
// on one rank. The Report keeps no per-kernel data; the driver builds
// this from the ingested traces.
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
	Stream  int     // the row it is drawn on
	StartUS float64 // absolute, in the trace's time base (see StartUS)
	DurUS   float64
	Bucket  analyze.BucketID
	Name    string
}

// minKernelWidth is the narrowest a kernel is drawn, in points.
const minKernelWidth = vg.Length(0.6)

// zoomKernels is how many kernels the zoomed view shows; a step with more
// than zoomAfter kernels gets one.
const (
	zoomKernels = 40
	zoomAfter   = 150
)

// Timeline draws one step's kernels as bars on a time axis, one row per
// stream, coloured by bucket. A step with many kernels gets a second,
// zoomed view of its first kernels under the whole step, whose range is
// shaded in the upper view.
func Timeline(in *TimelineInput, f Format) ([]byte, error) {
	if in == nil || len(in.Kernels) == 0 {
		return nil, noData("timeline chart: the step has no kernels")
	}
	streams := streamRows(in.Kernels)
	bars, present, end := kernelBoxes(in, streams)
	title := fmt.Sprintf("Step %d%s on %s: kernels per stream, coloured by bucket\n%s, %s ms from first kernel start to last kernel end",
		in.Step, phaseSuffix(in.Phase), "rank "+rankID(in.Rank), plural(len(in.Kernels), "GPU event"), ms(end*1000))
	p := streamPlot(title, bars, streams, 0, max(end, 1e-3)*1.01)
	fg := &figure{plot: p, w: chartWidth, h: clampHeight(rowHeight*1.3*vg.Length(len(streams)) + marginTop + marginBot + 20),
		notes: append([]string{fmt.Sprintf("Kernels shorter than %.1f pt are drawn %.1f pt wide so that they stay visible.", float64(minKernelWidth), float64(minKernelWidth))}, in.Notes...)}
	if len(in.Kernels) > zoomAfter {
		zEnd := zoomEnd(in)
		p.Add(boxes{{X0: 0, X1: zEnd, Y0: -0.5, Y1: float64(len(streams)) - 0.5, Color: rgb(hexBand)}})
		p.Add(bars) // again, over the band
		fg.below = streamPlot(fmt.Sprintf("Zoom: the first %d kernels (shaded above), %s ms", zoomKernels, ms(zEnd*1000)), bars, streams, 0, zEnd)
		fg.below.Title.TextStyle.Font = sans(labelSize)
		fg.belowFrac = 0.5
		fg.h = clampHeight(2*rowHeight*1.3*vg.Length(len(streams)) + marginTop + 2*marginBot + 60)
	}
	r := &analyze.Report{Buckets: in.Buckets}
	if len(r.Buckets) == 0 {
		r.Buckets = analyze.Buckets()
	}
	fg.legend = bucketLegend(r, bucketOrder(r.Buckets, present), present)
	fg.h = max(fg.h, legendHeight(len(fg.legend)))
	return fg.encode(f)
}

// kernelBoxes turns kernels into boxes, in ms from the step start, and
// returns the buckets present and the last end.
func kernelBoxes(in *TimelineInput, streams map[int]float64) (boxes, map[analyze.BucketID]bool, float64) {
	present := map[analyze.BucketID]bool{}
	bars := make(boxes, 0, len(in.Kernels))
	end := 0.0
	for _, k := range in.Kernels {
		y := streams[k.Stream]
		x0 := (k.StartUS - in.StartUS) / 1000
		x1 := x0 + k.DurUS/1000
		bars = append(bars, box{X0: x0, X1: x1, Y0: y - 0.38, Y1: y + 0.38, Color: BucketColor(k.Bucket), MinWidth: minKernelWidth})
		present[k.Bucket] = true
		end = max(end, x1)
	}
	return bars, present, end
}

// streamPlot is a time axis from x0 to x1 ms with one row per stream.
func streamPlot(title string, bars boxes, streams map[int]float64, x0, x1 float64) *plot.Plot {
	p := newPlot(title, "ms from the step's first kernel", "")
	p.Add(bars)
	ys, names := streamTicks(streams)
	p.Y.Tick.Marker = ticks(ys, names)
	p.X.Tick.Marker = niceTicks{}
	p.X.Min, p.X.Max = x0, x1
	p.Y.Min, p.Y.Max = -0.6, float64(len(streams))-0.4
	return p
}

// zoomEnd is the end, in ms from the step start, of the first zoomKernels
// kernels by start time.
func zoomEnd(in *TimelineInput) float64 {
	starts := make([]float64, len(in.Kernels))
	for i, k := range in.Kernels {
		starts[i] = k.StartUS
	}
	sort.Float64s(starts)
	cut := starts[min(zoomKernels, len(starts)-1)]
	end := 0.0
	for _, k := range in.Kernels {
		if k.StartUS < cut {
			end = max(end, k.StartUS+k.DurUS)
		}
	}
	return max((end-in.StartUS)/1000, 1e-3)
}

// phaseSuffix is " (decode)" or "".
func phaseSuffix(phase string) string {
	if phase == "" {
		return ""
	}
	return " (" + phase + ")"
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

// streamTicks labels the stream rows, top row first.
func streamTicks(rows map[int]float64) ([]float64, []string) {
	ids := slices.Sorted(maps.Keys(rows))
	ys := make([]float64, len(ids))
	names := make([]string, len(ids))
	for i, id := range ids {
		ys[i], names[i] = rows[id], fmt.Sprintf("stream %d", id)
	}
	return ys, names
}
