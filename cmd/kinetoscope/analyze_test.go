package main

import (
	"bytes"
	"encoding/json"
	"kinetoscope/internal/testkit"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"analyze"}, "want exactly one PATH"},
		{[]string{"analyze", path, "--format", "xml"}, `unknown format "xml"`},
		{[]string{"analyze", path, "--rank", "x"}, `rank "x" is not a number`},
		{[]string{"analyze", path, "--rank", "5"}, "no trace of rank 5"},
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
