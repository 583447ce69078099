package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
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
	var r benchResult
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

func TestPeakRSS(t *testing.T) {
	resetPeakRSS()
	before := peakRSS()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1
	}
	after := peakRSS()
	if before <= 0 || after-before < 60<<20 {
		t.Errorf("peak RSS %d before, %d after touching 64 MiB", before, after)
	}
}

// TestBuildTrace builds traces of a real one repeated three times in both
// layouts and checks that each holds three times its events, with the
// copies' launches and kernels still joined by distinct correlation ids,
// and that both layouts read the same.
func TestBuildTrace(t *testing.T) {
	src := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	one, err := ingest.ReadFile(src, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var reads []*ingest.Trace
	for _, layout := range []string{layoutKineto, layoutCompact} {
		out := filepath.Join(t.TempDir(), layout+".json.gz")
		if err := buildTrace(src, out, layout, 3); err != nil {
			t.Fatal(err)
		}
		tr, err := ingest.ReadFile(out, ingest.Options{})
		if err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		if tr.Counts.Events != 3*one.Counts.Events || tr.GPU.Len() != 3*one.GPU.Len() || tr.Launches.Len() != 3*one.Launches.Len() {
			t.Errorf("%s: %d events, %d GPU, %d launches; want 3 x %d, %d, %d", layout, tr.Counts.Events, tr.GPU.Len(),
				tr.Launches.Len(), one.Counts.Events, one.GPU.Len(), one.Launches.Len())
		}
		corr := map[int64]bool{}
		for _, l := range tr.Launches.All() {
			corr[l.Correlation] = true
		}
		if len(corr) < 3*one.Launches.Len()*9/10 {
			t.Errorf("%s: %d distinct correlation ids among %d launches: the copies collide", layout, len(corr), tr.Launches.Len())
		}
		last := tr.GPU.At(tr.GPU.Len() - 1)
		if first := tr.GPU.At(0); last.Start-first.Start < 2*(one.GPU.At(one.GPU.Len()-1).Start-one.GPU.At(0).Start) {
			t.Errorf("%s: the copies' timestamps are not shifted past each other", layout)
		}
		reads = append(reads, tr)
	}
	if a, b := reads[0], reads[1]; a.Counts.Events != b.Counts.Events || a.GPU.Len() != b.GPU.Len() || *a.GPU.At(7) != *b.GPU.At(7) {
		t.Errorf("the Kineto and compact layouts read differently")
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
	var r benchResult
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
	r = benchResult{}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	p := r.Procs
	if p == nil || r.Parallel == nil {
		t.Fatalf("--parallel: %s", out)
	}
	for name, ph := range map[string]*procPhase{"parallel gunzip": p.PGunzip, "ingest klauspost": p.IngestSeq,
		"analyze klauspost": p.AnalyzeSeq, "analyze parallel": p.AnalyzePar} {
		if ph == nil || ph.Median <= 0 || ph.VsGunzip <= 0 {
			t.Errorf("--parallel whole-process %s: %+v", name, ph)
		}
	}
}

// TestBenchDirectory checks the phases on a profile directory: gunzip and
// ingest cover every trace file in it, analyze runs the whole pipeline.
func TestBenchDirectory(t *testing.T) {
	dir := t.TempDir()
	var one benchResult // the sums over the files one by one
	for _, name := range []string{"hta-sampled-rank-0.json.gz", "hta-sampled-rank-1.json.gz"} {
		src := testkit.Public(t, name)
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var r benchResult
		if err := gunzipAll(src, &r); err != nil {
			t.Fatal(err)
		}
		if err := ingestOnce(src, &r); err != nil {
			t.Fatal(err)
		}
		one.UncompressedBytes += r.UncompressedBytes
		one.Bytes += r.Bytes
		one.Events += r.Events
	}
	var all benchResult
	if err := gunzipAll(dir, &all); err != nil {
		t.Fatal(err)
	}
	if err := ingestOnce(dir, &all); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		what      string
		got, want int64
	}{
		{"uncompressed bytes", all.UncompressedBytes, one.UncompressedBytes},
		{"compressed bytes", all.Bytes, one.Bytes},
		{"events", all.Events, one.Events},
	}
	for _, tc := range tests {
		if tc.got != tc.want || tc.want == 0 {
			t.Errorf("%s of the directory: %d, want %d", tc.what, tc.got, tc.want)
		}
	}
	for _, phase := range []string{"analyze", "ingest", "gunzip"} {
		if err := runPhase(phase, dir, "", 2); err != nil {
			t.Errorf("--phase %s on a directory: %v", phase, err)
		}
	}
	if err := runPhase("nope", dir, "", 2); err == nil {
		t.Error("--phase nope: no error")
	}
}
