package analyze

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
	"kinetoscope/sampletraces/synth"
)

// TestFindFold: the longest exact repetition of a kernel sequence, with a
// head and a tail that differ, the shortest period on a tie, and nothing
// when nothing repeats.
func TestFindFold(t *testing.T) {
	seq := func(s string) []ingest.StrID {
		out := make([]ingest.StrID, len(s))
		for i, c := range s {
			out[i] = ingest.StrID(c)
		}
		return out
	}
	tests := []struct {
		name, seq string
		want      fold
		ok        bool
	}{
		{"head, 4 layers, tail", "EPabcdabcdabcdabcdNLS", fold{2, 4, 4}, true},
		{"no head or tail", "abcabc", fold{0, 3, 2}, true},
		// the tail starts like a layer (the final norm is the layers' norm):
		// it is not a layer
		{"tail starts like a layer", "Eabcabcabca", fold{1, 3, 3}, true},
		{"two kinds of layer alternating", "EabcxyzabcxyzabcxyzS", fold{1, 6, 3}, true},
		{"a layer that repeats a kernel", "EaabaabaabS", fold{1, 3, 3}, true},
		{"nothing repeats", "abcdefg", fold{}, false},
		{"one kernel", "a", fold{}, false},
		{"empty", "", fold{}, false},
	}
	for _, tc := range tests {
		got, ok := findFold(seq(tc.seq))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: findFold(%q) = %+v %v, want %+v %v", tc.name, tc.seq, got, ok, tc.want, tc.ok)
		}
	}
}

// TestLayersReal: on every real sample the decode and prefill steps fold
// into the decoder's layers as its truth.json gives them (4, all alike);
// every GPU event of a step is in the head, a layer or the tail; the MoE
// sample's layer holds the Marlin gate_up and down of every expert; and
// the slots' kernel time equals the decode steps' time of those kernels as
// the kernel table counts it.
func TestLayersReal(t *testing.T) {
	for _, v := range append(sampletraces.RealVariants(), sampletraces.RealStyles()...) {
		dir := testkit.Real(t, v)
		var truth struct {
			Model struct {
				Layers int `json:"layers"`
				MoE    *struct {
					Experts int `json:"experts"`
				} `json:"moe"`
			} `json:"model"`
		}
		if err := sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth); err != nil {
			t.Fatal(err)
		}
		_, r := analyzePath(t, dir)
		for _, rk := range r.Ranks {
			for _, phase := range []string{PhaseDecode, PhasePrefill} {
				lf := foldOf(rk, phase)
				if lf == nil {
					t.Errorf("%s rank %d: %s steps did not fold", v, rk.Rank, phase)
					continue
				}
				if lf.Layers != truth.Model.Layers || lf.Irregular != 0 || lf.Unfolded != 0 {
					t.Errorf("%s rank %d %s: %d layers (%d irregular, %d steps unfolded), truth %d", v, rk.Rank, phase, lf.Layers, lf.Irregular, lf.Unfolded, truth.Model.Layers)
				}
				checkFoldCovers(t, v, rk, lf)
			}
			lf := foldOf(rk, PhaseDecode)
			if lf == nil {
				continue
			}
			if truth.Model.MoE != nil {
				if n := slotsOf(lf, MarlinGEMM); n != 2*truth.Model.MoE.Experts {
					t.Errorf("%s: %d Marlin slots a layer, want gate_up and down of %d experts", v, n, truth.Model.MoE.Experts)
				}
			}
			checkSlotTime(t, v, rk, lf)
		}
	}
}

