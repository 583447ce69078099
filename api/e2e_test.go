package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

const (
	traceH100  = "tracelens-h100-qwen1.5-0.5b.json.gz"
	traceMI300 = "tracelens-mi300-qwen1.5-0.5b.json.gz"
	traceRank0 = "hta-sampled-rank-0.json.gz"
	traceRank1 = "hta-sampled-rank-1.json.gz"
)

// directReport analyses a file with the pipeline directly, without the
// server, as the reference for the server's answer.
func directReport(t testing.TB, path string) *analyze.Report {
	t.Helper()
	run, err := driver.Analyze(ingest.FromPath(path), driver.Options{Options: ingest.Options{MaxUncompressedBytes: 256 << 20}})
	if err != nil {
		t.Fatalf("direct analysis of %s: %v", path, err)
	}
	return run.Report
}

// sameAnalysis checks that two reports agree on the figures (the source
// and file names differ: the server names them after the upload).
func sameAnalysis(t testing.TB, got, want *analyze.Report) {
	t.Helper()
	if len(got.Ranks) != len(want.Ranks) {
		t.Fatalf("ranks: got %d, want %d", len(got.Ranks), len(want.Ranks))
	}
	if !reflect.DeepEqual(got.Headline, want.Headline) {
		t.Errorf("headline: got %+v, want %+v", got.Headline, want.Headline)
	}
	for i := range got.Ranks {
		g, w := got.Ranks[i], want.Ranks[i]
		if g.Rank != w.Rank || len(g.Steps) != len(w.Steps) || !reflect.DeepEqual(g.Decode, w.Decode) {
			t.Errorf("rank %d: server and direct analysis differ", w.Rank)
		}
	}
}

// multipartBody builds a multipart upload of files with name and labels.
func multipartBody(t testing.TB, name, labels string, files ...string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	testkit.Must(t, mw.WriteField("name", name))
	testkit.Must(t, mw.WriteField("labels", labels))
	for _, p := range files {
		w, err := mw.CreateFormFile("file", filepath.Base(p))
		testkit.Must(t, err)
		b, err := os.ReadFile(p)
		testkit.Must(t, err)
		w.Write(b)
	}
	testkit.Must(t, mw.Close())
	return mw.FormDataContentType(), &buf
}

