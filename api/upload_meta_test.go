package api_test

import (
	"bytes"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"testing"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// A raw-body upload keeps the name its Content-Disposition gives, and a
// refused content type (415) counts as a rejected upload in /metrics.
func TestUploadNameAndRejects(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	gz, err := os.ReadFile(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	must(t, err)
	req, err := http.NewRequest("POST", s.URL+"/api/v1/runs", bytes.NewReader(gz))
	must(t, err)
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Content-Disposition", `attachment; filename="rank0.pt.trace.json.gz"`)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	var list struct {
		Runs []struct {
			Files []struct {
				Name string `json:"name"`
			} `json:"files"`
		} `json:"runs"`
	}
	getJSON(t, s.URL+"/api/v1/runs", &list)
	if len(list.Runs) != 1 || len(list.Runs[0].Files) != 1 || list.Runs[0].Files[0].Name != "rank0.pt.trace.json.gz" {
		t.Errorf("stored files: %+v, want rank0.pt.trace.json.gz", list.Runs)
	}
	before := rejected(t, s.URL)
	if code, _ := do(t, "POST", s.URL+"/api/v1/runs", "text/html", bytes.NewReader(gz)); code != http.StatusUnsupportedMediaType {
		t.Fatalf("text/html upload: %d, want 415", code)
	}
	if after := rejected(t, s.URL); after != before+1 {
		t.Errorf("kinetoscope_uploads_rejected_total %d -> %d after a 415, want +1", before, after)
	}
}

var reRejected = regexp.MustCompile(`(?m)^kinetoscope_uploads_rejected_total (\d+)$`)

// rejected reads kinetoscope_uploads_rejected_total from /metrics.
func rejected(t *testing.T, base string) int {
	t.Helper()
	_, body := do(t, "GET", base+"/metrics", "", nil)
	m := reRejected.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no kinetoscope_uploads_rejected_total in /metrics:\n%s", body)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
