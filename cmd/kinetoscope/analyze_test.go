package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
)

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunAnalyzeFormats(t *testing.T) {
	path := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	code, out, errs := runCmd("analyze", path, "--format", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	var r struct {
		Ranks []struct {
			Steps []struct {
				Phase   string                     `json:"phase"`
				Buckets map[string]json.RawMessage `json:"buckets"`
			} `json:"steps"`
			Decode struct {
				Steps   int `json:"steps"`
				Buckets map[string]struct {
					ShareOfKernel float64 `json:"share_of_kernel"`
				} `json:"buckets"`
			} `json:"decode"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json output: %v", err)
	}
	if len(r.Ranks) != 1 || r.Ranks[0].Decode.Steps != 1 || r.Ranks[0].Steps[0].Phase != "decode" || r.Ranks[0].Decode.Buckets["gemm"].ShareOfKernel < 50 {
		t.Errorf("json report: %+v", r)
	}
	if !strings.HasPrefix(out, "{\n  ") {
		t.Errorf("json not indented: %.20q", out)
	}
	for _, f := range []string{"table", "markdown", "csv"} {
		code, out, errs := runCmd("analyze", "--format", f, path)
		if code != 0 || !strings.Contains(strings.ToLower(out), "gemm") {
			t.Errorf("%s: exit %d, %s; output %.200q", f, code, errs, out)
		}
	}
	if _, out, _ := runCmd("analyze", path); !strings.Contains(out, "of decode kernel time") {
		t.Errorf("table does not lead with the headline: %.300q", out)
	}
}

func TestRunAnalyzeOptions(t *testing.T) {
	path := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - {bucket: other, pattern: \"^_matmul_ogs\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, errs := runCmd("analyze", path, "--rules", rules, "--format", "json")
	if !strings.Contains(out, "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu") || !strings.Contains(out, `"unclassified": [`) {
		t.Errorf("--rules: user rule not applied: %s", errs)
	}
	_, out, _ = runCmd("analyze", path, "--step-regex", "^execute_", "--format", "json")
	if !strings.Contains(out, `"step_source": "regex"`) {
		t.Errorf("--step-regex not used")
	}
}

func TestRunAnalyzeErrors(t *testing.T) {
	path := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	dir := t.TempDir()
	png := filepath.Join(dir, "chart.json")
	testkit.Must(t, os.WriteFile(png, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0o644))
	others := t.TempDir()
	testkit.Must(t, os.WriteFile(filepath.Join(others, "a.png"), []byte("x"), 0o644))
	testkit.Must(t, os.WriteFile(filepath.Join(others, "notes.txt"), []byte("x"), 0o644))
	gz, err := os.ReadFile(path)
	testkit.Must(t, err)
	truncated := filepath.Join(dir, "cut.json.gz")
	testkit.Must(t, os.WriteFile(truncated, gz[:len(gz)/2], 0o644))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"analyze"}, "want a PATH"},
		{[]string{"analyze", path, "--format", "xml"}, `unknown format "xml"`},
		{[]string{"analyze", path, "--rank", "x"}, "want a non-negative integer"},
		{[]string{"analyze", path, "--rank", "5"}, "no rank 5 (ranks: [0])"},
		{[]string{"analyze", png}, png + ": not a trace: not JSON: a PNG image"},
		{[]string{"analyze", others}, others + ": no *.json or *.json.gz trace file found (it holds a.png, notes.txt)"},
		{[]string{"analyze", truncated}, "kinetoscope analyze: " + truncated + ": truncated gzip"},
		{[]string{"analyze", path, "--rules", "/nonexistent/rules.yaml"}, "rules.yaml"},
		{[]string{"analyze", path, "--step-regex", "("}, "step regex"},
		{[]string{"analyze", "/nonexistent/trace.json"}, "trace.json"},
		{[]string{"analyze", testkit.Public(t, "hta-rank-non-gpu.json.gz")}, "no trace with GPU events"},
	}
	for _, tt := range tests {
		code, _, errs := runCmd(tt.args...)
		if code != 1 && !(len(tt.args) == 1 && code != 0) {
			t.Errorf("%v: exit %d, want failure", tt.args, code)
		}
		if !strings.Contains(errs, tt.want) {
			t.Errorf("%v: stderr %q, want %q", tt.args, errs, tt.want)
		}
	}
}

// analyze of the rank files given one by one is the analysis of their
// directory; --rank shows one rank's sections and keeps the alignment
// across ranks.
func TestRunAnalyzePathsAndRank(t *testing.T) {
	dir := testkit.Real(t, "eager")
	files, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(files) != 2 {
		t.Fatalf("rank files: %v %v", files, err)
	}
	_, whole, _ := runCmd("analyze", dir, "--format", "json")
	code, split, errs := runCmd(append([]string{"analyze", "--format", "json"}, files...)...)
	if code != 0 {
		t.Fatalf("two files: exit %d: %s", code, errs)
	}
	var a, b struct {
		Headline    json.RawMessage `json:"headline"`
		Collectives json.RawMessage `json:"collectives"`
		Ranks       []struct {
			Rank int `json:"rank"`
		} `json:"ranks"`
	}
	testkit.Must(t, json.Unmarshal([]byte(whole), &a))
	testkit.Must(t, json.Unmarshal([]byte(split), &b))
	if len(b.Ranks) != 2 || string(a.Headline) != string(b.Headline) || string(a.Collectives) != string(b.Collectives) {
		t.Errorf("two rank files: %d ranks, headline and collectives equal to the directory's: %v, %v",
			len(b.Ranks), string(a.Headline) == string(b.Headline), string(a.Collectives) == string(b.Collectives))
	}
	code, text, errs := runCmd("analyze", dir, "--rank", "1")
	if code != 0 {
		t.Fatalf("--rank 1: exit %d: %s", code, errs)
	}
	if strings.Contains(text, "\nRank 0 (") || !strings.Contains(text, "\nRank 1 (") || !strings.Contains(text, "297 collectives matched across ranks, 0 unmatched") {
		t.Errorf("--rank 1 shows other ranks or lost the alignment:\n%s", text)
	}
}

// Two files that claim one rank, from two runs (rank 0 of eager and of
// p2p_disabled), given together or in one directory, are an error naming
// both files, exit code 2, for every command that reads a run.
func TestRunDuplicateRank(t *testing.T) {
	var rank0 []string
	for _, v := range []string{"eager", "p2p_disabled"} {
		f, err := filepath.Glob(filepath.Join(testkit.Real(t, v), "*_rank0.*.pt.trace.json.gz"))
		if err != nil || len(f) != 1 {
			t.Fatalf("%s rank 0: %v %v", v, f, err)
		}
		rank0 = append(rank0, f[0])
	}
	dir := t.TempDir()
	var copies []string
	for i, f := range rank0 {
		b, err := os.ReadFile(f)
		testkit.Must(t, err)
		c := filepath.Join(dir, []string{"a", "b"}[i]+"_"+filepath.Base(f))
		testkit.Must(t, os.WriteFile(c, b, 0o644))
		copies = append(copies, c)
	}
	out := filepath.Join(t.TempDir(), "c.svg")
	for _, args := range [][]string{
		append([]string{"analyze"}, rank0...),
		{"analyze", dir},
		{"analyze", dir, "--format", "json"},
		{"chart", dir, "--kind", "steps", "-o", out},
	} {
		code, stdout, errs := runCmd(args...)
		names := rank0
		if args[1] == dir {
			names = copies
		}
		if code != 2 || stdout != "" || !strings.Contains(errs, "duplicate rank 0") ||
			!strings.Contains(errs, names[0]) || !strings.Contains(errs, names[1]) {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want 2, nothing, both files named", args, code, len(stdout), errs)
		}
	}
}
