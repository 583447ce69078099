package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// One rank file of a two-rank run: the run page, the headline's scope and
// the report JSON say that rank 1 has no trace; with both files none does.
func TestRunPageMissingRanks(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	files, _ := filepath.Glob(filepath.Join(testkit.Real(t, "nccl_simple"), "*.pt.trace.json.gz"))
	slices.Sort(files)
	ctBoth, both := multipartBody(t, "both", "", files...)
	code, body := do(t, "POST", s.URL+"/api/v1/runs", ctBoth, both)
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, body)
	}
	var all created
	testkit.Must(t, json.Unmarshal(body, &all))
	one := uploadFile(t, s.URL, files[0], "")
	tests := []struct {
		id      string
		missing []int
		texts   []string // on the page
	}{
		{one.ID, []int{1}, []string{`id="missing-ranks"`, "No trace for rank 1 of this run of 2 ranks: every figure is of rank 0 alone",
			"(1 rank of 2: no trace for rank 1; 32 decode steps)"}},
		{all.ID, nil, []string{"(2 ranks, 32 decode steps)"}},
	}
	for _, tc := range tests {
		waitRun(t, s.URL, tc.id)
		var r struct {
			MissingRanks []int `json:"missing_ranks"`
		}
		getJSON(t, s.URL+"/api/v1/runs/"+tc.id+"/report", &r)
		if !slices.Equal(r.MissingRanks, tc.missing) {
			t.Errorf("report JSON: missing_ranks %v, want %v", r.MissingRanks, tc.missing)
		}
		_, page := do(t, "GET", s.URL+"/runs/"+tc.id, "", nil)
		for _, text := range tc.texts {
			if !bytes.Contains(page, []byte(text)) {
				t.Errorf("run page of %d missing ranks does not say %q", len(tc.missing), text)
			}
		}
		if len(tc.missing) == 0 && bytes.Contains(page, []byte("missing-ranks")) {
			t.Errorf("run page of every rank says ranks are missing")
		}
	}
}
