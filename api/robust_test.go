package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// traceSmall is a small real trace for the robustness tests.
const traceSmall = "tracelens-vllm-decode-full-graph.json.gz"

// blobCount counts the stored blobs of a data directory.
func blobCount(t testing.TB, data string) int {
	t.Helper()
	return storedObjects(t, data, "sha256")
}

// The same file uploaded twice makes two runs sharing one blob; deleting
// one keeps the other's file and report, deleting both removes the blob.
func TestSameFileTwice(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	path := testkit.Public(t, traceSmall)
	a, b := uploadFile(t, s.URL, path, "&name=a"), uploadFile(t, s.URL, path, "&name=b")
	ra, rb := waitRun(t, s.URL, a.ID), waitRun(t, s.URL, b.ID)
	if ra.Status != store.StatusDone || rb.Status != store.StatusDone || ra.Files[0].SHA256 != rb.Files[0].SHA256 {
		t.Fatalf("runs: %+v %+v", ra, rb)
	}
	if n := blobCount(t, data); n != 1 {
		t.Fatalf("%d blobs, want 1 shared", n)
	}
	if code, body := do(t, "DELETE", s.URL+"/api/v1/runs/"+a.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	want, err := os.ReadFile(path)
	testkit.Must(t, err)
	if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+b.ID+"/trace", "", nil); code != 200 || string(body) != string(want) {
		t.Errorf("trace of the other run after delete: %d, %d bytes, want %d", code, len(body), len(want))
	}
	if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+b.ID+"/report", "", nil); code != 200 {
		t.Errorf("report of the other run after delete: %d %s", code, body)
	}
	do(t, "DELETE", s.URL+"/api/v1/runs/"+b.ID, "", nil)
	if n := blobCount(t, data); n != 0 {
		t.Errorf("%d blobs left after both runs were deleted", n)
	}
}

// blockingAnalysis wraps the real analysis: it announces each start on
// started and waits for its context to end (or for release).
type blockingAnalysis struct {
	started chan<- string
	release <-chan struct{}
	stopped chan<- error
}

func blockingPipeline(started chan<- string, release <-chan struct{}, stopped chan<- error) blockingAnalysis {
	return blockingAnalysis{started, release, stopped}
}

func (b blockingAnalysis) wrap(ctx context.Context, a api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error) {
	b.started <- a.Run
	select {
	case <-ctx.Done():
		b.stopped <- ctx.Err()
		return nil, ctx.Err()
	case <-b.release:
		return real()
	}
}

// startWith starts a server whose analysis is b's on a loopback listener.
func startWith(t testing.TB, cfg api.Config, b blockingAnalysis) *testServer {
	t.Helper()
	return startWithAnalysis(t, cfg, b.wrap)
}

// Deleting a run while it is analysed cancels the analysis, records
// nothing, leaves no blob or work file, and the server goes on.
func TestDeleteDuringAnalysis(t *testing.T) {
	data := t.TempDir()
	started, stopped := make(chan string, 1), make(chan error, 1)
	s := startWith(t, api.Config{DataDir: data, Workers: 1}, blockingPipeline(started, nil, stopped))
	c := uploadFile(t, s.URL, testkit.Public(t, traceSmall), "")
	<-started
	if code, body := do(t, "DELETE", s.URL+"/api/v1/runs/"+c.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("analysis ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the analysis did not notice the delete")
	}
	if code, _ := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID, "", nil); code != http.StatusNotFound {
		t.Errorf("deleted run: %d", code)
	}
	// The worker is free again: the next upload is analysed.
	c2 := uploadFile(t, s.URL, testkit.Public(t, traceRank0), "")
	<-started
	do(t, "DELETE", s.URL+"/api/v1/runs/"+c2.ID, "", nil)
	<-stopped
	waitFor(t, "blobs removed", func() bool {
		return blobCount(t, data) == 0
	})
}

// runTotal returns the number of runs GET url (a run list) finds.
func runTotal(t testing.TB, url string) int {
	t.Helper()
	var list struct{ Total int }
	getJSON(t, url, &list)
	return list.Total
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting: %s", what)
}

