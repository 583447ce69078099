package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"kinetoscope/internal/testkit"
)

func TestRankAssignmentsResolve(t *testing.T) {
	paths := []string{"run/x_rank0.json.gz", "run.zip!prof/y.json.gz", "y.json.gz", "a/z.json.gz", "b/z.json.gz"}
	for _, tt := range []struct {
		file string
		want []int // the ranks of paths, or nil for an error
	}{
		{"run/x_rank0.json.gz", []int{1, -1, -1, -1, -1}},
		{"x_rank0.json.gz", []int{1, -1, -1, -1, -1}},
		{"run.zip!prof/y.json.gz", []int{-1, 1, -1, -1, -1}},
		{"prof/y.json.gz", []int{-1, 1, -1, -1, -1}},
		{"y.json.gz", []int{-1, -1, 1, -1, -1}}, // the path equal to it, not the one that ends with it
		{"b/z.json.gz", []int{-1, -1, -1, -1, 1}},
		{"z.json.gz", nil},     // two paths end with it
		{"rank0.json.gz", nil}, // not at a separator
		{"x_rank0.json", nil},  // no path ends with it
		{"longer/run/x_rank0.json.gz", nil},
	} {
		got, err := RankAssignments{tt.file: 1}.Resolve(paths)
		var bad *RankAssignmentError
		switch {
		case tt.want == nil && !errors.As(err, &bad):
			t.Errorf("%q: ranks %v, err %v; want a RankAssignmentError", tt.file, got, err)
		case tt.want != nil && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("%q: ranks %v, err %v; want %v", tt.file, got, err, tt.want)
		}
	}
	if _, err := (RankAssignments{"x_rank0.json.gz": 1, "run/x_rank0.json.gz": 2}).Resolve(paths); err == nil {
		t.Error("two files naming one path: no error")
	}
}

// A rank assigned to a real trace whose name says another rank than its
// distributedInfo: the trace takes it, and the warning that the two
// disagree is withdrawn.
func TestRankAssignedOverridesBoth(t *testing.T) {
	src, err := filepath.Glob(filepath.Join(testkit.Real(t, "eager"), "*_rank0.*.pt.trace.json.gz"))
	if err != nil || len(src) != 1 {
		t.Fatalf("eager rank 0: %v %v", src, err)
	}
	b, err := os.ReadFile(src[0])
	testkit.Must(t, err)
	path := filepath.Join(t.TempDir(), "c_rank1.pt.trace.json.gz")
	testkit.Must(t, os.WriteFile(path, b, 0o644))
	warn := nameRankWarning(1, 0)
	for _, tt := range []struct {
		ranks  RankAssignments
		rank   int
		source string
		warned bool
	}{
		{nil, 0, "distributedInfo", true},
		{RankAssignments{"c_rank1.pt.trace.json.gz": 1}, 1, "assigned", false},
		{RankAssignments{path: 3}, 3, "assigned", false},
	} {
		set, err := Open(path, Options{Ranks: tt.ranks})
		testkit.Must(t, err)
		if len(set.Traces) != 1 || len(set.Errors) != 0 {
			t.Fatalf("%v: %d traces, errors %v", tt.ranks, len(set.Traces), set.Errors)
		}
		tr := set.Traces[0]
		if tr.Rank != tt.rank || tr.RankSource != tt.source || slices.Contains(tr.Warnings, warn) != tt.warned {
			t.Errorf("%v: rank %d from %s, warnings %q; want %d from %s, warned %v", tt.ranks, tr.Rank, tr.RankSource, tr.Warnings, tt.rank, tt.source, tt.warned)
		}
	}
}
