package render

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Format is an image format of the charts.
type Format string

// The chart formats.
const (
	SVG Format = "svg"
	PNG Format = "png"
)

// ParseFormat returns the format named by s ("svg" or "png", any case, a
// leading dot allowed so that a file extension works).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimPrefix(s, "."))); f {
	case SVG, PNG:
		return f, nil
	}
	return "", fmt.Errorf("unknown chart format %q (want svg or png)", s)
}

// pngDPI is the resolution of PNG charts: twice the 72 points per inch of
// the layout, sharp on high-density screens and in documents.
const pngDPI = 144

// Chart widths and sizes, in points.
const (
	chartWidth  = vg.Length(720)
	legendWidth = vg.Length(130)
	rowHeight   = vg.Length(22) // one bar of a horizontal bar chart
	minHeight   = vg.Length(260)
	maxHeight   = vg.Length(2400)
	marginTop   = vg.Length(70) // title lines and padding
	marginBot   = vg.Length(60) // x axis, tick labels and label
)

// Font sizes, in points.
const (
	titleSize = 13
	labelSize = 11
	tickSize  = 10
	noteSize  = 9
)

// sans returns the sans-serif chart font at size points.
func sans(size float64) font.Font {
	return font.From(font.Font{Typeface: "Liberation", Variant: "Sans"}, font.Length(size))
}

// textStyle is a text style of the chart font.
func textStyle(size float64, c color.Color, x text.XAlignment, y text.YAlignment) text.Style {
	return text.Style{Color: c, Font: sans(size), XAlign: x, YAlign: y, Handler: plot.DefaultTextHandler}
}

// textWidth is the width of s in the chart font at size points.
func textWidth(s string, size float64) vg.Length {
	return textStyle(size, color.Black, draw.XLeft, draw.YCenter).Width(s)
}

// newPlot returns a plot with the chart fonts, title, and axis labels.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle = textStyle(titleSize, rgb(hexText), draw.XCenter, draw.YTop)
	p.Title.Padding = 10
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font, a.Label.TextStyle.Color = sans(labelSize), rgb(hexText)
		a.Tick.Label.Font, a.Tick.Label.Color = sans(tickSize), rgb(hexText)
		a.Padding = 0
	}
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.BackgroundColor = nil // the figure fills the whole canvas once
	p.Legend.TextStyle = textStyle(labelSize, rgb(hexText), draw.XLeft, draw.YCenter)
	return p
}

// figure is a chart being laid out: a plot and, to its right, a legend.
type figure struct {
	plot *plot.Plot
	// below, when set, is drawn under plot and takes belowFrac of the
	// plots' height (the timeline's zoomed view).
	below     *plot.Plot
	belowFrac float64
	legend    []legendEntry
	notes     []string // lines of small text under the plot
	w, h      vg.Length
}

// encode draws the figure on a canvas of format f and returns its bytes.
func (fg *figure) encode(f Format) ([]byte, error) {
	var b bytes.Buffer
	switch f {
	case SVG:
		c := vgsvg.New(fg.w, fg.h)
		dc := draw.New(c)
		dc.FillPolygon(color.White, rectPath(dc.Rectangle)[:4])
		fg.draw(dc)
		if _, err := c.WriteTo(&b); err != nil {
			return nil, fmt.Errorf("encode svg chart: %w", err)
		}
		return svgFontFallback(b.Bytes()), nil
	case PNG:
		c := vgimg.NewWith(vgimg.UseWH(fg.w, fg.h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
		fg.draw(draw.New(c))
		// Fastest compression: charts are flat colours, so it costs
		// little size and saves most of the encoding time.
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&b, c.Image()); err != nil {
			return nil, fmt.Errorf("encode png chart: %w", err)
		}
		return b.Bytes(), nil
	}
	return nil, fmt.Errorf("unknown chart format %q (want svg or png)", f)
}

// draw lays out the plot, the legend column and the notes.
func (fg *figure) draw(dc draw.Canvas) {
	right := vg.Length(8)
	if len(fg.legend) > 0 {
		right = legendWidth
		lc := draw.Crop(dc, dc.Size().X-legendWidth+10, 0, 0, -fg.titleHeight())
		drawLegend(lc, fg.legend)
	}
	bottom := vg.Length(0)
	if notes := wrapLines(fg.notes, dc.Size().X-20, noteSize); len(notes) > 0 {
		bottom = vg.Length(len(notes))*(noteSize+4) + 8
		drawNotes(draw.Crop(dc, 10, 0, 0, -(dc.Size().Y-bottom)), notes)
	}
	area := draw.Crop(dc, 6, -right, bottom+4, -4)
	if fg.below == nil {
		fg.plot.Draw(area)
		return
	}
	split := area.Size().Y * vg.Length(fg.belowFrac)
	fg.below.Draw(draw.Crop(area, 0, 0, 0, -(area.Size().Y - split)))
	fg.plot.Draw(draw.Crop(area, 0, 0, split+6, 0))
}

// titleHeight is the height of the title block.
func (fg *figure) titleHeight() vg.Length {
	if fg.plot.Title.Text == "" {
		return 8
	}
	return fg.plot.Title.TextStyle.Height(fg.plot.Title.Text) + fg.plot.Title.Padding + 8
}

// drawNotes writes lines of small grey text from the top of c.
func drawNotes(c draw.Canvas, notes []string) {
	sty := textStyle(noteSize, rgb(hexMuted), draw.XLeft, draw.YTop)
	y := c.Max.Y
	for _, n := range notes {
		c.FillText(sty, vg.Point{X: c.Min.X, Y: y}, n)
		y -= noteSize + 4
	}
}

// wrapLines breaks lines at spaces so that none is wider than width in the
// chart font at size points.
func wrapLines(lines []string, width vg.Length, size float64) []string {
	var out []string
	for _, l := range lines {
		if l == "" {
			continue
		}
		cur := ""
		for _, w := range strings.Fields(l) {
			if cur != "" && textWidth(cur+" "+w, size) > width {
				out = append(out, cur)
				cur = w
				continue
			}
			cur = strings.TrimPrefix(cur+" "+w, " ")
		}
		out = append(out, cur)
	}
	return out
}

// svgFontFallback adds generic fallbacks to the SVG's font family, so that
// a viewer without Liberation Sans uses a similar sans-serif font.
func svgFontFallback(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Sans;"),
		[]byte("font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"))
}

// clampHeight keeps a chart height within the limits.
func clampHeight(h vg.Length) vg.Length {
	return min(max(h, minHeight), maxHeight)
}

// ErrNoData is what the error of a chart that has nothing to draw for the
// run matches (errors.Is): a bandwidth chart of a run without collectives,
// say. The service answers it as not found, not as its own failure.
var ErrNoData = errors.New("nothing to draw")

// noDataError is a chart's nothing-to-draw error: its message, matching
// ErrNoData.
type noDataError struct{ msg string }

func (e *noDataError) Error() string        { return e.msg }
func (e *noDataError) Is(target error) bool { return target == ErrNoData }

// noData returns a nothing-to-draw error with the message msg.
func noData(msg string) error { return &noDataError{msg} }
