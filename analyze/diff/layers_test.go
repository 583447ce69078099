package diff_test

import (
	"math"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
)

// TestCompareLayers: the real TP1 pair eager vs CUDA graph (the same
// kernels, far less idle) compares layer by layer: every layer faster
// beyond noise, each side's figure its fold's own mean, the GEMM slots'
// kernels within a few percent; a run against itself changes no layer;
// runs of different models say why their layers are not compared.
func TestCompareLayers(t *testing.T) {
	eager, graph := analysePath(t, testkit.Real(t, "bare_eager")), analysePath(t, testkit.Real(t, "bare_cudagraph"))
	d, err := diff.Compare(eager, graph, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ld := d.Layers
	if ld == nil || ld.Note != "" || ld.Layers != 4 || len(ld.PerLayer) != 4 {
		t.Fatalf("layers diff: %+v", ld)
	}
	bf, hf := foldOf(t, eager, analyze.PhaseDecode), foldOf(t, graph, analyze.PhaseDecode)
	for i, l := range ld.PerLayer {
		if math.Abs(l.BaseUS-bf.PerLayer[i].MeanUS) > 1e-9*l.BaseUS || math.Abs(l.HeadUS-hf.PerLayer[i].MeanUS) > 1e-9*l.HeadUS {
			t.Errorf("layer %d: %.1f -> %.1f us, the folds say %.1f -> %.1f", i, l.BaseUS, l.HeadUS, bf.PerLayer[i].MeanUS, hf.PerLayer[i].MeanUS)
		}
		if !l.Test.Significant || l.DeltaUS >= 0 || l.Test.CIHighUS >= 0 {
			t.Errorf("layer %d: %+.1f us, %s [%.1f, %.1f]; want faster beyond noise", i, l.DeltaUS, l.Test.Verdict, l.Test.CILowUS, l.Test.CIHighUS)
		}
	}
	gemms := 0
	for _, s := range ld.Slots {
		if strings.HasPrefix(s.Label, "GEMM") && s.Same && s.BaseUS > 5 {
			gemms++
			if s.DeltaPct > 5 || s.DeltaPct < -5 {
				t.Errorf("slot %d %s: %.1f -> %.1f us, the same GEMM in both", s.Index, s.Label, s.BaseUS, s.HeadUS)
			}
		}
	}
	if gemms == 0 || len(ld.Slots) != bf.KernelsPerLayer {
		t.Errorf("%d GEMM slots compared, %d slots for %d kernels a layer", gemms, len(ld.Slots), bf.KernelsPerLayer)
	}

	self, err := diff.Compare(eager, eager, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range self.Layers.PerLayer {
		if l.DeltaUS != 0 || l.Test.Significant {
			t.Errorf("self diff layer %d: %+.1f us, %s", l.Index, l.DeltaUS, l.Test.Verdict)
		}
	}

	other := analysePath(t, testkit.Public(t, "tracelens-sglang-qwen3-8b-decode.json.gz"))
	od, err := diff.Compare(eager, other, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if od.Layers == nil || !strings.Contains(od.Layers.Note, "4 layers in base, 36 in head") || len(od.Layers.PerLayer) != 0 {
		t.Errorf("layers of another model: %+v", od.Layers)
	}
}

func foldOf(t *testing.T, r *analyze.Report, phase string) *analyze.LayerFold {
	t.Helper()
	for i := range r.Ranks[0].Layers {
		if r.Ranks[0].Layers[i].Phase == phase {
			return &r.Ranks[0].Layers[i]
		}
	}
	t.Fatalf("%s: no %s fold", r.Source, phase)
	return nil
}