// Two concurrent uploads of the same bytes make two complete runs with
// their own names.
func TestConcurrentSameBytes(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	path := testkit.Public(t, traceSmall)
	ids := make([]string, 2)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { ids[i] = uploadFile(t, s.URL, path, fmt.Sprintf("&name=copy%d", i)).ID })
	}
	wg.Wait()
	var reports [2]analyze.Report
	for i, id := range ids {
		r := waitRun(t, s.URL, id)
		if r.Status != store.StatusDone || r.Name != fmt.Sprintf("copy%d", i) {
			t.Errorf("run %d: %s %q %s", i, r.Status, r.Name, r.Error)
		}
		getJSON(t, s.URL+"/api/v1/runs/"+id+"/report", &reports[i])
		if reports[i].Source != r.Name {
			t.Errorf("report %d: source %q, want the run's name %q", i, reports[i].Source, r.Name)
		}
		reports[i].Source = ""
	}
	sameAnalysis(t, &reports[0], &reports[1])
	if len(reports[0].Ranks) == 0 {
		t.Error("empty report")
	}
}

// halfUpload sends half of a real trace as an upload to s, whose data
// directory is data, and returns once the server stores it in a temp file.
func halfUpload(t *testing.T, s *testServer, data string) net.Conn {
	t.Helper()
	trace, err := os.ReadFile(testkit.Public(t, traceSmall))
	testkit.Must(t, err)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	testkit.Must(t, err)
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: %d\r\n\r\n", len(trace))
	conn.Write(trace[:len(trace)/2])
	waitFor(t, "temp file created", func() bool { return storedObjects(t, data, "tmp") == 1 })
	return conn
}

// A client that disconnects mid-upload leaves no run and no temp file.
func TestDisconnectMidUpload(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	conn := halfUpload(t, s, data)
	conn.Close()
	waitFor(t, "temp file removed", func() bool { return storedObjects(t, data, "tmp") == 0 })
	if total := runTotal(t, s.URL+"/api/v1/runs"); total != 0 || blobCount(t, data) != 0 {
		t.Errorf("%d runs, %d blobs after a cut upload", total, blobCount(t, data))
	}
}

// Reports, charts and diffs of a run being analysed or still queued are
// refused with 409 and a message.
func TestNotReadyRuns(t *testing.T) {
	started := make(chan string, 1)
	s := startWith(t, api.Config{DataDir: t.TempDir(), Workers: 1}, blockingPipeline(started, nil, make(chan error, 2)))
	running := uploadFile(t, s.URL, testkit.Public(t, traceSmall), "")
	<-started
	queued := uploadFile(t, s.URL, testkit.Public(t, traceRank0), "")
	tests := []struct {
		id   string
		code int
	}{{running.ID, http.StatusConflict}, {queued.ID, http.StatusConflict}}
	for _, tc := range tests {
		for _, p := range []string{"/report", "/charts/breakdown.svg", "/charts/timeline.png"} {
			code, body := do(t, "GET", s.URL+"/api/v1/runs/"+tc.id+p, "", nil)
			if code != tc.code || !strings.Contains(string(body), "no report yet") {
				t.Errorf("%s%s: %d %s", tc.id, p, code, body)
			}
		}
	}
	code, body := do(t, "GET", s.URL+"/api/v1/diff?base="+running.ID+"&head="+queued.ID, "", nil)
	if code != http.StatusConflict {
		t.Errorf("diff of unfinished runs: %d %s", code, body)
	}
}

// Charts of a run that failed analysis are refused with 422.
func TestFailedRunCharts(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	code, body := do(t, "POST", s.URL+"/api/v1/runs", "application/json", strings.NewReader(`{"traceEvents": []}`))
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, body)
	}
	var c created
	testkit.Must(t, json.Unmarshal(body, &c))
	waitRun(t, s.URL, c.ID)
	ok := uploadFile(t, s.URL, testkit.Public(t, traceSmall), "")
	waitRun(t, s.URL, ok.ID)
	for _, p := range []string{
		"/runs/" + c.ID + "/charts/breakdown.svg", "/runs/" + c.ID + "/charts/steps.png",
		"/runs/" + c.ID + "/charts/timeline.svg", "/diff?base=" + c.ID + "&head=" + ok.ID,
		"/diff/charts/diff.svg?base=" + ok.ID + "&head=" + c.ID,
	} {
		code, body := do(t, "GET", s.URL+"/api/v1"+p, "", nil)
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "failed analysis") {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}

