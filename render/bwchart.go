package render

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"kinetoscope/analyze"
)

// bwChartHeight is the height of the bandwidth chart, in points.
const bwChartHeight = vg.Length(460)

// Bandwidth draws the collectives' bus bandwidth against message size,
// both axes logarithmic: one point per phase, kind and size (colour: the
// kind's bucket colour; shape: the phase; hollow when the time is kernel
// time, which includes waiting), labelled with its bus bandwidth and calls
// per step, and the link's peak as a dashed line when one is known.
// Collectives without recorded sizes are listed under the chart.
func Bandwidth(r *analyze.Report, f Format) ([]byte, error) {
	if r == nil || r.Bandwidth == nil || len(r.Bandwidth.Rows) == 0 {
		return nil, noData("bandwidth chart: no collective kernels in any step")
	}
	b := r.Bandwidth
	var pts []bwPoint
	for _, row := range b.Rows {
		if row.BusBW > 0 {
			pts = append(pts, bwPoint{X: float64(row.Bytes), Y: row.BusBW, Row: row})
		}
	}
	// Short axis labels only: gonum centres an axis label's box at the
	// linear midpoint of the range when it pads the plot, which on a log
	// axis sits near the far end, so a long label shrinks the plot.
	p := newPlot(bwTitle(r), "message size", "")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	xlo, xhi, ylo, yhi := bwRanges(pts, b.Peak)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo, xhi, ylo, yhi
	p.X.Tick.Marker, p.Y.Tick.Marker = bytesTicks{}, decadeTicks{}
	p.Add(plotter.NewGrid())
	if b.Peak != nil {
		addPeakLine(p, b.Peak, xlo, xhi)
	}
	series := bwSeries(pts)
	for _, s := range series {
		p.Add(s.scatter())
	}
	p.Add(bwLabels(pts), newBWLegend(series, b.Peak))
	notes := bwNotes(b, len(pts))
	if r.Synthetic {
		notes = append([]string{"Synthetic trace (it says it was generated), not measured."}, notes...)
	}
	fg := &figure{plot: p, w: chartWidth, h: bwChartHeight, notes: notes}
	return fg.encode(f)
}

// bwPoint is one row of the chart.
type bwPoint struct {
	X, Y float64
	Row  analyze.BandwidthRow
}

// bwTitle names the chart and the run.
func bwTitle(r *analyze.Report) string {
	var sizes []string
	for _, row := range r.Bandwidth.Rows {
		if g := groupText(row.GroupSize); !slices.Contains(sizes, g) {
			sizes = append(sizes, g)
		}
	}
	return fmt.Sprintf("Collective bus bandwidth (GB/s) by message size, log scales\n%s, process groups of %v ranks",
		plural(len(r.Ranks), "rank file"), strings.Join(sizes, ", "))
}

// bwRanges returns axis ranges that hold every point and the peak, in
// whole powers of two (x) and ten (y), with room for the labels.
func bwRanges(pts []bwPoint, peak *analyze.LinkPeak) (xlo, xhi, ylo, yhi float64) {
	xlo, xhi, ylo, yhi = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pt := range pts {
		xlo, xhi, ylo, yhi = min(xlo, pt.X), max(xhi, pt.X), min(ylo, pt.Y), max(yhi, pt.Y)
	}
	if peak != nil {
		ylo, yhi = min(ylo, peak.GBPerS), max(yhi, peak.GBPerS)
	}
	if math.IsInf(xlo, 1) {
		xlo, xhi = 1<<10, 1<<30
	}
	if math.IsInf(ylo, 1) {
		ylo, yhi = 1, 1000
	}
	xlo = math.Pow(2, math.Floor(math.Log2(xlo))-2)
	xhi = math.Pow(2, math.Ceil(math.Log2(xhi))+3) // labels right of the points
	ylo = math.Pow(10, math.Floor(math.Log10(ylo)-0.05))
	yhi = math.Pow(10, math.Ceil(math.Log10(yhi)+0.3)) // room for the legend
	return xlo, xhi, ylo, yhi
}

// addPeakLine draws the link peak as a dashed horizontal line, labelled at
// its right end (the legend takes the top left).
func addPeakLine(p *plot.Plot, peak *analyze.LinkPeak, xlo, xhi float64) {
	l, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: peak.GBPerS}, {X: xhi, Y: peak.GBPerS}})
	if err != nil {
		return
	}
	l.Color, l.Width, l.Dashes = rgb(hexText), 1.2, []vg.Length{6, 3}
	p.Add(l, labels{{X: xhi, Y: peak.GBPerS, DX: -6, DY: 3,
		Text:  fmt.Sprintf("%s peak, %g GB/s per GPU and direction", peak.Name, peak.GBPerS),
		Style: textStyle(noteSize, rgb(hexText), draw.XRight, draw.YBottom)}})
}

