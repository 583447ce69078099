package render

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"kinetoscope/analyze"
)

// Roofline draws the roofline: achieved TFLOP/s against arithmetic
// intensity (FLOPs per byte), both axes logarithmic, one point per kernel
// class and phase with shapes (colour: the class's bucket colour; shape:
// the phase), labelled with its rate and share of the roof that bounds it,
// under the GPU's roofs: memory bandwidth times intensity up to each
// dtype's tensor peak. Classes without a figure are listed under it.
func Roofline(r *analyze.Report, f Format) ([]byte, error) {
	if r == nil || r.Roofline == nil || len(r.Roofline.Rows) == 0 {
		return nil, noData("roofline chart: no GEMM or attention kernels in any step")
	}
	rf := r.Roofline
	var pts []bwPoint
	for _, row := range rf.Rows {
		if row.ShapedUS > 0 && row.Intensity > 0 && row.TFLOPS > 0 {
			pts = append(pts, bwPoint{X: row.Intensity, Y: row.TFLOPS, Row: analyze.BandwidthRow{Phase: row.Phase, Bucket: row.Bucket, Label: row.Label}})
		}
	}
	p := newPlot(rooflineTitle(r), "FLOPs per byte", "")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	xlo, xhi, ylo, yhi := rooflineRanges(pts, rf.Peak)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo, xhi, ylo, yhi
	p.X.Tick.Marker, p.Y.Tick.Marker = decadeTicks{}, decadeTicks{}
	p.Add(plotter.NewGrid())
	if rf.Peak != nil {
		addRoofs(p, rf.Peak, rooflineDtypes(rf), xlo, xhi)
	}
	series := bwSeries(pts)
	for _, s := range series {
		p.Add(s.scatter())
	}
	p.Add(rooflineLabels(rf, pts), newBWLegend(series, nil))
	notes := rooflineNotes(rf, len(pts))
	if r.Synthetic {
		notes = append([]string{"Synthetic trace (it says it was generated), not measured."}, notes...)
	}
	fg := &figure{plot: p, w: chartWidth, h: bwChartHeight, notes: notes}
	return fg.encode(f)
}

// rooflineTitle names the chart and the run.
func rooflineTitle(r *analyze.Report) string {
	gpu := "no GPU peak known"
	if p := r.Roofline.Peak; p != nil {
		gpu = p.Name
	}
	return fmt.Sprintf("Roofline: achieved TFLOP/s by FLOPs per byte, log scales\n%s, %s", plural(len(r.Ranks), "rank file"), gpu)
}

// rooflineDtypes are the dtypes of the rows' work, in row order.
func rooflineDtypes(rf *analyze.Roofline) []string {
	var out []string
	for _, row := range rf.Rows {
		for _, w := range row.Work {
			if w.Dtype != "" && !slices.Contains(out, w.Dtype) {
				out = append(out, w.Dtype)
			}
		}
	}
	return out
}

// rooflineRanges returns axis ranges in whole powers of ten that hold the
// points and the roofs' ridge points, with room for the labels.
func rooflineRanges(pts []bwPoint, peak *analyze.GPUPeak) (xlo, xhi, ylo, yhi float64) {
	xlo, xhi, ylo, yhi = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pt := range pts {
		xlo, xhi, ylo, yhi = min(xlo, pt.X), max(xhi, 100*pt.X), min(ylo, pt.Y), max(yhi, pt.Y) // labels right of the points
	}
	if peak != nil {
		for _, v := range peak.TFLOPS {
			if peak.HBMTBPerS > 0 {
				xhi = max(xhi, 3*v/peak.HBMTBPerS)
			}
			yhi = max(yhi, v)
		}
	}
	if math.IsInf(xlo, 1) {
		xlo, xhi, ylo, yhi = 1, 1000, 1, 1000
	}
	xlo = math.Pow(10, math.Floor(math.Log10(xlo))-0.3)
	xhi = math.Pow(10, math.Ceil(math.Log10(xhi)))
	ylo = math.Pow(10, math.Floor(math.Log10(ylo)-0.05))
	yhi = math.Pow(10, math.Ceil(math.Log10(yhi)+0.3)) // room for the legend
	return xlo, xhi, ylo, yhi
}

