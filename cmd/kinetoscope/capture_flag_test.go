package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
)

// TestAnalyzeCaptureFlag: --capture gives the replay trace's graph
// kernels their shapes (every decode GEMM and attention kernel counted as
// from the capture in the JSON report), without it they have none; a
// capture path that is not there is an error naming it, and --capture on
// a diff chart is refused.
func TestAnalyzeCaptureFlag(t *testing.T) {
	dir := testkit.Real(t, "graph_capture")
	replay, _ := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	capture, _ := filepath.Glob(filepath.Join(dir, "capture_traces", "*.pt.trace.json.gz"))
	if len(replay) != 1 || len(capture) != 1 {
		t.Fatalf("sample: %v %v", replay, capture)
	}
	captured := func(args ...string) (int, int) {
		t.Helper()
		code, out, errs := runCmd(append([]string{"analyze", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var r struct {
			Roofline struct {
				Rows []struct {
					Kernels         int `json:"kernels"`
					CapturedKernels int `json:"captured_kernels"`
				} `json:"rows"`
			} `json:"roofline"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		k, c := 0, 0
		for _, row := range r.Roofline.Rows {
			k, c = k+row.Kernels, c+row.CapturedKernels
		}
		return k, c
	}
	if k, c := captured(replay[0], "--capture", capture[0]); k == 0 || c != k {
		t.Errorf("with --capture: %d of %d kernels from the capture", c, k)
	}
	if k, c := captured(replay[0]); k == 0 || c != 0 {
		t.Errorf("without: %d of %d kernels from the capture", c, k)
	}
	missing := filepath.Join(t.TempDir(), "capture.json")
	if code, _, errs := runCmd("analyze", replay[0], "--capture", missing); code == 0 || !strings.Contains(errs, missing) {
		t.Errorf("missing capture: exit %d, %q", code, errs)
	}
	if code, _, errs := runCmd("chart", "--kind", "diff", replay[0], replay[0], "--capture", capture[0]); code == 0 || !strings.Contains(errs, "--capture is for a run's chart") {
		t.Errorf("diff chart with --capture: exit %d, %q", code, errs)
	}
}
