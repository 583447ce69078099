package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// synthFiles lists the trace files and whether truth.json exists in dir.
func synthFiles(t *testing.T, dir string) ([]string, bool) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var traces []string
	truth := false
	for _, e := range ents {
		switch {
		case e.Name() == "truth.json":
			truth = true
		case strings.Contains(e.Name(), ".pt.trace.json"):
			traces = append(traces, e.Name())
		}
	}
	return traces, truth
}

func TestRunSynthThenAnalyze(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "synthetic-out")
	code, out, errs := runCmd("synth", "-o", dir, "--ranks", "2", "--layers", "2", "--decode-steps", "2",
		"--python-functions", "2", "--seed", "3", "--cuda-graph")
	if code != 0 || !strings.Contains(out, "wrote 2 synthetic rank files") {
		t.Fatalf("synth: exit %d: %s %s", code, out, errs)
	}
	traces, truth := synthFiles(t, dir)
	if len(traces) != 2 || !truth {
		t.Fatalf("wrote %v, truth.json %v", traces, truth)
	}
	for i, name := range traces {
		if !strings.HasPrefix(name, "dp0_pp0_tp") || !strings.Contains(name, "_rank") || !strings.HasSuffix(name, ".pt.trace.json.gz") {
			t.Errorf("file %d has a non-vLLM name %q", i, name)
		}
	}
	code, out, errs = runCmd("analyze", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("analyze of synthetic output: exit %d: %s", code, errs)
	}
	var r struct {
		Synthetic bool              `json:"synthetic"`
		Ranks     []json.RawMessage `json:"ranks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Synthetic || len(r.Ranks) != 2 {
		t.Errorf("analyze: synthetic=%v ranks=%d", r.Synthetic, len(r.Ranks))
	}
}

func TestRunSynthOptions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "o")
	code, _, errs := runCmd("synth", "-o", dir, "--ranks", "1", "--layers", "2", "--target-size", "2MB", "--no-gzip")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	traces, _ := synthFiles(t, dir)
	if len(traces) != 1 || !strings.HasSuffix(traces[0], ".pt.trace.json") {
		t.Fatalf("traces %v", traces)
	}
	st, err := os.Stat(filepath.Join(dir, traces[0]))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 1_800_000 || st.Size() > 2_200_000 {
		t.Errorf("--target-size 2MB wrote %d bytes", st.Size())
	}
	if code, _, errs := runCmd("synth", "-o", dir, "--ranks", "1", "--layers", "2"); code == 0 || !strings.Contains(errs, "not empty") {
		t.Errorf("non-empty directory accepted: exit %d: %s", code, errs)
	}
	if code, _, errs := runCmd("synth", "-o", dir, "--ranks", "1", "--layers", "2", "--force", "--no-gzip"); code != 0 {
		t.Errorf("--force: exit %d: %s", code, errs)
	}
}

func TestRunSynthBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target-size", "1MB", "--decode-steps", "3"}, "exclusive"},
		{[]string{"--ranks", "0"}, "ranks"},
		{[]string{"--allreduce-share", "1.5"}, "allreduce share"},
		{[]string{"--target-size", "lots"}, "bad size"},
		{[]string{"--model", "llama"}, "unknown model"},
		{[]string{"stray"}, "unexpected"},
		{[]string{"--no-such-flag"}, "not defined"},
	} {
		args := append([]string{"synth", "-o", filepath.Join(t.TempDir(), "x")}, tc.args...)
		code, _, errs := runCmd(args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, errs, tc.want)
		}
	}
}