// bwSerie is the points of one kind, phase and time basis.
type bwSerie struct {
	bucket analyze.BucketID
	phase  string
	label  string
	kernel bool // time basis: kernel time
	xys    plotter.XYs
}

// glyph is the serie's marker.
func (s *bwSerie) glyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: BucketColor(s.bucket), Radius: 4.5, Shape: phaseGlyph(s.phase, s.kernel)}
}

// scatter is the serie as a plotter.
func (s *bwSerie) scatter() *plotter.Scatter {
	sc, _ := plotter.NewScatter(s.xys) // xys are finite by construction
	sc.GlyphStyle = s.glyph()
	return sc
}

// bwSeries groups the points by kind, phase and time basis, in row order.
func bwSeries(pts []bwPoint) []*bwSerie {
	var out []*bwSerie
	for _, pt := range pts {
		r := pt.Row
		kernel := r.Basis == analyze.BasisKernel
		i := slices.IndexFunc(out, func(s *bwSerie) bool { return s.bucket == r.Bucket && s.phase == r.Phase && s.kernel == kernel })
		if i < 0 {
			label := r.Label + ", " + r.Phase
			if kernel {
				label += " (kernel time)"
			}
			out = append(out, &bwSerie{bucket: r.Bucket, phase: r.Phase, label: label, kernel: kernel})
			i = len(out) - 1
		}
		out[i].xys = append(out[i].xys, plotter.XY{X: pt.X, Y: pt.Y})
	}
	return out
}

// phaseGlyph is the marker of a phase: decode a circle, prefill a
// triangle, mixed a square, others a cross; hollow for kernel time.
func phaseGlyph(phase string, hollow bool) draw.GlyphDrawer {
	switch {
	case phase == analyze.PhaseDecode && hollow:
		return draw.RingGlyph{}
	case phase == analyze.PhaseDecode:
		return draw.CircleGlyph{}
	case phase == analyze.PhasePrefill && hollow:
		return draw.TriangleGlyph{}
	case phase == analyze.PhasePrefill:
		return draw.PyramidGlyph{}
	case phase == analyze.PhaseMixed && hollow:
		return draw.SquareGlyph{}
	case phase == analyze.PhaseMixed:
		return draw.BoxGlyph{}
	}
	return draw.CrossGlyph{}
}

// bwLabels labels each point with its bus bandwidth and calls per step,
// and with its phase where another point has the same size.
func bwLabels(pts []bwPoint) pointLabels {
	ls := make(pointLabels, 0, len(pts))
	for i, pt := range pts {
		calls := count(pt.Row.CallsPerStep) + " calls/step"
		if calls == "1 calls/step" {
			calls = "1 call/step"
		}
		text := fmt.Sprintf("%s GB/s, %s", gbps(pt.Y), calls)
		if sharesSize(pts, i) {
			text = pt.Row.Phase + ": " + text
		}
		if pt.Row.Grouped {
			text += " (" + sizeText(pt.Row) + ")"
		}
		ls = append(ls, label{X: pt.X, Y: pt.Y, DX: 8, Text: text,
			Style: textStyle(noteSize, rgb(hexText), draw.XLeft, draw.YCenter)})
	}
	return ls
}

// sharesSize says whether another point has point i's size, within 5%.
func sharesSize(pts []bwPoint, i int) bool {
	for j, q := range pts {
		if j != i && math.Abs(q.X/pts[i].X-1) < 0.05 {
			return true
		}
	}
	return false
}

// pointLabels are labels right of their points, moved down from one
// another and from the points where they would overlap them.
type pointLabels []label

// Plot implements plot.Plotter.
func (ls pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	order := make([]int, len(ls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpDesc(ls[a].Y, ls[b].Y) })
	placed := make([]vg.Rectangle, 0, 2*len(ls))
	for _, l := range ls {
		at := vg.Point{X: trX(l.X), Y: trY(l.Y)}
		placed = append(placed, vg.Rectangle{Min: at.Sub(vg.Point{X: 6, Y: 6}), Max: at.Add(vg.Point{X: 6, Y: 6})})
	}
	for _, i := range order {
		l := ls[i]
		at := vg.Point{X: trX(l.X) + l.DX, Y: trY(l.Y) + l.DY}
		h := l.Style.Height(l.Text) + 1
		r := freeSpot(placed, at, l.Style.Width(l.Text), h)
		placed = append(placed, r)
		c.FillText(l.Style, vg.Point{X: r.Min.X, Y: r.Min.Y + h/2}, l.Text)
	}
}

// freeSpot returns the box of a text of width w and height h left-aligned
// at at (vertically centred), moved down a line at a time until it
// overlaps none of placed (at most eight lines).
func freeSpot(placed []vg.Rectangle, at vg.Point, w, h vg.Length) vg.Rectangle {
	r := vg.Rectangle{Min: vg.Point{X: at.X, Y: at.Y - h/2}, Max: vg.Point{X: at.X + w, Y: at.Y + h/2}}
	for k := 0; k < 8 && slices.ContainsFunc(placed, func(q vg.Rectangle) bool { return overlaps(q, r) }); k++ {
		r.Min.Y, r.Max.Y = r.Min.Y-h, r.Max.Y-h
	}
	return r
}

