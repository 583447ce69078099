package render

import (
	"fmt"

	"kinetoscope/analyze/diff"
)

// diffLayerBlocks lays out the comparison of the two runs' layers: a table
// per layer with the noise test, and one per position of the repeated
// layer; a line saying why when the folds differ; nothing when neither
// run's steps fold.
func diffLayerBlocks(d *diff.Diff) []block {
	ld := d.Layers
	if ld == nil {
		return nil
	}
	bs := []block{{Heading: fmt.Sprintf("Layers (%s steps): per layer, base vs head", ld.Phase), Level: 2}}
	if ld.Note != "" {
		return append(bs, block{Lines: []string{ld.Note + "."}})
	}
	t := &table{
		Header: []string{"layer", "base ms", "head ms", "delta ms", "delta %", "95% CI of delta (ms)", "verdict"},
		Right:  []bool{true, true, true, true, true, true, false},
	}
	significant := 0
	for _, l := range ld.PerLayer {
		idx := fmt.Sprint(l.Index)
		if l.Irregular {
			idx += "*"
		}
		if l.Test.Significant {
			significant++
		}
		t.Rows = append(t.Rows, []string{idx, msFine(l.BaseUS), msFine(l.HeadUS), diffSigned(diffMS, l.DeltaUS),
			diffPct(l.DeltaUS, l.BaseUS), diffCI(l.Test, ""), l.Test.Verdict})
	}
	bs = append(bs, block{Lines: []string{fmt.Sprintf("%s; %d of them changed beyond noise. A layer's time runs from its first kernel to the next layer's, idle included.",
		plural(ld.Layers, "layer"), significant)}}, block{Table: t})
	if len(ld.Slots) == 0 {
		return append(bs, block{Lines: []string{fmt.Sprintf("Positions not compared: %d kernels a repeat in base, %d in head.", ld.BaseKernelsPerLayer, ld.HeadKernelsPerLayer)}})
	}
	st := &table{
		Header: []string{"#", "slot", "kernel", "base us", "head us", "delta us", "delta %"},
		Right:  []bool{true, false, false, true, true, true, true},
	}
	for _, s := range ld.Slots {
		name := shorten(s.HeadName, 50)
		if !s.Same {
			name = shorten(s.BaseName, 24) + " -> " + shorten(s.HeadName, 24)
		}
		st.Rows = append(st.Rows, []string{fmt.Sprint(s.Index), s.Label, name, usStr(s.BaseUS), usStr(s.HeadUS),
			diffSigned(usStr, s.DeltaUS), diffPct(s.DeltaUS, s.BaseUS)})
	}
	return append(bs, block{Heading: "Per position in the repeated layer (mean kernel duration over every repeat and step; no noise test)", Level: 3},
		block{Table: st})
}