// Unknown ids get a 404 JSON answer whose message names the id.
func TestUnknownIDs(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	ok := uploadFile(t, s.URL, testkit.Public(t, traceSmall), "")
	waitRun(t, s.URL, ok.ID)
	tests := []struct{ method, path string }{
		{"GET", "/runs/nosuchrun"},
		{"GET", "/runs/nosuchrun/report"},
		{"GET", "/runs/nosuchrun/trace"},
		{"GET", "/runs/nosuchrun/charts/breakdown.svg"},
		{"GET", "/runs/nosuchrun/charts/timeline.png"},
		{"DELETE", "/runs/nosuchrun"},
		{"GET", "/diff?base=nosuchrun&head=" + ok.ID},
		{"GET", "/diff/charts/diff.svg?base=" + ok.ID + "&head=nosuchrun"},
	}
	for _, tc := range tests {
		code, body := do(t, tc.method, s.URL+"/api/v1"+tc.path, "", nil)
		var e struct {
			Error string
			Code  int
		}
		if code != http.StatusNotFound || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, "nosuchrun") || e.Code != 404 {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, code, body)
		}
	}
}

// Names and labels are bounded: longer ones are refused with 400 and no
// run is made.
func TestLongNamesAndLabels(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	long := strings.Repeat("n", 300)
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("k%d=v", i)
	}
	ctForm, form := multipartBody(t, long, "", testkit.Public(t, traceSmall))
	tests := []struct {
		name, query, ctype string
		body               io.Reader
	}{
		{"long name", "?name=" + long, "application/json", strings.NewReader("{}")},
		{"long label", "?label=k=" + long, "application/json", strings.NewReader("{}")},
		{"many labels", "?label=" + url.QueryEscape(strings.Join(many, ",")), "application/json", strings.NewReader("{}")},
		{"long form name", "", ctForm, form},
	}
	for _, tc := range tests {
		code, body := do(t, "POST", s.URL+"/api/v1/runs"+tc.query, tc.ctype, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(string(body), "at most") && !strings.Contains(string(body), "more than") {
			t.Errorf("%s: %d %.200s", tc.name, code, body)
		}
	}
	if total := runTotal(t, s.URL+"/api/v1/runs"); total != 0 {
		t.Errorf("%d runs made by refused uploads", total)
	}
}

// Label filters are values, never SQL.
func TestLabelFilterInjection(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	uploadFile(t, s.URL, testkit.Public(t, traceSmall), "&label=gpu=h100")
	for _, label := range []string{
		"gpu=h100' OR '1'='1", "gpu=x') OR 1=1 --", "gpu=h100; DROP TABLE runs; --", "x=1) UNION SELECT id FROM runs --",
	} {
		if total := runTotal(t, s.URL+"/api/v1/runs?label="+url.QueryEscape(label)); total != 0 {
			t.Errorf("label %q matched %d runs", label, total)
		}
	}
	if total := runTotal(t, s.URL+"/api/v1/runs?label=gpu=h100"); total != 1 {
		t.Errorf("label gpu=h100 matched %d runs, want 1", total)
	}
}

// A corrupt runs.db is a clear error at start.
func TestCorruptDatabase(t *testing.T) {
	data := t.TempDir()
	testkit.Must(t, os.WriteFile(filepath.Join(data, "runs.db"), []byte(strings.Repeat("not a database ", 1000)), 0o644))
	_, err := api.Open(embedded(api.Config{DataDir: data, Logger: quietLog()}))
	if err == nil || !strings.Contains(err.Error(), "runs.db") {
		t.Fatalf("open over a corrupt runs.db: %v", err)
	}
}

