package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// A raw-body upload keeps the name its Content-Disposition gives, and a
// refused content type (415) counts as a rejected upload in /metrics.
func TestUploadNameAndRejects(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	gz, err := os.ReadFile(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	testkit.Must(t, err)
	req, err := http.NewRequest("POST", s.URL+"/api/v1/runs", bytes.NewReader(gz))
	testkit.Must(t, err)
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Content-Disposition", `attachment; filename="rank0.pt.trace.json.gz"`)
	resp, err := http.DefaultClient.Do(req)
	testkit.Must(t, err)
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

// The report comes in every report format; the run list filters by status
// and name; a parameter an endpoint does not take answers 400 naming it.
func TestReportFormatsAndListFilters(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	gz, err := os.ReadFile(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	testkit.Must(t, err)
	code, body := do(t, "POST", s.URL+"/api/v1/runs?name=full-graph", "application/gzip", bytes.NewReader(gz))
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, body)
	}
	var created struct {
		ID string `json:"id"`
	}
	testkit.Must(t, json.Unmarshal(body, &created))
	waitRun(t, s.URL, created.ID)
	for _, tc := range []struct {
		query, ctype, want string
		code               int
	}{
		{"", "application/json", `"ranks"`, 200},
		{"?format=csv", "text/csv; charset=utf-8", "rank,file,step,step_name,phase", 200},
		{"?format=csv-summary", "text/csv; charset=utf-8", "rank,file,phase,steps,bucket", 200},
		{"?format=csv-bandwidth", "text/csv; charset=utf-8", "phase,bucket,collective,dtype", 200},
		{"?format=markdown", "text/markdown; charset=utf-8", "# Kinetoscope report", 200},
		{"?format=table", "text/plain; charset=utf-8", "Decode step", 200},
		{"?format=xml", "", `bad format \"xml\"`, 400},
		{"?fmt=csv", "", `unknown query parameter \"fmt\"`, 400},
	} {
		resp, err := http.Get(s.URL + "/api/v1/runs/" + created.ID + "/report" + tc.query)
		testkit.Must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || (tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype) || !strings.Contains(string(b), tc.want) {
			t.Errorf("report%s: %d %q %.80q, want %d %q containing %q", tc.query, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.code, tc.ctype, tc.want)
		}
	}
	for _, tc := range []struct {
		query string
		runs  int
		code  int
	}{
		{"?status=done", 1, 200},
		{"?status=failed", 0, 200},
		{"?name=graph", 1, 200},
		{"?name=eager", 0, 200},
		{"?status=finished", 0, 400},
		{"?sort=name", 0, 400},
	} {
		code, body := do(t, "GET", s.URL+"/api/v1/runs"+tc.query, "", nil)
		var list struct {
			Runs []json.RawMessage `json:"runs"`
		}
		if code == 200 {
			testkit.Must(t, json.Unmarshal(body, &list))
		}
		if code != tc.code || len(list.Runs) != tc.runs {
			t.Errorf("runs%s: %d with %d runs, want %d with %d (%s)", tc.query, code, len(list.Runs), tc.code, tc.runs, body)
		}
	}
}

// Each rank's trace downloads on its own (for Perfetto, which opens one
// trace, not a tar): the file the report names for the rank, byte for
// byte, from a run of rank files and from a run uploaded as an archive.
func TestRankTraceDownload(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	eager, files := realRun(t, s.URL, "eager")
	want := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		testkit.Must(t, err)
		want[filepath.Base(f)] = b
	}
	for _, kind := range []string{"tar.gz", "zip"} {
		code, body := do(t, "POST", s.URL+"/api/v1/runs?name=archive-"+kind, archiveType(kind), bytes.NewReader(profileArchive(t, kind)))
		if code != http.StatusAccepted {
			t.Fatalf("%s upload: %d %s", kind, code, body)
		}
		var c created
		testkit.Must(t, json.Unmarshal(body, &c))
		waitRun(t, s.URL, c.ID)
		for _, name := range []string{traceRank0, traceRank1} {
			b, err := os.ReadFile(testkit.Public(t, name))
			testkit.Must(t, err)
			want[name] = b
		}
		checkRankTraces(t, s.URL, c.ID, want)
		missing := c.Run.Files[0].Name + "!nope.json"
		if code, _ := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/trace?file="+url.QueryEscape(missing), "", nil); code != http.StatusNotFound {
			t.Errorf("%s: no such member: %d, want 404", missing, code)
		}
	}
	checkRankTraces(t, s.URL, eager, want)
	if code, _ := do(t, "GET", s.URL+"/api/v1/runs/"+eager+"/trace?file=nope.json.gz", "", nil); code != http.StatusNotFound {
		t.Errorf("unknown file: %d, want 404", code)
	}
}

// checkRankTraces downloads the trace of every rank of run id, as its
// report names the rank's file, and compares it with want by base name.
func checkRankTraces(t *testing.T, base, id string, want map[string][]byte) {
	t.Helper()
	var rep analyze.Report
	getJSON(t, base+"/api/v1/runs/"+id+"/report", &rep)
	for _, rk := range rep.Ranks {
		code, got := do(t, "GET", base+"/api/v1/runs/"+id+"/trace?file="+url.QueryEscape(rk.File), "", nil)
		if w := want[path.Base(strings.ReplaceAll(rk.File, "!", "/"))]; code != http.StatusOK || !bytes.Equal(got, w) {
			t.Errorf("run %s rank %d (%s): %d, %d bytes; want the %d bytes of the file", id, rk.Rank, rk.File, code, len(got), len(w))
		}
	}
}

func archiveType(kind string) string {
	if kind == "zip" {
		return "application/zip"
	}
	return "application/gzip"
}

// The run page says mixed where the steps are mixed, and lists why the
// collectives could not be aligned when they could not.
func TestRunPageMixedAndMismatches(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	upload := func(body []byte, ctype, name string) string {
		code, resp := do(t, "POST", s.URL+"/api/v1/runs?name="+name, ctype, bytes.NewReader(body))
		if code != http.StatusAccepted {
			t.Fatalf("upload %s: %d %s", name, code, resp)
		}
		var c created
		testkit.Must(t, json.Unmarshal(resp, &c))
		waitRun(t, s.URL, c.ID)
		return c.ID
	}
	gz, err := os.ReadFile(testkit.Public(t, "tracelens-vllm-prefilldecode-piecewise.json.gz"))
	testkit.Must(t, err)
	mixed := upload(gz, "application/gzip", "piecewise")
	if _, page := do(t, "GET", s.URL+"/runs/"+mixed, "", nil); !bytes.Contains(page, []byte("0 / 0 / 1 mixed")) || !bytes.Contains(page, []byte("Mixed step")) {
		t.Errorf("mixed run page does not say mixed")
	}
	sampled := upload(profileArchive(t, "tar.gz"), "application/gzip", "sampled")
	_, page := do(t, "GET", s.URL+"/runs/"+sampled, "", nil)
	if !bytes.Contains(page, []byte(`id="mismatches"`)) || !bytes.Contains(page, []byte("no trace for member rank(s) 2-127")) {
		t.Errorf("unaligned run page does not list why:\n%s", page)
	}
}
