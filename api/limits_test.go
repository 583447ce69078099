package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// A run whose analysis would pass --max-analysis-memory fails with a
// message naming the limit and the counts it reached, while a budget of
// its estimate analyses it; the server goes on analysing.
func TestAnalysisMemoryBudget(t *testing.T) {
	const n = 60000
	text := testkit.DistinctKernels(n)
	need := ingest.Estimate(n, n+8, 1) // the names, and a few other strings
	for _, tc := range []struct {
		limit int64
		fails bool
	}{
		{need / 4, true},
		{2 * need, false},
	} {
		s := startServer(t, api.Config{DataDir: t.TempDir(), MaxAnalysisMemory: tc.limit})
		code, body := do(t, "POST", s.URL+"/api/v1/runs?filename=probe.json", "application/json", bytes.NewReader(text))
		if code != http.StatusAccepted {
			t.Fatalf("upload: %d %s", code, body)
		}
		var c created
		testkit.Must(t, json.Unmarshal(body, &c))
		run := waitRun(t, s.URL, c.ID)
		if tc.fails != (run.Status == store.StatusFailed) {
			t.Fatalf("limit %d (need %d): run %s: %s", tc.limit, need, run.Status, run.Error)
		}
		if !tc.fails {
			continue
		}
		limit := fmt.Sprintf("%.1f MiB", float64(tc.limit)/(1<<20))
		for _, want := range []string{"memory budget of " + limit, "--max-analysis-memory", "events kept", "distinct names"} {
			if !strings.Contains(run.Error, want) {
				t.Errorf("limit %d: error %q lacks %q", tc.limit, run.Error, want)
			}
		}
	}
}

// The default budget is half the machine's memory shared by the workers.
func TestDefaultAnalysisMemory(t *testing.T) {
	one, two := api.DefaultAnalysisMemory(1), api.DefaultAnalysisMemory(2)
	if one <= 0 || two != one/2 || api.DefaultAnalysisMemory(0) != one {
		t.Errorf("DefaultAnalysisMemory: 1 worker %d, 2 workers %d, 0 workers %d", one, two, api.DefaultAnalysisMemory(0))
	}
}
