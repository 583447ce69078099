package render

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// hbars collects a horizontal bar chart of ms per step (breakdown, ranks,
// diff): bars drawn in order, a label at the end of each row, one tick per
// row.
type hbars struct {
	bars     boxes
	texts    labels
	ys       []float64
	names    []string
	maxUS    float64   // the longest row, us
	maxLabel vg.Length // the widest end label
}

// row adds the tick of row y.
func (h *hbars) row(y float64, name string) {
	h.ys, h.names = append(h.ys, y), append(h.names, name)
}

// endLabel writes t in col after the row y bar that ends at endUS.
func (h *hbars) endLabel(y, endUS float64, t string, col color.Color) {
	h.texts = append(h.texts, label{X: endUS / 1000, Y: y, DX: 4, Text: t, Style: textStyle(tickSize, col, draw.XLeft, draw.YCenter)})
	h.maxUS, h.maxLabel = max(h.maxUS, endUS), max(h.maxLabel, textWidth(t, tickSize))
}

// plot draws the bars and labels on an axis of ms per step of phase from 0,
// leaving pad points past the widest label, in a plot area of width points
// less the row names.
func (h *hbars) plot(title, phase string, pad, width vg.Length) *plot.Plot {
	p := newPlot(title, fmt.Sprintf("ms per %s (kernel time)", stepName(phase)), "")
	p.Add(h.bars, h.texts)
	p.Y.Tick.Marker = ticks(h.ys, h.names)
	p.X.Tick.Marker = niceTicks{}
	p.X.Min = 0
	p.X.Max = roomFor(h.maxUS/1000, h.maxLabel+pad, width-maxNameWidth(h.names))
	return p
}