// addRoofs draws the memory roof (bandwidth times intensity) and each
// dtype's tensor roof from its ridge point on, dashed, labelled at the
// right.
func addRoofs(p *plot.Plot, peak *analyze.GPUPeak, dtypes []string, xlo, xhi float64) {
	hbm := peak.HBMTBPerS
	sty := textStyle(noteSize, rgb(hexText), draw.XRight, draw.YBottom)
	var ls labels
	for _, d := range dtypes {
		top := peak.Rate(d)
		if top <= 0 || hbm <= 0 {
			continue
		}
		ridge := top / hbm
		xys := plotter.XYs{{X: xlo, Y: hbm * xlo}, {X: ridge, Y: top}, {X: xhi, Y: top}}
		if hbm*xlo < p.Y.Min {
			xys[0] = plotter.XY{X: p.Y.Min / hbm, Y: p.Y.Min}
		}
		if l, err := plotter.NewLine(xys); err == nil {
			l.Color, l.Width, l.Dashes = rgb(hexText), 1.2, []vg.Length{6, 3}
			p.Add(l)
		}
		ls = append(ls, label{X: xhi, Y: top, DX: -6, DY: 3, Style: sty,
			Text: fmt.Sprintf("%s tensor peak %g TFLOP/s (ridge %.0f FLOP/B)", d, top, ridge)})
	}
	if top := rooflineTop(peak, dtypes); hbm > 0 && top > 0 {
		x := top / hbm / 4 // along the slope, left of the lowest ridge
		ls = append(ls, label{X: x, Y: hbm * x, DX: -4, DY: 4, Text: fmt.Sprintf("memory %g TB/s", hbm),
			Style: textStyle(noteSize, rgb(hexText), draw.XRight, draw.YBottom)})
	}
	p.Add(ls)
}

// rooflineTop returns the lowest tensor peak of the dtypes, 0 for none.
func rooflineTop(peak *analyze.GPUPeak, dtypes []string) float64 {
	top := 0.0
	for _, d := range dtypes {
		if v := peak.Rate(d); v > 0 && (top == 0 || v < top) {
			top = v
		}
	}
	return top
}

// rooflineLabels label each point with its rate and share of its roof.
func rooflineLabels(rf *analyze.Roofline, pts []bwPoint) pointLabels {
	ls := make(pointLabels, 0, len(pts))
	for _, pt := range pts {
		i := slices.IndexFunc(rf.Rows, func(r analyze.RooflineRow) bool {
			return r.Phase == pt.Row.Phase && r.Bucket == pt.Row.Bucket
		})
		row := rf.Rows[i]
		text := fmt.Sprintf("%s %s: %s TFLOP/s, %s TB/s", row.Label, row.Phase, sig3(row.TFLOPS, 2), sig3(row.TBPerS, 3))
		if row.Bound != "" {
			text += fmt.Sprintf(", %s of %s peak", pct(row.PeakShare), row.Bound)
		}
		ls = append(ls, label{X: pt.X, Y: pt.Y, DX: 8, Text: text,
			Style: textStyle(noteSize, rgb(hexText), draw.XLeft, draw.YCenter)})
	}
	return ls
}

// rooflineNotes explain the chart under it: how the figures are made, the
// peak's source, and the kernels without a figure.
func rooflineNotes(rf *analyze.Roofline, points int) []string {
	notes := []string{"FLOPs and bytes from each op's recorded input shapes (GEMM 2·M·N·K and A + B + C; attention 2·B·H·Sq·Sk·(D + Dv) and Q + K + V + O), " +
		"over the kernels with shapes; a point under the sloped roof is memory-bound, under a flat one compute-bound.", gpuPeakText(rf)}
	if points == 0 {
		notes = append(notes, "No point to draw: no kernel's work is known from shapes.")
	}
	return append(notes, unshapedLines(rf)...)
}