// TestLayersSynth: synthetic runs of a MoE model whose first layer is
// dense fold into all their layers, the first found as irregular by the
// anchor kernel, in eager and CUDA-graph decode, and every GPU event of a
// decode step is in the head, a layer or the tail.
func TestLayersSynth(t *testing.T) {
	for _, graph := range []bool{false, true} {
		cfg := synth.DefaultConfig()
		cfg.Ranks, cfg.Layers, cfg.DecodeSteps, cfg.PythonFunctions, cfg.Gzip, cfg.CUDAGraph = 2, 6, 3, 0, false, graph
		dir := t.TempDir()
		truth, err := synth.Generate(dir, cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		_, r := analyzePath(t, dir)
		for _, rk := range r.Ranks {
			lf := foldOf(rk, PhaseDecode)
			if lf == nil {
				t.Fatalf("graph=%v rank %d: decode did not fold", graph, rk.Rank)
			}
			if lf.Layers != cfg.Layers || lf.Irregular != 1 || !lf.PerLayer[0].Irregular || lf.PerLayer[1].Irregular {
				t.Errorf("graph=%v rank %d: %d layers, %d irregular; want %d, the first dense", graph, rk.Rank, lf.Layers, lf.Irregular, cfg.Layers)
			}
			if lf.PerLayer[0].Kernels >= lf.KernelsPerLayer {
				t.Errorf("graph=%v: dense layer %d kernels, MoE layer %d", graph, lf.PerLayer[0].Kernels, lf.KernelsPerLayer)
			}
			checkFoldCovers(t, "synth", rk, lf)
			if got, want := kernelsOfFold(lf), truth.PerStep[PhaseDecode].GPUEvents; got != want {
				t.Errorf("graph=%v: head + layers + tail = %d GPU events, truth %d a decode step", graph, got, want)
			}
		}
	}
}

func foldOf(rk Rank, phase string) *LayerFold {
	for i := range rk.Layers {
		if rk.Layers[i].Phase == phase {
			return &rk.Layers[i]
		}
	}
	return nil
}

func slotsOf(lf *LayerFold, b BucketID) int {
	n := 0
	for _, s := range lf.Slots {
		if s.Bucket == b {
			n++
		}
	}
	return n
}

func kernelsOfFold(lf *LayerFold) int {
	n := lf.HeadKernels + lf.TailKernels
	for _, l := range lf.PerLayer {
		n += l.Kernels
	}
	return n
}

// checkFoldCovers: the head, the layers and the tail hold every GPU event
// of each folded step; the repeated layers hold KernelsPerLayer each.
func checkFoldCovers(t *testing.T, name string, rk Rank, lf *LayerFold) {
	t.Helper()
	for _, s := range rk.Steps {
		if s.Phase == lf.Phase && s.Kernels != kernelsOfFold(lf) && lf.Unfolded == 0 {
			t.Errorf("%s rank %d step %d: %d GPU events, fold holds %d", name, rk.Rank, s.Index, s.Kernels, kernelsOfFold(lf))
		}
	}
	for _, l := range lf.PerLayer[lf.Irregular:] {
		if l.Kernels != lf.KernelsPerLayer || l.MeanUS <= 0 || l.KernelUS <= 0 {
			t.Errorf("%s rank %d layer %d: %d kernels, %.1f us, kernel %.1f us", name, rk.Rank, l.Index, l.Kernels, l.MeanUS, l.KernelUS)
		}
	}
	if len(lf.Slots) != lf.KernelsPerLayer {
		t.Errorf("%s: %d slots, %d kernels a layer", name, len(lf.Slots), lf.KernelsPerLayer)
	}
}

// checkSlotTime: for each kernel that runs only inside the layers, its
// slots' time (count x mean) adds up to its decode time in the kernel
// table (TopKernels), which counts every kernel of the decode steps on
// another code path.
func checkSlotTime(t *testing.T, name string, rk Rank, lf *LayerFold) {
	t.Helper()
	slotUS, slotN := map[string]float64{}, map[string]int{}
	for _, s := range lf.Slots {
		slotUS[s.Name] += s.MeanUS * float64(s.Count)
		slotN[s.Name] += s.Count
	}
	checked := 0
	for _, ks := range rk.TopKernels {
		for _, k := range ks {
			n, ok := slotN[k.Name]
			if !ok || n != k.Count {
				continue // also outside the layers, or not in them
			}
			checked++
			if math.Abs(slotUS[k.Name]-k.US) > 1e-6*math.Max(1, k.US) {
				t.Errorf("%s rank %d: %.60q: slots %.3f us, kernel table %.3f us", name, rk.Rank, k.Name, slotUS[k.Name], k.US)
			}
		}
	}
	if checked == 0 {
		t.Errorf("%s rank %d: no kernel runs only in the layers", name, rk.Rank)
	}
	if !slices.ContainsFunc(lf.Slots, func(s LayerSlot) bool { return s.Count == lf.Steps*(lf.Layers-lf.Irregular) }) {
		t.Errorf("%s: slot counts are not layers x steps", name)
	}
}

// TestLayersPublic: the public vLLM and SGLang traces fold into as many
// layers as they run rotary-embedding kernels (one a layer), counted with
// encoding/json over the raw trace: Qwen3-8B's 36, and gpt-oss's 24, whose
// sliding-window and full-attention layers alternate (2 a repeat in the
// full-graph decode, where the attention kernels differ).
func TestLayersPublic(t *testing.T) {
	for _, tc := range []struct {
		file      string
		phase     string
		perRepeat int
	}{
		{"tracelens-sglang-qwen3-8b-decode.json.gz", PhaseDecode, 1},
		{"tracelens-sglang-qwen3-8b-prefilldecode.json.gz", PhasePrefill, 1},
		{"tracelens-vllm-decode-full-graph.json.gz", PhaseDecode, 2},
		{"tracelens-vllm-prefilldecode-piecewise.json.gz", PhaseMixed, 1},
	} {
		path := testkit.Public(t, tc.file)
		var raw struct {
			TraceEvents []struct {
				Cat  string `json:"cat"`
				Name string `json:"name"`
			} `json:"traceEvents"`
		}
		if err := sampletraces.ReadJSON(path, &raw); err != nil {
			t.Fatal(err)
		}
		rotary := 0
		for _, e := range raw.TraceEvents {
			if e.Cat == "kernel" && strings.Contains(e.Name, "rotary_embedding") {
				rotary++
			}
		}
		_, r := analyzePath(t, path)
		lf := foldOf(r.Ranks[0], tc.phase)
		if lf == nil {
			t.Errorf("%s: %s steps did not fold", tc.file, tc.phase)
			continue
		}
		if lf.Layers*lf.Steps != rotary || lf.LayersPerRepeat != tc.perRepeat {
			t.Errorf("%s: %d layers x %d steps, %d a repeat; the trace runs %d rotary kernels, want %d a repeat",
				tc.file, lf.Layers, lf.Steps, lf.LayersPerRepeat, rotary, tc.perRepeat)
		}
	}
}

// TestLayerModules: in the real eager TP2 trace (with_stack: nn.Module
// events) each slot is named by the module that launched it as the
// generator's model nests them: the norms in RMSNorm, one AllReduce in
// Attention (after o_proj) and one in MLP (after down), the activation in
// MLP; in the CUDA-graph decode no slot has a module (no launch of its
// own), and the traces without with_stack have none either.
func TestLayerModules(t *testing.T) {
	_, r := analyzePath(t, testkit.Real(t, "eager"))
	lf := foldOf(r.Ranks[0], PhaseDecode)
	byBucket := map[BucketID][]string{}
	for _, s := range lf.Slots {
		byBucket[s.Bucket] = append(byBucket[s.Bucket], s.Module)
	}
	for b, want := range map[BucketID][]string{
		Norm: {"RMSNorm", "RMSNorm"}, AllReduce: {"Attention", "MLP"}, Activation: {"MLP"}, Attention: {"Attention"},
	} {
		if !slices.Equal(byBucket[b], want) {
			t.Errorf("eager: %s slots in modules %v, want %v", b, byBucket[b], want)
		}
	}
	for _, v := range []string{"cudagraph", "bare_eager"} {
		_, r := analyzePath(t, testkit.Real(t, v))
		for _, s := range foldOf(r.Ranks[0], PhaseDecode).Slots {
			if s.Module != "" {
				t.Errorf("%s: slot %d %s in module %q", v, s.Index, s.Label, s.Module)
			}
		}
	}
	for _, tc := range []struct{ event, want string }{
		{"nn.Module: QKVParallelLinear_0", "QKVParallelLinear"},
		{"nn.Module: DecoderLayer_31", "DecoderLayer"},
		{"nn.Module: Linear", "Linear"},
		{"nn.Module: conv_2d_x", "conv_2d_x"},
	} {
		if got := moduleName(tc.event); got != tc.want {
			t.Errorf("moduleName(%q) = %q, want %q", tc.event, got, tc.want)
		}
	}
}
