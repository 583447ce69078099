package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"kinetoscope/analyze"
)

// layerBlocks lays out the fold of the rank's shown phase into layers: a
// line on the fold, a table per layer and a table per position in the
// layer; nothing when the phase's steps did not fold.
func layerBlocks(buckets []analyze.Bucket, rk *analyze.Rank, pv phaseView) []block {
	lf := ShownLayers(rk)
	if lf == nil {
		return nil
	}
	return []block{
		{Heading: fmt.Sprintf("Layers (%s steps, from the repeated kernel sequence)", pv.Name), Level: 3},
		{Lines: []string{LayerSummary(lf)}},
		{Table: layerTable(buckets, lf)},
		{Lines: []string{fmt.Sprintf("Per position in the repeated sequence (%s, %d kernels each; over every repeat and step):", plural((lf.Layers-lf.Irregular)/max(1, lf.LayersPerRepeat), "repeat"), lf.KernelsPerLayer)}},
		{Table: slotTable(lf)},
	}
}

// ShownLayers returns the fold into layers of the rank's shown phase (the
// one its tables show: ShownPhase), nil when those steps did not fold.
func ShownLayers(rk *analyze.Rank) *analyze.LayerFold {
	name, _ := ShownPhase(rk)
	for i := range rk.Layers {
		if rk.Layers[i].Phase == name {
			return &rk.Layers[i]
		}
	}
	return nil
}

// LayerSummary says how a phase's steps folded into layers, and names the
// outlier layers.
func LayerSummary(lf *analyze.LayerFold) string {
	phase := lf.Phase
	s := fmt.Sprintf("%s of %d kernels", plural(lf.Layers, "layer"), lf.KernelsPerLayer)
	if lf.LayersPerRepeat > 1 {
		s = fmt.Sprintf("%s, %d kinds alternating: the repeated sequence of %d kernels holds %d layers",
			plural(lf.Layers, "layer"), lf.LayersPerRepeat, lf.KernelsPerLayer, lf.LayersPerRepeat)
	}
	if lf.Irregular > 0 {
		s = fmt.Sprintf("%s; %s of other kernels, marked * (found by %s, which runs once a layer)",
			s, plural(lf.Irregular, "layer"), shorten(lf.Anchor, 60))
	}
	s += fmt.Sprintf("; before the first layer %s (%s ms), after the last %s (%s ms); %s folded",
		plural(lf.HeadKernels, "kernel"), ms(lf.HeadUS), plural(lf.TailKernels, "kernel"), ms(lf.TailUS),
		plural(lf.Steps, phase+" step"))
	if lf.Unfolded > 0 {
		s += fmt.Sprintf(", %d did not fold the same way", lf.Unfolded)
	}
	s += "."
	if len(lf.Outliers) > 0 {
		var names []string
		med := lf.MedianLayerUS
		for _, l := range lf.Outliers {
			names = append(names, fmt.Sprintf("layer %d (%s ms, %.2fx the median layer)", l, ms(lf.PerLayer[l].MeanUS), lf.PerLayer[l].MeanUS/med))
		}
		s += " Slower than the rest: " + strings.Join(names, ", ") + "."
	}
	return s
}

// layerTable lists each layer: its time (mean, p50, p90 over the steps),
// kernel time and the buckets that take most of it.
func layerTable(buckets []analyze.Bucket, lf *analyze.LayerFold) *table {
	t := &table{
		Header: []string{"layer", "ms", "p50 ms", "p90 ms", "kernel ms", "kernels", "largest buckets (ms)"},
		Right:  []bool{true, true, true, true, true, true, false},
	}
	for _, l := range lf.PerLayer {
		idx := fmt.Sprint(l.Index)
		if l.Irregular {
			idx += "*"
		}
		t.Rows = append(t.Rows, []string{idx, msFine(l.MeanUS), msFine(l.P50US), msFine(l.P90US), msFine(l.KernelUS),
			fmt.Sprint(l.Kernels), topLayerBuckets(buckets, l.Buckets, 3)})
	}
	return t
}

// topLayerBuckets names the n buckets with the most time: "GEMM 0.071,
// AllReduce 0.032".
func topLayerBuckets(buckets []analyze.Bucket, us map[analyze.BucketID]float64, n int) string {
	ids := make([]analyze.BucketID, 0, len(us))
	for id := range us {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if us[ids[i]] != us[ids[j]] {
			return us[ids[i]] > us[ids[j]]
		}
		return ids[i] < ids[j]
	})
	var parts []string
	for _, id := range ids[:min(n, len(ids))] {
		parts = append(parts, bucketInfo(buckets, id).Label+" "+msFine(us[id]))
	}
	return strings.Join(parts, ", ")
}

// slotTable lists each position of the layer with its kernel, launch
// shape, GEMM dims (when the trace recorded shapes) and duration.
func slotTable(lf *analyze.LayerFold) *table {
	t := &table{
		Header: []string{"#", "slot", "kernel", "grid", "block", "mean us", "p50 us", "p90 us"},
		Right:  []bool{true, false, false, false, false, true, true, true},
	}
	modules := slices.ContainsFunc(lf.Slots, func(s analyze.LayerSlot) bool { return s.Module != "" })
	shapes := slices.ContainsFunc(lf.Slots, func(s analyze.LayerSlot) bool { return s.Shape != "" })
	if shapes {
		t.Header = slices.Insert(t.Header, 5, "M×N×K")
		t.Right = slices.Insert(t.Right, 5, false)
	}
	if modules {
		t.Header = slices.Insert(t.Header, 2, "module")
		t.Right = slices.Insert(t.Right, 2, false)
	}
	for _, s := range lf.Slots {
		row := []string{fmt.Sprint(s.Index), s.Label, shorten(s.Name, 60), dims(s.Grid), dims(s.Block),
			usStr(s.MeanUS), usStr(s.P50US), usStr(s.P90US)}
		if shapes {
			row = slices.Insert(row, 5, orDash(s.Shape))
		}
		if modules {
			row = slices.Insert(row, 2, s.Module)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// dims writes launch dimensions as "132x1x1"; "-" when absent.
func dims(d [3]int32) string {
	if d == [3]int32{} {
		return "-"
	}
	return fmt.Sprintf("%dx%dx%d", d[0], d[1], d[2])
}
