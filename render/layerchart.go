package render

import (
	"fmt"
	"strings"

	"kinetoscope/analyze"
)

// Layers draws one rank's layers (the fold of its shown phase, decode when
// it has one) as stacked bars of kernel time per layer by bucket (x =
// layer index), each layer's time (its span, idle included) as a black
// tick, irregular layers on a shaded band, and the outlier layers named
// under the plot. rank is a rank number, or FirstRank.
func Layers(r *analyze.Report, rank int, f Format) ([]byte, error) {
	rk, err := findRank(r, rank)
	if err != nil {
		return nil, fmt.Errorf("layers chart: %w", err)
	}
	pv := rankPhase(rk)
	lf := ShownLayers(rk)
	if lf == nil {
		return nil, noData(fmt.Sprintf("layers chart: rank %s's %s steps did not fold into layers", rankID(rk.Rank), pv.Name))
	}
	order := stackOrder(r)
	var bars, bands boxes
	var spans spanTicks
	present := map[analyze.BucketID]bool{}
	for _, l := range lf.PerLayer {
		x := float64(l.Index)
		if l.Irregular {
			bands = append(bands, box{X0: x - 0.5, X1: x + 0.5, Color: rgb(hexBand)})
		}
		y := 0.0
		for _, id := range order {
			us := l.Buckets[id]
			if us <= 0 {
				continue
			}
			present[id] = true
			bars = append(bars, box{X0: x - 0.4, X1: x + 0.4, Y0: y, Y1: y + us/1000, Color: BucketColor(id)})
			y += us / 1000
		}
		spans = append(spans, spanTick{x, l.MeanUS / 1000})
	}
	ymax := max(maxOf(spans), 1e-3)
	for _, b := range bars {
		ymax = max(ymax, b.Y1)
	}
	for i := range bands {
		bands[i].Y1 = ymax * 1.04
	}
	title := fmt.Sprintf("Time per layer by bucket, rank %s, %s steps\n%s", rankID(rk.Rank), pv.Name, layerSummaryShort(lf))
	p := newPlot(title, "layer", "ms per step (kernel time stacked; tick: layer time)")
	p.Add(bands, bars, spans)
	p.X.Min, p.X.Max = -0.6, float64(len(lf.PerLayer))-0.4
	p.Y.Min, p.Y.Max = 0, ymax*1.05
	p.X.Tick.Marker = niceTicks{Want: 12, Integer: true}
	p.Y.Tick.Marker = niceTicks{}
	legend := bucketLegend(r, order, present)
	legend = append(legend, legendEntry{Label: "layer time", Color: rgb(0x000000), Line: true})
	if lf.Irregular > 0 {
		legend = append(legend, legendEntry{Label: "irregular (shaded)", Color: rgb(hexBand), Band: true})
	}
	fg := &figure{plot: p, legend: legend, w: chartWidth, h: 360, notes: []string{layerOutlierNote(lf)}}
	fg.h = max(fg.h, legendHeight(len(legend)))
	return fg.encode(f)
}

// layerSummaryShort is the chart's second title line: "4 layers of 21
// kernels, 32 steps".
func layerSummaryShort(lf *analyze.LayerFold) string {
	s := fmt.Sprintf("%s of %d kernels", plural(lf.Layers, "layer"), lf.KernelsPerLayer)
	if lf.LayersPerRepeat > 1 {
		s = fmt.Sprintf("%s, %d kinds alternating (%d kernels a repeat)", plural(lf.Layers, "layer"), lf.LayersPerRepeat, lf.KernelsPerLayer)
	}
	return s + ", " + plural(lf.Steps, "step")
}

// layerOutlierNote names the slower layers, or says there are none.
func layerOutlierNote(lf *analyze.LayerFold) string {
	if len(lf.Outliers) == 0 {
		return fmt.Sprintf("No layer is %.1fx the median layer's time or more.", analyze.LayerOutlierRatio)
	}
	med := lf.MedianLayerUS
	var parts []string
	for _, l := range lf.Outliers {
		parts = append(parts, fmt.Sprintf("layer %d %s ms (%.2fx)", l, ms(lf.PerLayer[l].MeanUS), lf.PerLayer[l].MeanUS/med))
	}
	return "Slower than the median layer: " + strings.Join(parts, ", ") + "."
}
