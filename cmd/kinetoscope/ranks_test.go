package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
)

// rankCopies copies rank 0 of the real eager sample into a and b below a
// directory of its own, under one name that says no rank: two files whose
// distributedInfo claims rank 0.
func rankCopies(t *testing.T) (dir string, copies [2]string) {
	t.Helper()
	f, err := filepath.Glob(filepath.Join(testkit.Real(t, "eager"), "*_rank0.*.pt.trace.json.gz"))
	if err != nil || len(f) != 1 {
		t.Fatalf("eager rank 0: %v %v", f, err)
	}
	b, err := os.ReadFile(f[0])
	testkit.Must(t, err)
	dir = t.TempDir()
	for i, sub := range []string{"a", "b"} {
		testkit.Must(t, os.Mkdir(filepath.Join(dir, sub), 0o755))
		copies[i] = filepath.Join(dir, sub, "copy.pt.trace.json.gz")
		testkit.Must(t, os.WriteFile(copies[i], b, 0o644))
	}
	return dir, copies
}

// TestRunRankAssigned: one rank's file copied twice is a duplicate rank
// (exit 2) whose error names --rank FILE=N; --rank FILE=N, by the end of
// the path or by all of it, says which rank the copy is, for analyze,
// chart and diff; a FILE that names no trace, or two, or a file named
// twice, is an error naming it.
func TestRunRankAssigned(t *testing.T) {
	dir, copies := rankCopies(t)
	code, _, errs := runCmd("analyze", dir)
	if code != 2 || !strings.Contains(errs, "duplicate rank 0") || !strings.Contains(errs, "--rank FILE=N") {
		t.Fatalf("copies unassigned: exit %d, stderr %q; want 2 and the --rank FILE=N hint", code, errs)
	}
	for _, key := range []string{filepath.Join("b", "copy.pt.trace.json.gz"), copies[1]} {
		code, out, errs := runCmd("analyze", dir, "--rank", key+"=1", "--format", "json")
		if code != 0 {
			t.Fatalf("--rank %s=1: exit %d: %s", key, code, errs)
		}
		var r struct {
			Ranks []struct {
				Rank  int    `json:"rank"`
				File  string `json:"file"`
				Steps []json.RawMessage
			} `json:"ranks"`
		}
		testkit.Must(t, json.Unmarshal([]byte(out), &r))
		if len(r.Ranks) != 2 || r.Ranks[0].Rank != 0 || r.Ranks[0].File != copies[0] ||
			r.Ranks[1].Rank != 1 || r.Ranks[1].File != copies[1] || len(r.Ranks[0].Steps) != len(r.Ranks[1].Steps) {
			t.Errorf("--rank %s=1: ranks %+v; want rank 0 %s, rank 1 %s, the same steps", key, r.Ranks, copies[0], copies[1])
		}
	}
	svg := filepath.Join(t.TempDir(), "s.svg")
	if code, _, errs := runCmd("chart", dir, "--kind", "steps", "--rank", "b/copy.pt.trace.json.gz=1", "--rank", "1", "-o", svg); code != 0 {
		t.Errorf("chart with --rank FILE=N: exit %d: %s", code, errs)
	}
	eager := testkit.Real(t, "eager")
	if code, _, errs := runCmd("diff", dir, eager, "--rank", copies[1]+"=1"); code != 0 {
		t.Errorf("diff, FILE under BASE: exit %d: %s", code, errs)
	}
	for _, tt := range []struct {
		args []string
		code int // 2 for input that cannot be one run, 1 for a bad flag value (the CLI's way)
		want string
	}{
		{[]string{"analyze", dir, "--rank", "b/copy.pt.trace.json.gz=1", "--rank", "nosuch.json=2"}, 2, "rank given for nosuch.json, which is no trace file of the run"},
		{[]string{"analyze", dir, "--rank", "copy.pt.trace.json.gz=1"}, 2, "names 2 trace files (" + copies[0] + ", " + copies[1] + "): give more of the path"},
		{[]string{"analyze", dir, "--rank", "py.pt.trace.json.gz=1"}, 2, "no trace file"},
		{[]string{"analyze", dir, "--rank", "b/copy.pt.trace.json.gz=1", "--rank", copies[1] + "=1"}, 2, "rank given twice for " + copies[1]},
		{[]string{"analyze", dir, "--rank", "b/copy.pt.trace.json.gz=x"}, 1, "want FILE=N"},
		{[]string{"analyze", dir, "--rank", "b/copy.pt.trace.json.gz=1", "--rank", "b/copy.pt.trace.json.gz=0"}, 1, "already given rank 1"},
		{[]string{"diff", dir, eager, "--rank", "b/copy.pt.trace.json.gz=1"}, 2, "rank given for b/copy.pt.trace.json.gz, which is no trace file of the run"},
		{[]string{"diff", "a.json", "b.json", "--reports", "--rank", "b/copy.pt.trace.json.gz=1"}, 1, "with --reports there are no trace files"},
	} {
		code, _, errs := runCmd(tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errs, tt.code, tt.want)
		}
	}
}