func TestEndToEnd(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	h100, mi300 := testkit.Public(t, traceH100), testkit.Public(t, traceMI300)

	// Upload: a raw gzip body, and a multipart of two ranks of one job.
	a := uploadFile(t, s.URL, h100, "&name=h100&label=gpu=h100,model=qwen")
	b := uploadFile(t, s.URL, mi300, "&name=mi300&label=gpu=mi300&label=model=qwen")
	m := uploadTwoRanks(t, s.URL)

	// Poll until analysed; the reports match a direct analysis.
	for _, c := range []struct {
		id   string
		file string
	}{{a.ID, h100}, {b.ID, mi300}} {
		run := waitRun(t, s.URL, c.id)
		if run.Status != store.StatusDone {
			t.Fatalf("run %s: %s %s", c.id, run.Status, run.Error)
		}
		if run.Progress.Bytes == 0 || run.Progress.Events == 0 {
			t.Errorf("run %s: no progress recorded: %+v", c.id, run.Progress)
		}
		var rep analyze.Report
		getJSON(t, s.URL+"/api/v1/runs/"+c.id+"/report", &rep)
		sameAnalysis(t, &rep, directReport(t, c.file))
	}
	checkTwoRanks(t, s.URL, m.ID)

	checkCharts(t, s.URL, a.ID)
	checkTrace(t, s.URL, a.ID, h100)
	checkList(t, s.URL, a.ID, b.ID)
	checkDiff(t, s.URL, a.ID, b.ID)

	// Delete one run; the others survive a restart on the same data dir.
	if code, body := do(t, "DELETE", s.URL+"/api/v1/runs/"+m.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	if code, _ := do(t, "GET", s.URL+"/api/v1/runs/"+m.ID, "", nil); code != http.StatusNotFound {
		t.Fatalf("deleted run: got %d, want 404", code)
	}
	checkRestart(t, s, data, a.ID, b.ID, h100)
}

// uploadTwoRanks uploads the two sampled ranks as one multipart run.
func uploadTwoRanks(t *testing.T, base string) created {
	t.Helper()
	ct, body := multipartBody(t, "sampled 2 ranks", "job=sampled", testkit.Public(t, traceRank0), testkit.Public(t, traceRank1))
	code, resp := do(t, "POST", base+"/api/v1/runs", ct, body)
	if code != http.StatusAccepted {
		t.Fatalf("multipart upload: %d %s", code, resp)
	}
	var m created
	testkit.Must(t, json.Unmarshal(resp, &m))
	if len(m.Run.Files) != 2 || m.StatusURL != "/api/v1/runs/"+m.ID {
		t.Fatalf("multipart run: %+v", m)
	}
	return m
}

// checkRestart stops s and starts a server on its data directory again:
// runs a and b are there with the same report, a's trace and b's charts.
func checkRestart(t *testing.T, s *testServer, data, a, b, aTrace string) {
	t.Helper()
	var before analyze.Report
	getJSON(t, s.URL+"/api/v1/runs/"+a+"/report", &before)
	s.stop()

	s2 := startServer(t, api.Config{DataDir: data})
	var list struct {
		Runs  []store.Run `json:"runs"`
		Total int         `json:"total"`
	}
	getJSON(t, s2.URL+"/api/v1/runs", &list)
	if list.Total != 2 {
		t.Fatalf("after restart: %d runs, want 2", list.Total)
	}
	var after analyze.Report
	getJSON(t, s2.URL+"/api/v1/runs/"+a+"/report", &after)
	if !reflect.DeepEqual(before, after) {
		t.Error("report changed across the restart")
	}
	checkTrace(t, s2.URL, a, aTrace)
	checkCharts(t, s2.URL, b)
}

// checkTwoRanks waits for a run of the two sampled ranks and checks that
// its report holds ranks 0 and 1.
func checkTwoRanks(t *testing.T, base, id string) {
	t.Helper()
	run := waitRun(t, base, id)
	if run.Status != store.StatusDone {
		t.Fatalf("run %s: %s %s", id, run.Status, run.Error)
	}
	var rep analyze.Report
	getJSON(t, base+"/api/v1/runs/"+id+"/report", &rep)
	if len(rep.Ranks) != 2 || rep.Ranks[0].Rank != 0 || rep.Ranks[1].Rank != 1 {
		t.Fatalf("run %s: report of %d ranks, want ranks 0 and 1", id, len(rep.Ranks))
	}
}

// checkCharts fetches every chart kind as SVG and PNG.
func checkCharts(t *testing.T, base, id string) {
	t.Helper()
	for _, kind := range []string{"breakdown", "ranks", "steps"} {
		for _, f := range []struct{ ext, ctype, magic string }{
			{"svg", "image/svg+xml", "<?xml"}, {"png", "image/png", "\x89PNG"},
		} {
			resp, err := http.Get(base + "/api/v1/runs/" + id + "/charts/" + kind + "." + f.ext)
			testkit.Must(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != f.ctype || !bytes.HasPrefix(b, []byte(f.magic)) {
				t.Errorf("chart %s.%s: %d %s %q", kind, f.ext, resp.StatusCode, resp.Header.Get("Content-Type"), b[:min(len(b), 60)])
			}
		}
	}
	if code, body := do(t, "GET", base+"/api/v1/runs/"+id+"/charts/pie.svg", "", nil); code != 404 || !strings.Contains(string(body), "unknown chart kind") {
		t.Errorf("unknown chart: %d %s", code, body)
	}
}

// checkTrace downloads the stored trace and compares it with the original.
func checkTrace(t *testing.T, base, id, path string) {
	t.Helper()
	code, got := do(t, "GET", base+"/api/v1/runs/"+id+"/trace", "", nil)
	want, err := os.ReadFile(path)
	testkit.Must(t, err)
	if code != 200 || !bytes.Equal(got, want) {
		t.Fatalf("trace download: %d, %d bytes, want %d", code, len(got), len(want))
	}
	sum := sha256.Sum256(want)
	var run store.Run
	getJSON(t, base+"/api/v1/runs/"+id, &run)
	if run.Files[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("stored hash %s", run.Files[0].SHA256)
	}
}

// checkList checks paging and the label filter.
func checkList(t *testing.T, base, h100, mi300 string) {
	t.Helper()
	var page struct {
		Runs  []store.Run `json:"runs"`
		Total int         `json:"total"`
		Next  string      `json:"next"`
	}
	getJSON(t, base+"/api/v1/runs?limit=2", &page)
	if page.Total != 3 || len(page.Runs) != 2 || page.Next == "" {
		t.Fatalf("first page: total %d, %d runs, next %q", page.Total, len(page.Runs), page.Next)
	}
	next := page.Next
	page.Next = ""
	getJSON(t, base+next, &page)
	if len(page.Runs) != 1 || page.Next != "" {
		t.Fatalf("second page: %d runs, next %q", len(page.Runs), page.Next)
	}
	getJSON(t, base+"/api/v1/runs?label=gpu=mi300", &page)
	if page.Total != 1 || page.Runs[0].ID != mi300 || page.Runs[0].Labels["model"] != "qwen" {
		t.Fatalf("label filter gpu=mi300: %+v", page)
	}
	getJSON(t, base+"/api/v1/runs?label=model=qwen", &page)
	if page.Total != 2 {
		t.Fatalf("label filter model=qwen: %d runs, want 2", page.Total)
	}
}

// checkDiff fetches the diff of the two runs and its chart.
func checkDiff(t *testing.T, base, a, b string) {
	t.Helper()
	var d struct {
		Headline string                     `json:"headline"`
		Buckets  map[string]json.RawMessage `json:"buckets"`
	}
	getJSON(t, base+"/api/v1/diff?base="+a+"&head="+b, &d)
	if d.Headline == "" || len(d.Buckets) == 0 {
		t.Fatalf("diff: %+v", d)
	}
	code, img := do(t, "GET", base+"/api/v1/diff/charts/diff.svg?base="+a+"&head="+b, "", nil)
	if code != 200 || !bytes.HasPrefix(img, []byte("<?xml")) {
		t.Fatalf("diff chart: %d %.80s", code, img)
	}
	if code, body := do(t, "GET", base+"/api/v1/diff?base="+a, "", nil); code != 400 || !strings.Contains(string(body), "two runs") {
		t.Errorf("diff without head: %d %s", code, body)
	}
}
