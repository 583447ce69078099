package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/driver"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// Tests of the team deployment: several replicas over one PostgreSQL and
// one S3 store, all real servers. They run whatever the suite's backend.

// teamJobTimeout and teamRescueMargin are short here so that a dead
// replica's job is taken over within a test's time.
const (
	teamJobTimeout   = 8 * time.Second
	teamRescueMargin = 2 * time.Second
)

// replica starts one replica of a team deployment.
func replica(t *testing.T, name, meta, blobs string) *testServer {
	t.Helper()
	return startServer(t, api.Config{DataDir: t.TempDir(), Meta: meta, Blobs: blobs, Replica: name,
		JobTimeout: teamJobTimeout, RescueMargin: teamRescueMargin})
}

// reportJSON returns a run's stored report, as the server encodes it.
func reportJSON(t testing.TB, base, id string) []byte {
	t.Helper()
	code, body := do(t, "GET", base+"/api/v1/runs/"+id+"/report", "", nil)
	if code != 200 {
		t.Fatalf("report of %s: %d %s", id, code, body)
	}
	return body
}

// sameReport checks that the server's report of an upload of path is the
// report analyze makes of path, field for field, once the names the server
// gives (the run's name, the files' names) are set alike.
func sameReport(t testing.TB, got []byte, path string) {
	t.Helper()
	rep, err := driver.ReadReport(writeTemp(t, "report.json", string(got)))
	if err != nil {
		t.Fatalf("decode the server's report: %v", err)
	}
	want := directReport(t, path)
	normalize := func(r *analyze.Report) []byte {
		r.Source = "x"
		for i := range r.Ranks {
			r.Ranks[i].File = filepath.Base(r.Ranks[i].File)
		}
		b, err := driver.EncodeReport(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	g, w := normalize(rep), normalize(want)
	if !bytes.Equal(g, w) {
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("the server's report of %s differs from analyze's at byte %d:\nserver:  %.200s\nanalyze: %.200s",
			filepath.Base(path), i, g[max(0, i-40):], w[max(0, i-40):])
	}
}

// jobAttempts returns, per run, the attempts its analysis job took.
func jobAttempts(t testing.TB, meta string) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, meta)
	testkit.Must(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT args->>'run', attempt, state::text FROM river_job WHERE kind = 'kinetoscope_analyze'`)
	testkit.Must(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var run, state string
		var attempt int
		testkit.Must(t, rows.Scan(&run, &attempt, &state))
		if _, dup := out[run]; dup {
			t.Errorf("run %s has two jobs", run)
		}
		out[run] = attempt
	}
	testkit.Must(t, rows.Err())
	return out
}

// An upload to one replica is analysed by either and read from the
// other; 32 concurrent uploads spread over both are each stored and
// analysed exactly once, with analyze's report; restarting both keeps
// everything.
func TestTeamReplicas(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	a, b := replica(t, "a", meta, blobs), replica(t, "b", meta, blobs)
	path := testkit.Public(t, traceSmall)

	c := uploadFile(t, a.URL, path, "&name=first")
	if got := waitRun(t, b.URL, c.ID); got.Status != store.StatusDone {
		t.Fatalf("run on b: %s %s", got.Status, got.Error)
	}
	sameReport(t, reportJSON(t, b.URL, c.ID), path)

	traces := []string{path, testkit.Public(t, traceRank0), testkit.Public(t, traceRank1), testkit.Public(t, traceH100)}
	const uploads = 32
	ids := make([]string, uploads)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range uploads {
		base := a.URL
		if i%2 == 1 {
			base = b.URL
		}
		wg.Go(func() { ids[i] = uploadFile(t, base, traces[i%len(traces)], fmt.Sprintf("&name=u%d", i)).ID })
	}
	wg.Wait()
	for i, id := range ids {
		if got := waitRun(t, a.URL, id); got.Status != store.StatusDone {
			t.Fatalf("upload %d: %s %s", i, got.Status, got.Error)
		}
	}
	t.Logf("%d concurrent uploads over 2 replicas stored and analysed in %s", uploads, time.Since(start).Round(time.Millisecond))
	attempts := jobAttempts(t, meta)
	for i, id := range ids {
		if n, ok := attempts[id]; !ok || n != 1 {
			t.Errorf("upload %d (run %s): job attempts %d (found %v), want 1", i, id, n, ok)
		}
		base := b.URL
		if i%2 == 1 {
			base = a.URL
		}
		sameReport(t, reportJSON(t, base, id), traces[i%len(traces)])
	}
	if total := runTotal(t, a.URL+"/api/v1/runs"); total != uploads+1 {
		t.Errorf("runs listed: %d, want %d", total, uploads+1)
	}
	analysed := metricValue(t, a.URL, "kinetoscope_analysis_seconds_count") + metricValue(t, b.URL, "kinetoscope_analysis_seconds_count")
	if analysed != uploads+1 {
		t.Errorf("analyses run by both replicas: %d, want %d (one per run)", analysed, uploads+1)
	}
	if metricValue(t, a.URL, "kinetoscope_analysis_seconds_count") == 0 || metricValue(t, b.URL, "kinetoscope_analysis_seconds_count") == 0 {
		t.Errorf("one replica analysed nothing: the queue is not shared")
	}

	// Both restart: everything is still there.
	first := reportJSON(t, a.URL, c.ID)
	a.stop()
	b.stop()
	a2 := replica(t, "a2", meta, blobs)
	if total := runTotal(t, a2.URL+"/api/v1/runs"); total != uploads+1 {
		t.Errorf("runs after restart: %d, want %d", total, uploads+1)
	}
	if got := reportJSON(t, a2.URL, c.ID); !bytes.Equal(got, first) {
		t.Error("the report changed across a restart")
	}
	code, body := do(t, "GET", a2.URL+"/api/v1/runs/"+ids[3]+"/trace", "", nil)
	want, err := os.ReadFile(traces[3%len(traces)])
	testkit.Must(t, err)
	if code != 200 || !bytes.Equal(body, want) {
		t.Errorf("trace after restart: %d, %d bytes, want the %d bytes uploaded", code, len(body), len(want))
	}
}

// metricValue returns the value of an unlabelled metric of /metrics.
func metricValue(t testing.TB, base, name string) int {
	t.Helper()
	code, body := do(t, "GET", base+"/metrics", "", nil)
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("metrics lack %s", name)
	return 0
}

// helperReplicaEnv marks the test binary run as a replica process by
// TestTeamReplicaKilled; it holds "META BLOBS".
const helperReplicaEnv = "KINETOSCOPE_TEST_REPLICA"

// runHelperReplica is the replica process: a server whose analysis never
// ends by itself, so that the process is killed in the middle of one. It
// prints its URL and serves until killed.
func runHelperReplica(stores string) {
	go exitWithParent()
	meta, blobs, _ := strings.Cut(stores, " ")
	dir, err := os.MkdirTemp("", "replica-")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	srv, err := api.OpenWithAnalysis(api.Config{DataDir: dir, Meta: meta, Blobs: blobs, Replica: "doomed",
		JobTimeout: teamJobTimeout, RescueMargin: teamRescueMargin, Logger: quietLog()},
		func(ctx context.Context, a api.Analysis, _ func() (*analyze.Report, error)) (*analyze.Report, error) {
			fmt.Println("ANALYSING", a.Run)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	ts := newHTTPServer(srv)
	fmt.Println("LISTEN", ts.URL)
	select {}
}

// exitWithParent ends the replica process once the test process that
// started it is gone (killed, or timed out before its cleanups ran).
func exitWithParent() {
	parent := os.Getppid()
	for range time.Tick(200 * time.Millisecond) {
		if os.Getppid() != parent {
			os.Exit(2)
		}
	}
}

// A replica killed with SIGKILL in the middle of an analysis: another
// replica takes the job over and finishes it, with analyze's report.
func TestTeamReplicaKilled(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	doomed, analysing, cmd := startDoomed(t, stores{meta, blobs})
	path := testkit.Public(t, traceSmall)
	c := uploadFile(t, doomed, path, "&name=orphaned")
	if got := analysing(); got != c.ID {
		t.Fatalf("replica analyses %s, want %s", got, c.ID)
	}
	// The run is running on the doomed replica: kill it there.
	testkit.Must(t, cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("replica exit: %v", err)
	}
	b := replica(t, "survivor", meta, blobs)
	deadline := time.Now().Add(3 * time.Minute)
	var got store.Run
	var stalled string // what the run said once its replica was dead
	for time.Now().Before(deadline) {
		getJSON(t, b.URL+"/api/v1/runs/"+c.ID, &got)
		if got.Status == store.StatusDone || got.Status == store.StatusFailed {
			break
		}
		if got.Progress.Stalled != "" && stalled == "" {
			stalled = got.Progress.Stalled
			t.Logf("%s after the kill, the run says: %s", time.Since(killed).Round(100*time.Millisecond), stalled)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.Status != store.StatusDone {
		t.Fatalf("the killed replica's run on the survivor: %s %s", got.Status, got.Error)
	}
	took := time.Since(killed)
	t.Logf("the survivor finished the killed replica's run %s after the kill (job timeout %s + margin %s)",
		took.Round(100*time.Millisecond), teamJobTimeout, teamRescueMargin)
	if bound := teamJobTimeout + teamRescueMargin + api.RescueSlack; took > bound {
		t.Errorf("takeover took %s, past the bound the README states (job timeout + margin + %s = %s)", took, api.RescueSlack, bound)
	}
	if !strings.Contains(stalled, "replica doomed stopped answering") {
		t.Errorf("while the dead replica held it, the run never said its replica stopped answering (said %q)", stalled)
	}
	sameReport(t, reportJSON(t, b.URL, c.ID), path)
	if n := jobAttempts(t, meta)[c.ID]; n != 2 {
		t.Errorf("job attempts: %d, want 2 (the killed one and the survivor's)", n)
	}
	if n := metricValue(t, b.URL, "kinetoscope_analysis_retries_total"); n != 1 {
		t.Errorf("survivor's retries: %d, want 1", n)
	}
}

// An upload of several files on one replica holds the blobs it has stored
// until it records its run: a delete, on another replica, of the only
// other run with the same bytes as the upload's first file leaves that
// blob alone, and the upload ends with a complete run.
func TestTeamDeleteDuringUpload(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	a, b := replica(t, "a", meta, blobs), replica(t, "b", meta, blobs)
	first, second := testkit.Public(t, traceSmall), testkit.Public(t, traceRank1) // ranks 0 and 1: one run
	old := uploadFile(t, a.URL, first, "&name=old")
	waitRun(t, a.URL, old.ID)
	sha := old.Run.Files[0].SHA256

	// A multipart upload to b: the first file whole, half the second.
	ctype, body := multipartBody(t, "across a delete", "", first, second)
	all := body.Bytes()
	secondBytes, err := os.ReadFile(second)
	testkit.Must(t, err)
	cut := bytes.Index(all, secondBytes) + len(secondBytes)/2
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	testkit.Must(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", ctype, len(all))
	_, err = conn.Write(all[:cut])
	testkit.Must(t, err)
	waitFor(t, "the first file held", func() bool {
		return pgtest.Count(t, meta, `SELECT count(*) FROM blob_holds WHERE sha256 = $1`, sha) == 1
	})

	if code, _ := do(t, "DELETE", a.URL+"/api/v1/runs/"+old.ID, "", nil); code != http.StatusNoContent {
		t.Fatalf("delete on a: %d", code)
	}
	_, err = conn.Write(all[cut:])
	testkit.Must(t, err)
	answer := make([]byte, 4096)
	n, _ := conn.Read(answer)
	var c created
	if i := bytes.IndexByte(answer[:n], '{'); !strings.Contains(string(answer[:n]), " 202 ") || i < 0 || json.Unmarshal(answer[i:n], &c) != nil {
		t.Fatalf("upload across a delete on the other replica: %q", answer[:n])
	}
	if r := waitRun(t, a.URL, c.ID); r.Status != store.StatusDone {
		t.Fatalf("run uploaded across the delete: %s %s", r.Status, r.Error)
	}
	want, err := os.ReadFile(first)
	testkit.Must(t, err)
	if code, got := do(t, "GET", a.URL+"/api/v1/runs/"+c.ID+"/trace?file="+url.QueryEscape(c.Run.Files[0].Name), "", nil); code != 200 || !bytes.Equal(got, want) {
		t.Errorf("the held file after the delete: %d, %d bytes, want the %d uploaded", code, len(got), len(want))
	}
	if n := pgtest.Count(t, meta, `SELECT count(*) FROM blob_holds`); n != 0 {
		t.Errorf("%d holds left after the upload", n)
	}
}
