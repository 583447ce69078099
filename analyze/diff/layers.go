package diff

import (
	"fmt"

	"kinetoscope/analyze"
)

// LayersDiff compares the two runs' steps folded into layers (Rank.Layers),
// layer by layer with the noise test, and position by position in the
// repeated layer.
type LayersDiff struct {
	Phase string `json:"phase"`
	// Layers is the number of layers compared; Note says why none was
	// when the folds differ (another model, another layer sequence).
	Layers int    `json:"layers"`
	Note   string `json:"note,omitempty"`
	// BaseKernelsPerLayer and HeadKernelsPerLayer are the length of each
	// side's repeated sequence.
	BaseKernelsPerLayer int         `json:"base_kernels_per_layer"`
	HeadKernelsPerLayer int         `json:"head_kernels_per_layer"`
	PerLayer            []LayerDiff `json:"per_layer,omitempty"`
	// Slots compares the positions of the repeated layer when both sides
	// have as many; their means cover every repeat and step, with no
	// noise test (the kernels of one step are not independent samples).
	Slots []SlotDiff `json:"slots,omitempty"`
}

// LayerDiff is one layer's time per step, base vs head.
type LayerDiff struct {
	Index     int     `json:"index"`
	Irregular bool    `json:"irregular,omitempty"`
	BaseUS    float64 `json:"base_us"`
	HeadUS    float64 `json:"head_us"`
	DeltaUS   float64 `json:"delta_us"`
	DeltaPct  float64 `json:"delta_pct"`
	Test      Test    `json:"test"`
}

// SlotDiff is one position of the repeated layer, base vs head.
type SlotDiff struct {
	Index int    `json:"index"`
	Label string `json:"label"` // the head's
	// BaseName and HeadName are the kernels; Same says they are one name.
	BaseName string  `json:"base_name"`
	HeadName string  `json:"head_name"`
	Same     bool    `json:"same"`
	BaseUS   float64 `json:"base_us"` // mean kernel duration
	HeadUS   float64 `json:"head_us"`
	DeltaUS  float64 `json:"delta_us"`
	DeltaPct float64 `json:"delta_pct"`
}

// compareLayers compares the folds of phase on the selected ranks; nil
// when neither side folded.
func compareLayers(t tester, b, h []*analyze.Rank, phase string) *LayersDiff {
	bf, hf := folds(b, phase), folds(h, phase)
	if len(bf) == 0 && len(hf) == 0 {
		return nil
	}
	d := &LayersDiff{Phase: phase}
	switch {
	case len(bf) == 0 || len(hf) == 0:
		d.Note = fmt.Sprintf("the %s steps of one run only fold into layers", phase)
		return d
	case bf[0].Layers != hf[0].Layers:
		d.Note = fmt.Sprintf("%d layers in base, %d in head: not compared layer by layer", bf[0].Layers, hf[0].Layers)
		return d
	}
	d.Layers = bf[0].Layers
	d.BaseKernelsPerLayer, d.HeadKernelsPerLayer = bf[0].KernelsPerLayer, hf[0].KernelsPerLayer
	var bs, hs [][]float64
	for l := range d.Layers {
		bl, hl := pooledLayer(bf, l), pooledLayer(hf, l)
		ld := LayerDiff{Index: l, Irregular: hf[0].PerLayer[l].Irregular, BaseUS: mean(bl), HeadUS: mean(hl)}
		ld.DeltaUS = ld.HeadUS - ld.BaseUS
		ld.DeltaPct = pct(ld.DeltaUS, ld.BaseUS)
		d.PerLayer = append(d.PerLayer, ld)
		bs, hs = append(bs, bl), append(hs, hl)
	}
	for i, test := range t.testAll(bs, hs) {
		d.PerLayer[i].Test = test
	}
	if len(bf[0].Slots) == len(hf[0].Slots) {
		d.Slots = compareSlots(bf, hf)
	}
	return d
}

// folds returns each rank's fold of phase; nil unless every rank has one
// of the same number of layers.
func folds(ranks []*analyze.Rank, phase string) []*analyze.LayerFold {
	var out []*analyze.LayerFold
	for _, rk := range ranks {
		var f *analyze.LayerFold
		for i := range rk.Layers {
			if rk.Layers[i].Phase == phase {
				f = &rk.Layers[i]
			}
		}
		if f == nil || (len(out) > 0 && f.Layers != out[0].Layers) {
			return nil
		}
		out = append(out, f)
	}
	return out
}

// pooledLayer returns layer l's samples: per step, the mean over the ranks
// of their k-th folded step (as the step samples pool ranks).
func pooledLayer(fs []*analyze.LayerFold, l int) []float64 {
	n := len(fs[0].PerLayer[l].StepUS)
	for _, f := range fs {
		n = min(n, len(f.PerLayer[l].StepUS))
	}
	out := make([]float64, n)
	for k := range out {
		for _, f := range fs {
			out[k] += f.PerLayer[l].StepUS[k]
		}
		out[k] /= float64(len(fs))
	}
	return out
}

// compareSlots compares the positions of the repeated layer, each side's
// mean over its ranks.
func compareSlots(bf, hf []*analyze.LayerFold) []SlotDiff {
	var out []SlotDiff
	for j := range hf[0].Slots {
		bsl, hsl := bf[0].Slots[j], hf[0].Slots[j]
		sd := SlotDiff{Index: j, Label: hsl.Label, BaseName: bsl.Name, HeadName: hsl.Name, Same: bsl.Name == hsl.Name,
			BaseUS: slotMean(bf, j), HeadUS: slotMean(hf, j)}
		sd.DeltaUS = sd.HeadUS - sd.BaseUS
		sd.DeltaPct = pct(sd.DeltaUS, sd.BaseUS)
		out = append(out, sd)
	}
	return out
}

// slotMean is slot j's mean duration over the ranks' kernels.
func slotMean(fs []*analyze.LayerFold, j int) float64 {
	var sum float64
	n := 0
	for _, f := range fs {
		s := f.Slots[j]
		sum += s.MeanUS * float64(s.Count)
		n += s.Count
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
