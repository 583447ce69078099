package ingest

import "testing"

func TestRankAssignmentNames(t *testing.T) {
	for _, tt := range []struct {
		file, path string
		want       bool
	}{
		{"run/x_rank0.json.gz", "run/x_rank0.json.gz", true},
		{"x_rank0.json.gz", "run/x_rank0.json.gz", true},
		{"x_rank0.json.gz", "run.zip!prof/x_rank0.json.gz", true},
		{"prof/x_rank0.json.gz", "run.zip!prof/x_rank0.json.gz", true},
		{"run.zip!prof/x_rank0.json.gz", "run.zip!prof/x_rank0.json.gz", true},
		{"rank0.json.gz", "run/x_rank0.json.gz", false}, // not at a separator
		{"run/x_rank0.json", "run/x_rank0.json.gz", false},
		{"longer/run/x_rank0.json.gz", "run/x_rank0.json.gz", false},
	} {
		if got := names(tt.file, tt.path); got != tt.want {
			t.Errorf("names(%q, %q) = %v, want %v", tt.file, tt.path, got, tt.want)
		}
	}
}
