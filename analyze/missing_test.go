package analyze

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// distributedInfo reads a trace's rank and world size with encoding/json.
func distributedInfo(t *testing.T, path string) (rank, world int) {
	t.Helper()
	var doc struct {
		DistributedInfo struct {
			Rank      int `json:"rank"`
			WorldSize int `json:"world_size"`
		} `json:"distributedInfo"`
	}
	if err := json.Unmarshal(testkit.Gunzip(t, path), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.DistributedInfo.Rank, doc.DistributedInfo.WorldSize
}

// The report lists the ranks of the run that have no trace: those of the
// world size the traces declare that no file given is of.
func TestMissingRanks(t *testing.T) {
	real := func(variant string) []string {
		dir := testkit.Real(t, variant)
		files, _ := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
		slices.Sort(files)
		return files
	}
	tests := []struct {
		name  string
		files []string
	}{
		{"one rank of TP2 (nccl_simple)", real("nccl_simple")[:1]},
		{"the other rank of TP2 (eager)", real("eager")[1:]},
		{"both ranks of TP2", real("nccl_simple")},
		{"rank 3 of 8", []string{testkit.Public(t, "hta-diff-control-a100.json.gz")}},
		{"2 of 128", []string{testkit.Public(t, "hta-sampled-rank-0.json.gz"), testkit.Public(t, "hta-sampled-rank-1.json.gz")}},
		{"a single-GPU run", real("moe")[:1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have := map[int]bool{}
			world := 0
			for _, f := range tc.files {
				rank, ws := distributedInfo(t, f)
				have[rank], world = true, max(world, ws)
			}
			var want []int
			for r := range world {
				if !have[r] {
					want = append(want, r)
				}
			}
			set, err := ingest.OpenInput(ingest.FromPaths(tc.files), ingest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r, err := Analyze(set, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.MissingRanks, want) {
				t.Errorf("missing ranks %v, want %v (world size %d)", r.MissingRanks, want, world)
			}
		})
	}
}
