package analyze

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// sweepBench is a sweep sample's microbench.json: each shape of its
// trace's GEMMs timed alone on the device, its kernels as the profiler
// names and times them (kernel_us: the median of a call's summed kernel
// durations).
type sweepBench struct {
	Rows []struct {
		Kind     string   `json:"kind"`
		Proj     string   `json:"proj"`
		M        int      `json:"m"`
		Kernels  []string `json:"kernels"`
		KernelUS float64  `json:"kernel_us"`
	} `json:"rows"`
}

// TestLayersSweeps: the sweep samples (one decoder at many batch sizes and
// contexts) fold into the model's 4 layers, not 8: each layer runs two
// RMSNorms (8 kernels each) and two residual adds, so most of its kernels
// run twice in it, but only one half holds the attention kernel, and a
// layer without attention is no layer. In marlin_sweep the layer's two
// Marlin INT4 GEMMs are two slots, gate_up (4096 x 28672) first and down
// (14336 x 4096) second, as the model runs them, and each slot's mean is
// within 10% of the microbenchmark of that projection for every batch whose
// call ran the same Marlin kernel (the profiler's durations both).
func TestLayersSweeps(t *testing.T) {
	for _, v := range sampletraces.RealSweeps() {
		dir := testkit.Real(t, v)
		var truth struct {
			Model struct {
				Layers int `json:"layers"`
			} `json:"model"`
		}
		if err := sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth); err != nil {
			t.Fatal(err)
		}
		_, r := analyzePath(t, dir)
		rk := r.Ranks[0]
		lf := foldOf(rk, PhaseDecode)
		if lf == nil {
			t.Fatalf("%s: decode steps did not fold", v)
		}
		if lf.Layers != truth.Model.Layers || lf.Irregular != 0 || lf.LayersPerRepeat != 1 || lf.Steps < 3 {
			t.Errorf("%s: %d layers (%d a repeat, %d irregular) over %d steps, truth %d layers",
				v, lf.Layers, lf.LayersPerRepeat, lf.Irregular, lf.Steps, truth.Model.Layers)
		}
		if slotsOf(lf, Attention) != 1 {
			t.Errorf("%s: %d attention slots a layer, want 1", v, slotsOf(lf, Attention))
		}
		if v != "marlin_sweep" {
			continue
		}
		var bench sweepBench
		if err := sampletraces.ReadJSON(filepath.Join(dir, "microbench.json"), &bench); err != nil {
			t.Fatal(err)
		}
		var marlin []LayerSlot
		for _, s := range lf.Slots {
			if s.Bucket == MarlinGEMM {
				marlin = append(marlin, s)
			}
		}
		if len(marlin) != 2 {
			t.Fatalf("%s: %d Marlin slots a layer, want gate_up and down", v, len(marlin))
		}
		for i, proj := range []string{"gate_up", "down"} {
			s, compared := marlin[i], 0
			for _, row := range bench.Rows {
				if row.Kind != "marlin_int4_gemm" || row.Proj != proj || !slices.Contains(row.Kernels, s.Name) {
					continue
				}
				compared++
				if math.Abs(s.MeanUS-row.KernelUS) > 0.1*row.KernelUS {
					t.Errorf("%s %s (%s): slot mean %.2f us, microbenchmark at m=%d %.2f us", v, proj, s.Label, s.MeanUS, row.M, row.KernelUS)
				}
			}
			if compared == 0 {
				t.Errorf("%s %s: no microbenchmark row ran %.60q", v, proj, s.Name)
			}
		}
		if marlin[0].MeanUS <= marlin[1].MeanUS*1.2 {
			t.Errorf("%s: gate_up %.2f us and down %.2f us do not separate (gate_up moves 2x down's weights)", v, marlin[0].MeanUS, marlin[1].MeanUS)
		}
	}
}
