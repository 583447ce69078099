package api_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// A run deleted through one replica loses its cached charts on the other
// replicas too, at once (not at eviction).
func TestTeamDeleteDropsChartsEverywhere(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	a, b := replica(t, "a", meta, blobs), replica(t, "b", meta, blobs)
	c := uploadFile(t, a.URL, testkit.Public(t, traceSmall), "&name=charted")
	waitRun(t, b.URL, c.ID)
	if code, _ := do(t, "GET", b.URL+"/api/v1/runs/"+c.ID+"/charts/breakdown.svg", "", nil); code != 200 {
		t.Fatalf("chart on b: %d", code)
	}
	cached := filepath.Join(b.DataDir(), "charts", c.ID)
	if n := countFiles(t, cached); n == 0 {
		t.Fatalf("b cached no chart of the run under %s", cached)
	}
	if code, _ := do(t, "DELETE", a.URL+"/api/v1/runs/"+c.ID, "", nil); code != 204 {
		t.Fatalf("delete on a: %d", code)
	}
	waitFor(t, "b drops the deleted run's charts", func() bool {
		_, err := os.Stat(cached)
		return os.IsNotExist(err)
	})
}

// The start log names the database (without its password) and the blob
// store in use, and the replica.
func TestStartLogNamesStores(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	// The test cluster trusts every local connection: the password is
	// ignored, and must not be logged.
	meta = strings.Replace(meta, "postgres@", "postgres:s3cr3t-pw@", 1)
	var log bytes.Buffer
	srv, err := api.Open(api.Config{DataDir: t.TempDir(), Meta: meta, Blobs: blobs, Replica: "logged",
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	testkit.Must(t, err)
	srv.Close()
	var line string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "kinetoscope stores") {
			line = l
		}
	}
	bucket := bucketOf(t, blobs)
	for _, want := range []string{"postgres://postgres:xxxxx@127.0.0.1", "s3 bucket " + bucket + " at 127.0.0.1:", "replica=logged"} {
		if !strings.Contains(line, want) {
			t.Errorf("start log %q lacks %q", line, want)
		}
	}
	if strings.Contains(log.String(), "s3cr3t-pw") {
		t.Errorf("the log holds the database password:\n%s", log.String())
	}
}