// A blob missing on disk makes its run's trace and timeline answer 410
// with a message, and a queued run over it fail with the reason; the
// report stays.
func TestMissingBlob(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	c := uploadFile(t, s.URL, testkit.Public(t, traceSmall), "")
	run := waitRun(t, s.URL, c.ID)
	s.stop()
	sha := run.Files[0].SHA256
	removeBlob(t, data, sha)

	s = startServer(t, api.Config{DataDir: data})
	if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report", "", nil); code != 200 {
		t.Errorf("report: %d %s", code, body)
	}
	for _, p := range []string{"/trace", "/charts/timeline.svg"} {
		code, body := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+p, "", nil)
		if code != http.StatusGone || !strings.Contains(string(body), "missing from the blob store") || !strings.Contains(string(body), c.ID) {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}

// A run left queued by a previous process whose blob went missing fails
// analysis on the next start with the reason.
func TestMissingBlobQueued(t *testing.T) {
	data := t.TempDir()
	started := make(chan string, 1)
	srv, err := api.OpenWithAnalysis(withBackend(t, api.Config{DataDir: data, Logger: quietLog()}), blockingPipeline(started, nil, make(chan error, 1)).wrap)
	testkit.Must(t, err)
	run, err := srv.Import(context.Background(), testkit.Public(t, traceSmall), nil)
	testkit.Must(t, err)
	<-started
	testkit.Must(t, srv.Close())
	sha := run.Files[0].SHA256
	removeBlob(t, data, sha)

	s := startServer(t, api.Config{DataDir: data})
	got := waitRun(t, s.URL, run.ID)
	if got.Status != store.StatusFailed || !strings.Contains(got.Error, "missing from the blob store") {
		t.Errorf("run over a missing blob: %s %q", got.Status, got.Error)
	}
}

// Close while an upload streams cuts the upload off: no run, no temp file,
// and Close returns.
func TestCloseDuringUpload(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	conn := halfUpload(t, s, data)
	defer conn.Close()
	closed := make(chan error, 1)
	go func() { closed <- s.Server.Close() }()
	select {
	case err := <-closed:
		testkit.Must(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the streaming upload")
	}
	if n := storedObjects(t, data, "tmp"); n != 0 {
		t.Errorf("%d temp files left", n)
	}
	s.ts.Close()
	s.ts = nil
	s = startServer(t, api.Config{DataDir: data})
	if total := runTotal(t, s.URL+"/api/v1/runs"); total != 0 {
		t.Errorf("%d runs after a cut upload", total)
	}
}

// A delete is not held up by an upload streaming meanwhile, even one of
// the same bytes as the deleted run: the upload completes afterwards with
// its own copy of the file.
func TestDeleteDuringUpload(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	path := testkit.Public(t, traceSmall)
	old := uploadFile(t, s.URL, path, "")
	waitRun(t, s.URL, old.ID)
	conn := halfUpload(t, s, data)
	defer conn.Close()
	deleted := make(chan int, 1)
	go func() {
		code, _ := do(t, "DELETE", s.URL+"/api/v1/runs/"+old.ID, "", nil)
		deleted <- code
	}()
	select {
	case code := <-deleted:
		if code != http.StatusNoContent {
			t.Fatalf("delete: %d", code)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the delete waited for an unrelated upload")
	}
	trace, err := os.ReadFile(path)
	testkit.Must(t, err)
	_, err = conn.Write(trace[len(trace)/2:])
	testkit.Must(t, err)
	answer := make([]byte, 4096)
	n, _ := conn.Read(answer)
	var c created
	if i := strings.Index(string(answer[:n]), "{"); !strings.Contains(string(answer[:n]), " 202 ") || i < 0 || json.Unmarshal(answer[i:n], &c) != nil {
		t.Fatalf("upload after the delete: %q", answer[:n])
	}
	if r := waitRun(t, s.URL, c.ID); r.Status != store.StatusDone {
		t.Errorf("run uploaded across a delete of the same bytes: %s %s", r.Status, r.Error)
	}
	if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/trace", "", nil); code != 200 || len(body) != len(trace) {
		t.Errorf("trace: %d, %d bytes", code, len(body))
	}
}
