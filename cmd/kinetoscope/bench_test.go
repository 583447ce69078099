package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/internal/bench"
	"kinetoscope/internal/testkit"
)

func TestBenchJSON(t *testing.T) {
	path := testkit.Public(t, "tracelens-vllm-prefilldecode-piecewise.json.gz")
	_, pyErr := exec.LookPath("python3")
	args := []string{"bench", path, "--runs", "2", "--json"}
	code, out, errs := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.UncompressedBytes != 4524969 || r.Bytes != 354139 || r.Events != 19289 || r.PythonFunctions != 17038 {
		t.Errorf("sizes and counts: %+v", r)
	}
	if r.Gunzip.Seconds <= 0 || r.Ingest.Seconds <= 0 || r.Ingest.PeakRSS <= 0 || r.Ingest.EventsSec <= 0 {
		t.Errorf("phases: %+v %+v", r.Gunzip, r.Ingest)
	}
	if got := r.Gunzip.Seconds / r.Ingest.Seconds; got != r.SpeedVsGunzip {
		t.Errorf("speed ratio %v, want %v", r.SpeedVsGunzip, got)
	}
	if got := r.Gunzip.CPU / r.Ingest.CPU; r.Ingest.CPU <= 0 || got != r.CPUVsGunzip {
		t.Errorf("CPU ratio %v, want %v", r.CPUVsGunzip, got)
	}
	if r.KeptEvents == 0 || r.BytesPerKept <= 0 {
		t.Errorf("kept %d, bytes per kept %v", r.KeptEvents, r.BytesPerKept)
	}
	if pyErr == nil {
		if r.Python == nil || r.Python.Error != "" || r.Python.Seconds <= 0 || r.Python.PeakRSS <= 0 || r.SpeedupVsPython <= 0 {
			t.Errorf("python baseline: %+v", r.Python)
		}
	}
}

func TestBenchText(t *testing.T) {
	path := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	code, out, errs := runCmd("bench", "--runs", "1", "--no-python", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"gunzip (ceiling)", "kinetoscope ingest", "ingest speed:", "x gunzip (wall)", "x by CPU seconds",
		"bytes per kept event", "1,993 events (984 python_function)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "python json.load") {
		t.Errorf("--no-python still ran python:\n%s", out)
	}
}

func TestBenchArgs(t *testing.T) {
	for _, args := range [][]string{{"bench"}, {"bench", "a", "b"}, {"bench", "--runs", "0", "x"}} {
		if code, _, _ := runCmd(args...); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
	if code, _, errs := runCmd("bench", "/nonexistent.json.gz", "--no-python"); code != 1 || !strings.Contains(errs, "nonexistent") {
		t.Errorf("missing file: exit %d %q", code, errs)
	}
}

// TestBenchProcs runs a built binary (--procs runs the binary itself,
// which in a test would be the test binary).
func TestBenchProcs(t *testing.T) {
	path := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	bin := filepath.Join(t.TempDir(), "kinetoscope")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	out, err := exec.Command(bin, "bench", path, "--runs", "1", "--no-python", "--procs", "--analyze", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if p := r.Procs; p == nil || p.Ingest == nil || p.Analyze == nil || len(p.Gunzip.Seconds) != 1 || p.Ingest.Median <= 0 ||
		p.Ingest.VsGunzip <= 0 || p.Analyze.PeakRSS <= 0 {
		t.Errorf("whole-process runs: %+v", r.Procs)
	}
	out, err = exec.Command(bin, "bench", path, "--runs", "1", "--no-python", "--procs", "--analyze", "--parallel", "--gzip-workers", "2", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	r = bench.Result{}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	p := r.Procs
	if p == nil || r.Parallel == nil {
		t.Fatalf("--parallel: %s", out)
	}
	for name, ph := range map[string]*bench.ProcessMeasurement{"parallel gunzip": p.PGunzip, "ingest klauspost": p.IngestSeq,
		"analyze klauspost": p.AnalyzeSeq, "analyze parallel": p.AnalyzePar} {
		if ph == nil || ph.Median <= 0 || ph.VsGunzip <= 0 {
			t.Errorf("--parallel whole-process %s: %+v", name, ph)
		}
	}
}