// overlaps says whether two boxes share area.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

// cmpDesc orders floats from largest to smallest.
func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// bwLegend is the chart's key, drawn on a white box in the top left of
// the data area: one marker per serie and the peak line.
type bwLegend struct {
	series []*bwSerie
	peak   *analyze.LinkPeak
}

func newBWLegend(series []*bwSerie, peak *analyze.LinkPeak) bwLegend {
	return bwLegend{series: series, peak: peak}
}

// Plot implements plot.Plotter.
func (lg bwLegend) Plot(c draw.Canvas, _ *plot.Plot) {
	sty := textStyle(tickSize, rgb(hexText), draw.XLeft, draw.YCenter)
	const line, pad = vg.Length(15), vg.Length(6)
	n := len(lg.series)
	if lg.peak != nil {
		n++
	}
	if n == 0 {
		return
	}
	w := vg.Length(0)
	for _, s := range lg.series {
		w = max(w, sty.Width(s.label))
	}
	box := vg.Rectangle{Min: vg.Point{X: c.Min.X + 8, Y: c.Max.Y - 8 - vg.Length(n)*line - pad},
		Max: vg.Point{X: c.Min.X + 8 + w + 30 + 2*pad, Y: c.Max.Y - 8}}
	c.FillPolygon(color.White, rectPath(box)[:4])
	c.StrokeLines(draw.LineStyle{Color: rgb(hexMuted), Width: 0.5}, rectPath(box))
	y := box.Max.Y - pad - line/2
	for _, s := range lg.series {
		c.DrawGlyph(s.glyph(), vg.Point{X: box.Min.X + pad + 8, Y: y})
		c.FillText(sty, vg.Point{X: box.Min.X + pad + 24, Y: y}, s.label)
		y -= line
	}
	if lg.peak != nil {
		c.StrokeLine2(draw.LineStyle{Color: rgb(hexText), Width: 1.2, Dashes: []vg.Length{6, 3}}, box.Min.X+pad, y, box.Min.X+pad+16, y)
		c.FillText(sty, vg.Point{X: box.Min.X + pad + 24, Y: y}, "link peak")
	}
}

// bwNotes explains the chart under it: how the figures are made, the
// peak's source or why none is drawn, and the collectives without sizes.
func bwNotes(b *analyze.Bandwidth, points int) []string {
	notes := []string{"Size: the whole buffer as nccl-tests counts it (AllGather: the gathered output). Bus bandwidth = bytes / time x nccl-tests' factor (AllReduce 2(n-1)/n, AllGather (n-1)/n, ...). " +
		"Filled: time from the last rank's arrival to the first end (transfer). Hollow: kernel time, which includes waiting for late ranks."}
	notes = append(notes, peakText(b))
	if points == 0 {
		notes = append(notes, "No point to draw: no collective has a recorded message size.")
	}
	for _, r := range b.Rows {
		if r.BusBW == 0 {
			notes = append(notes, fmt.Sprintf("%s %s: %s (%s calls/step, %s µs per call)", r.Phase, r.Label, r.Note, count(r.CallsPerStep), usStr(perCall(r))))
		}
	}
	return append(notes, b.Notes...)
}

// perCall is a row's time per call: transfer when aligned, else kernel.
func perCall(r analyze.BandwidthRow) float64 {
	if r.Instances > 0 {
		return r.TransferUSPerCall
	}
	return r.KernelUSPerCall
}

// bytesTicks labels a log axis of bytes at powers of two, every second or
// fourth one when the range is wide.
type bytesTicks struct{}

// Ticks implements plot.Ticker.
func (bytesTicks) Ticks(lo, hi float64) []plot.Tick {
	a, z := int(math.Ceil(math.Log2(lo))), int(math.Floor(math.Log2(hi)))
	step := 1
	for (z-a)/step > 9 {
		step *= 2
	}
	var out []plot.Tick
	for e := a; e <= z; e++ {
		t := plot.Tick{Value: math.Pow(2, float64(e))}
		if e%step == 0 {
			t.Label = analyze.FormatBytes(int64(t.Value))
		}
		out = append(out, t)
	}
	return out
}

// decadeTicks labels a log axis at 1, 2 and 5 times powers of ten (1 and
// 10 only when the range spans more than three decades).
type decadeTicks struct{}

// Ticks implements plot.Ticker.
func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	a, z := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	wide := z-a > 3
	var out []plot.Tick
	for e := a; e <= z; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, float64(e))
			if v < lo*0.999 || v > hi*1.001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || !wide {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}
