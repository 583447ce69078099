package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/internal/testkit"
)

// writeDiffReport writes a one-rank report with n decode steps of the given
// span and AllReduce time (plus 5 ms of GEMM), each step jittered by ±1%.
func writeDiffReport(t *testing.T, dir, name string, n int, spanUS, allreduceUS float64) string {
	t.Helper()
	rk := analyze.Rank{Rank: 0, WorldSize: 1, Device: "NVIDIA H100", StepSource: "vllm",
		TopKernels: map[analyze.BucketID][]analyze.KernelStat{
			analyze.GEMM: {{Name: name + "_gemm_kernel", Bucket: analyze.GEMM, US: 5000 * float64(n), Count: n}},
		}}
	for i := range n {
		j := 1 + 0.01*float64(i%3-1)
		st := analyze.Step{Index: i, Phase: "decode", SpanUS: spanUS * j, KernelUS: allreduceUS*j + 5000,
			Buckets: map[analyze.BucketID]analyze.BucketStat{
				analyze.AllReduce: {US: allreduceUS * j, Count: 122},
				analyze.GEMM:      {US: 5000, Count: 1},
			}}
		rk.Steps = append(rk.Steps, st)
	}
	b, err := json.Marshal(analyze.Report{Source: name, Buckets: analyze.Buckets(), Ranks: []analyze.Rank{rk}})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunDiffFormats(t *testing.T) {
	dir := t.TempDir()
	base := writeDiffReport(t, dir, "eager", 12, 21700, 11170)
	head := writeDiffReport(t, dir, "ll", 12, 12400, 2100)
	tests := []struct {
		name  string
		args  []string
		first string   // the output's first line
		want  []string // substrings of the output
	}{
		{"table", []string{"diff", base, head, "--reports"},
			"decode step 21.7 ms -> 12.4 ms (-43%), AllReduce 11.2 -> 2.10 ms/step",
			[]string{"AllReduce", " significant\n", "eager_gemm_kernel", "ll_gemm_kernel", "Kernels in head only"}},
		{"markdown", []string{"diff", "--format", "markdown", "--reports", base, head},
			"decode step 21.7 ms -> 12.4 ms (-43%), AllReduce 11.2 -> 2.10 ms/step",
			[]string{"| AllReduce |", "## Buckets", `ll\_gemm\_kernel`}},
		{"json", []string{"diff", base, head, "--reports", "--format=json", "--rank", "0"},
			"{", []string{`"delta_pct"`, `"significant": true`, `"rank": "0"`}},
		{"self", []string{"diff", base, base, "--reports"},
			"decode step 21.7 ms -> 21.7 ms (+0%), ", []string{"within noise"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			s := out.String()
			if first, _, _ := strings.Cut(s, "\n"); !strings.HasPrefix(first, tt.first) {
				t.Errorf("first line %q, want prefix %q", first, tt.first)
			}
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("output lacks %q:\n%s", w, s)
				}
			}
			if tt.name == "self" && strings.Contains(s, " significant\n") {
				t.Errorf("self diff reports a significant change:\n%s", s)
			}
		})
	}
}

func TestRunDiffErrors(t *testing.T) {
	dir := t.TempDir()
	base := writeDiffReport(t, dir, "a", 3, 100, 50)
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"ranks": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	badField := filepath.Join(dir, "bad-field.json")
	if err := os.WriteFile(badField, []byte(`{"ranks": [{"rank": "x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"one path", []string{"diff", base}, "want two paths"},
		{"bad format", []string{"diff", base, base, "--reports", "--format", "svg"}, `unknown format "svg"`},
		{"bad rank", []string{"diff", base, base, "--reports", "--rank", "x"}, `invalid value "x" for flag -rank`},
		{"missing rank", []string{"diff", base, base, "--reports", "--rank", "3"}, "no rank 3"},
		{"bad report", []string{"diff", base, bad, "--reports"}, "bad.json: not a JSON report (at byte 11)"},
		{"bad field", []string{"diff", base, badField, "--reports"}, "bad-field.json: not a JSON report (at byte 23)"},
		{"missing file", []string{"diff", base, filepath.Join(dir, "nope.json"), "--reports"}, "nope.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tt.args, &out, &errb); code == 0 {
				t.Fatalf("exit 0, want failure; stdout:\n%s", out.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", errb.String(), tt.want)
			}
		})
	}
}

func TestRunDiffTraces(t *testing.T) {
	// The same model on an H100 and an MI300: the MI300 run's attention
	// kernel (attn_fwd) and hipBLASLt GEMMs (Cijk_...) exist in it only.
	base := testkit.Public(t, "tracelens-h100-qwen1.5-0.5b.json.gz")
	head := testkit.Public(t, "tracelens-mi300-qwen1.5-0.5b.json.gz")
	code, out, errs := runCmd("diff", base, head, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d struct {
		Base    struct{ Path string }
		Kernels struct {
			Added   []struct{ Name string }
			Removed []struct{ Name string }
		}
		Metadata []struct {
			Key, Base, Head string
		}
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if d.Base.Path != base {
		t.Errorf("base path %q, want %q", d.Base.Path, base)
	}
	has := func(ks []struct{ Name string }, prefix string) bool {
		for _, k := range ks {
			if strings.HasPrefix(k.Name, prefix) {
				return true
			}
		}
		return false
	}
	if !has(d.Kernels.Added, "attn_fwd") || !has(d.Kernels.Added, "Cijk_") {
		t.Errorf("added kernels lack attn_fwd or Cijk_: %v", d.Kernels.Added)
	}
	if !has(d.Kernels.Removed, "sm90_xmma_gemm") {
		t.Errorf("removed kernels lack the H100 sm90_xmma GEMM: %v", d.Kernels.Removed)
	}
	for _, m := range d.Metadata {
		if m.Key == "gpu" && (!strings.Contains(m.Base, "H100") || !strings.Contains(m.Head, "MI300")) {
			t.Errorf("gpu metadata %+v, want H100 -> MI300", m)
		}
	}
}
