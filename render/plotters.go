package render

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// box is a filled rectangle in data coordinates.
type box struct {
	X0, X1, Y0, Y1 float64
	Color          color.NRGBA
	Hatch          bool
	// MinWidth widens a box narrower than this many points, so that short
	// kernels stay visible.
	MinWidth vg.Length
}

// boxes is a plotter of boxes, drawn in order.
type boxes []box

// Plot implements plot.Plotter.
func (bs boxes) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, b := range bs {
		x0, x1 := trX(b.X0), trX(b.X1)
		if x1-x0 < b.MinWidth {
			x1 = x0 + b.MinWidth
		}
		y0, y1 := trY(b.Y0), trY(b.Y1)
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: y0}, Max: vg.Point{X: x1, Y: y1}}
		if r.Max.X <= c.Min.X || r.Min.X >= c.Max.X {
			continue
		}
		r.Min.X, r.Max.X = max(r.Min.X, c.Min.X), min(r.Max.X, c.Max.X)
		fillRect(c, r, b.Color, b.Hatch)
	}
}

// DataRange implements plot.DataRanger.
func (bs boxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, b := range bs {
		xmin, xmax = min(xmin, b.X0, b.X1), max(xmax, b.X0, b.X1)
		ymin, ymax = min(ymin, b.Y0, b.Y1), max(ymax, b.Y0, b.Y1)
	}
	return xmin, xmax, ymin, ymax
}

// label is a text at a data point, offset by DX, DY points.
type label struct {
	X, Y   float64
	DX, DY vg.Length
	Text   string
	Style  text.Style
}

// labels is a plotter of texts; it claims no data range.
type labels []label

// Plot implements plot.Plotter.
func (ls labels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, l := range ls {
		c.FillText(l.Style, vg.Point{X: trX(l.X) + l.DX, Y: trY(l.Y) + l.DY}, l.Text)
	}
}

// ticks returns fixed axis ticks at the given values with the given labels.
func ticks(vals []float64, names []string) plot.ConstantTicks {
	ts := make(plot.ConstantTicks, len(vals))
	for i := range vals {
		ts[i] = plot.Tick{Value: vals[i], Label: names[i]}
	}
	return ts
}
