package render

import (
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendEntry is one coloured swatch and its label.
type legendEntry struct {
	Label string
	Color color.NRGBA
	Hatch bool // drawn hatched, as communication wait
	Band  bool // drawn as a background band (a pale box with a border)
	Line  bool // drawn as a short line (a marker, not an area)
}

// maxLegendLabel is the longest legend label, in runes.
const maxLegendLabel = 20

// drawLegend draws entries top-down from the top-left of c.
func drawLegend(c draw.Canvas, entries []legendEntry) {
	sty := textStyle(tickSize, rgb(hexText), draw.XLeft, draw.YCenter)
	const sw, gap = vg.Length(11), vg.Length(17)
	y := c.Max.Y - sw
	for _, e := range entries {
		r := vg.Rectangle{Min: vg.Point{X: c.Min.X, Y: y - sw/2}, Max: vg.Point{X: c.Min.X + sw, Y: y + sw/2}}
		if e.Line {
			c.StrokeLine2(draw.LineStyle{Color: e.Color, Width: 1.5}, r.Min.X, y, r.Max.X, y)
		} else {
			fillRect(c, r, e.Color, e.Hatch)
		}
		if e.Band {
			c.StrokeLines(draw.LineStyle{Color: rgb(hexMuted), Width: 0.5}, rectPath(r))
		}
		c.FillText(sty, vg.Point{X: c.Min.X + sw + 5, Y: y}, shorten(e.Label, maxLegendLabel))
		y -= gap
	}
}

// rectPath is the closed outline of r.
func rectPath(r vg.Rectangle) []vg.Point {
	return []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min}
}

// fillRect fills r with col, and with vertical hatch lines when hatch.
func fillRect(c draw.Canvas, r vg.Rectangle, col color.NRGBA, hatch bool) {
	c.FillPolygon(col, rectPath(r)[:4])
	if !hatch {
		return
	}
	ls := draw.LineStyle{Color: tint(rgb(hexTransfer), 0.25), Width: 0.6}
	for x := r.Min.X + 2; x < r.Max.X-0.5; x += 3.5 {
		c.StrokeLine2(ls, x, r.Min.Y, x, r.Max.Y)
	}
}
