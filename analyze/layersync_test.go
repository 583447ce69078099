package analyze

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// TestPerLayerSyncSteps: a real unmarked INT4 MoE trace whose router
// copies its expert counts to the host in every layer
// (sampletraces/real/moe_sync, 8 layers) is cut into the steps the
// generator ran, 1 prefill and 15 decode, not into its layers: as it is,
// where the per-layer copies and the sampled tokens' copy share one name,
// and with the sampled tokens' copy of each step renamed to a copy to
// pinned memory (as vLLM copies them), and with it removed, where the
// per-layer copies alone are device-to-host copies and run once per layer
// cycle, with the router's kernels.
func TestPerLayerSyncSteps(t *testing.T) {
	dir := testkit.Real(t, "moe_sync")
	var truth struct {
		Phases map[string]int `json:"phases"`
		Steps  []struct {
			Phase   string              `json:"phase"`
			Windows map[string][2]int64 `json:"host_window_ns"`
			Copies  int                 `json:"device_to_host_copies"`
		} `json:"steps"`
	}
	if err := sampletraces.ReadJSON(filepath.Join(dir, "truth.json"), &truth); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("%s: %v %v", dir, paths, err)
	}
	variants := []string{dir}
	for _, drop := range []bool{false, true} {
		var raw map[string]any
		if err := sampletraces.ReadJSON(paths[0], &raw); err != nil {
			t.Fatal(err)
		}
		if n := sampledCopies(t, raw, truth.Steps[0].Copies, len(truth.Steps), drop); n != len(truth.Steps) {
			t.Fatalf("changed %d sampled-token copies, want one per step (%d)", n, len(truth.Steps))
		}
		b, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), map[bool]string{false: "pinned", true: "nocopy"}[drop]+"_rank0.pt.trace.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		variants = append(variants, p)
	}
	for _, path := range variants {
		_, r := analyzePath(t, path)
		rk := r.Ranks[0]
		got := map[string]int{}
		for _, s := range rk.Steps {
			got[s.Phase]++
		}
		if rk.StepSource != SourceInferred || len(rk.Steps) != len(truth.Steps) ||
			got[PhasePrefill] != truth.Phases["prefill"] || got[PhaseDecode] != truth.Phases["decode"] {
			t.Errorf("%s: %d steps (%v) by %s (%s); truth %d (%v)", filepath.Base(path), len(rk.Steps), got,
				rk.StepSource, rk.StepEvidence, len(truth.Steps), truth.Phases)
			continue
		}
		for i, s := range rk.Steps {
			if s.Phase != truth.Steps[i].Phase {
				t.Errorf("%s step %d: %s, truth %s", filepath.Base(path), i, s.Phase, truth.Steps[i].Phase)
			}
		}
	}
}

// sampledCopies changes, in raw (a trace read with encoding/json), the
// last of every perStep device-to-host copies in launch order (the
// sampled tokens', after the layers' router copies): renamed to a copy to
// pinned memory, or, with drop, removed (as if the tokens stayed on the
// device). It returns how many it changed.
func sampledCopies(t *testing.T, raw map[string]any, perStep, steps int, drop bool) int {
	t.Helper()
	var copies []map[string]any
	for _, e := range raw["traceEvents"].([]any) {
		m := e.(map[string]any)
		if m["cat"] == "gpu_memcpy" && m["name"] == "Memcpy DtoH (Device -> Pageable)" {
			copies = append(copies, m)
		}
	}
	sort.SliceStable(copies, func(i, j int) bool { return copies[i]["ts"].(float64) < copies[j]["ts"].(float64) })
	if len(copies) != perStep*steps {
		t.Fatalf("%d device-to-host copies, want %d a step x %d steps", len(copies), perStep, steps)
	}
	n := 0
	for i := perStep - 1; i < len(copies); i += perStep {
		copies[i]["name"] = "Memcpy DtoH (Device -> Pinned)"
		if drop {
			copies[i]["cat"] = "dropped"
		}
		n++
	}
	if drop {
		var kept []any
		for _, e := range raw["traceEvents"].([]any) {
			if e.(map[string]any)["cat"] != "dropped" {
				kept = append(kept, e)
			}
		}
		raw["traceEvents"] = kept
	}
	return n
}

// TestPeriodicPhases: a warning when runs of prefill steps recur at one
// period past the first (the per-layer split of moe_sync without its
// sampled-token copies: prefill again every 8 steps), none for engine
// steps' shapes, periodic arrivals too few to say so included.
func TestPeriodicPhases(t *testing.T) {
	seq := func(s string) []Step {
		var out []Step
		for _, c := range s {
			p := PhaseDecode
			if c == 'P' {
				p = PhasePrefill
			}
			out = append(out, Step{Phase: p})
		}
		return out
	}
	tests := []struct {
		phases string
		period int // 0: no warning
	}{
		{"PPPPPPPPPddddddd" + "Pddddddd" + "Pddddddd" + "Pddddddd", 8},
		{"Pddd" + "Pddd" + "Pddd" + "Pddd", 4},
		{"PdPdPdPd", 2},
		{"Pddddddddddddddd", 0},
		{"PdddPdddPddd", 0},                  // three runs: too few past the first
		{"PddddPdddPddddddPdd", 0},           // irregular arrivals
		{"PPddddPPddddPPdddd" + "PPdddd", 6}, // two-step runs every 6
		{"dddddddd", 0},                      // no prefill
		{"PdPPdddPdddPddd", 0},               // periods differ
	}
	for _, tt := range tests {
		w := periodicPhases(seq(tt.phases))
		want := ""
		if tt.period > 0 {
			want = fmt.Sprintf("a period of %d steps", tt.period)
		}
		if (want == "") != (w == "") || !strings.Contains(w, want) {
			t.Errorf("%s: %q, want period %d", tt.phases, w, tt.period)
		}
		// The headline states no figure on inferred steps that alternate
		// so, and does on marked ones (the marks say what a step is).
		for _, src := range []string{SourceInferred, SourceVLLM} {
			r := &Report{Ranks: []Rank{{Rank: 0, StepSource: src, Steps: seq(tt.phases)}}, Headline: &Headline{Phase: PhaseDecode}}
			problem := stepProblem(r, func(rk *Rank) PhaseSummary { return rk.Decode })
			if wantProblem := src == SourceInferred && want != ""; (problem != "") != wantProblem || (wantProblem && !strings.Contains(problem, want)) {
				t.Errorf("%s by %s: headline problem %q", tt.phases, src, problem)
			}
		}
	}
}
