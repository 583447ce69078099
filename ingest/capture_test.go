package ingest

import (
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/sampletraces"
)

// TestWithCaptures: a capture trace given apart (--capture) is read as
// one, beside the replay trace; given again when the directory walk found
// it already, it is read once; a path that is not there is an error that
// names it.
func TestWithCaptures(t *testing.T) {
	replay, err := sampletraces.RealDir("graph_capture")
	if err != nil {
		t.Fatal(err)
	}
	traces, _ := filepath.Glob(filepath.Join(replay, "*.pt.trace.json.gz"))
	captures, _ := filepath.Glob(filepath.Join(replay, "capture_traces", "*.pt.trace.json.gz"))
	if len(traces) != 1 || len(captures) != 1 {
		t.Fatalf("sample: traces %v, captures %v", traces, captures)
	}
	cases := []struct {
		name string
		in   Input
	}{
		{"file and --capture", FromPath(traces[0]).WithCaptures(captures)},
		{"directory holding it, and --capture", FromPath(replay).WithCaptures(captures)},
		{"directory alone", FromPath(replay)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, err := OpenInput(c.in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Traces) != 1 || len(set.Captures) != 1 || len(set.Errors) != 0 || !set.Captures[0].Capture {
				t.Fatalf("%d traces, %d captures, errors %v", len(set.Traces), len(set.Captures), set.Errors)
			}
			if g := set.Captures[0].CapturedGraphs(); len(g) != 1 || len(g[0].Launches) == 0 {
				t.Errorf("captured graphs: %+v", g)
			}
		})
	}
	missing := filepath.Join(replay, "no-such-capture.json")
	if _, err := OpenInput(FromPath(traces[0]).WithCaptures([]string{missing}), Options{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing capture: %v", err)
	}
}
