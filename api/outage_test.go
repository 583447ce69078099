package api_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// Tests of store outages on the team backend: the S3 gateway and the
// PostgreSQL cluster stopped (SIGKILL, pg_ctl stop -m immediate) and
// started again by the test.

// wrapFunc is an analysis wrapper of api.OpenWithAnalysis.
type wrapFunc = func(ctx context.Context, a api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error)

// replicaWith starts a replica of a team deployment whose analysis is
// wrap.
func replicaWith(t *testing.T, name, meta, blobs string, wrap wrapFunc) *testServer {
	t.Helper()
	return startWithAnalysis(t, api.Config{DataDir: t.TempDir(), Meta: meta, Blobs: blobs, Replica: name,
		JobTimeout: teamJobTimeout, RescueMargin: teamRescueMargin, MaxUncompressedBytes: 256 << 20}, wrap)
}

// An S3 outage while a run's files are read does not fail the run as a
// bad trace: the analysis is tried again once the store is back, and
// makes analyze's report.
func TestTeamS3OutageDuringAnalysis(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	started, gate := make(chan string, 1), make(chan struct{})
	outcomes := make(chan error, 8)
	var calls atomic.Int32
	a := replicaWith(t, "a", meta, blobs, func(ctx context.Context, an api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error) {
		if calls.Add(1) == 1 {
			started <- an.Run
			<-gate
		}
		rep, err := real()
		outcomes <- err
		return rep, err
	})
	path := testkit.Public(t, traceSmall)
	c := uploadFile(t, a.URL, path, "&name=outage")
	if got := <-started; got != c.ID {
		t.Fatalf("analysing %s, want %s", got, c.ID)
	}
	s3test.Down(t)
	close(gate)
	if err := <-outcomes; err == nil {
		t.Fatal("the analysis read its files from a stopped S3 store without an error")
	} else {
		t.Logf("first attempt, S3 down: %v", err)
	}
	var during store.Run
	getJSON(t, a.URL+"/api/v1/runs/"+c.ID, &during)
	if during.Status == store.StatusFailed {
		t.Fatalf("the S3 outage failed the run: %s", during.Error)
	}
	s3test.Up(t)
	got := waitRun(t, a.URL, c.ID)
	if got.Status != store.StatusDone {
		t.Fatalf("after the outage: %s %s", got.Status, got.Error)
	}
	sameReport(t, reportJSON(t, a.URL, c.ID), path)
	if n := jobAttempts(t, meta)[c.ID]; n < 2 {
		t.Errorf("job attempts: %d, want 2 or more (the one the outage failed, then the retries)", n)
	}
}

// outageAnswer checks that a request answered during an outage is 503
// with Retry-After, in less than limit.
func outageAnswer(t *testing.T, what, method, url, ctype, bodyPath string, limit time.Duration) {
	t.Helper()
	var body *os.File
	if bodyPath != "" {
		f, err := os.Open(bodyPath)
		testkit.Must(t, err)
		defer f.Close()
		body = f
	}
	req, err := http.NewRequest(method, url, nil)
	testkit.Must(t, err)
	if body != nil {
		req.Body = body
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s: %d (Retry-After %q), want 503 with Retry-After", what, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if took > limit {
		t.Errorf("%s answered in %s, want under %s", what, took.Round(time.Millisecond), limit)
	}
	t.Logf("%s: %d in %s", what, resp.StatusCode, took.Round(time.Millisecond))
}

// During an S3 outage, and during a PostgreSQL outage, uploads and trace
// downloads answer 503 with Retry-After within a few seconds, and nothing
// is left behind; once the store is back, both work.
func TestTeamOutageAnswers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		down, up   func(testing.TB)
		getRunCode int // GET /api/v1/runs/ID during the outage
	}{
		{"s3", s3test.Down, s3test.Up, http.StatusOK},
		{"postgres", pgtest.Down, pgtest.Up, http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta, blobs := pgtest.New(t), s3test.New(t)
			a := replica(t, "a", meta, blobs)
			path := testkit.Public(t, traceSmall)
			c := uploadFile(t, a.URL, path, "&name=before")
			waitRun(t, a.URL, c.ID)
			tc.down(t)
			limit := store.ProbeTimeout + 2*time.Second
			outageAnswer(t, "upload", "POST", a.URL+"/api/v1/runs?filename=x.json.gz", "application/gzip", path, limit)
			outageAnswer(t, "trace download", "GET", a.URL+"/api/v1/runs/"+c.ID+"/trace", "", "", limit)
			if code, body := do(t, "GET", a.URL+"/api/v1/runs/"+c.ID, "", nil); code != tc.getRunCode {
				t.Errorf("run during the outage: %d %s, want %d", code, body, tc.getRunCode)
			}
			tc.up(t)
			waitFor(t, "the store back", func() bool {
				code, _ := do(t, "GET", a.URL+"/healthz", "", nil)
				return code == http.StatusOK
			})
			after := uploadFile(t, a.URL, path, "&name=after")
			if r := waitRun(t, a.URL, after.ID); r.Status != store.StatusDone {
				t.Errorf("upload after the outage: %s %s", r.Status, r.Error)
			}
			if runs := runTotal(t, a.URL+"/api/v1/runs"); runs != 2 {
				t.Errorf("%d runs, want 2: the refused upload left one", runs)
			}
			if code, _ := do(t, "GET", a.URL+"/api/v1/runs/"+c.ID+"/trace", "", nil); code != http.StatusOK {
				t.Errorf("trace after the outage: %d", code)
			}
		})
	}
}

// A message of a 503 names the store, not only "error".
func TestUnavailableMessage(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	a := replica(t, "a", meta, blobs)
	s3test.Down(t)
	f, err := os.Open(testkit.Public(t, traceSmall))
	testkit.Must(t, err)
	defer f.Close()
	code, body := do(t, "POST", a.URL+"/api/v1/runs", "application/gzip", f)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "s3 bucket") || !strings.Contains(string(body), "nothing was stored") {
		t.Errorf("upload during an S3 outage: %d %s", code, body)
	}
}
