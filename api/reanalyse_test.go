package api_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// POST /api/v1/runs/{id}/reanalyse analyses a done run again: it is
// queued, then done with the same report as before (same rules, same
// files); a run still being analysed answers 409, a missing one 404. A
// run failed by a missing file, put back, is analysed again and done.
func TestReanalyse(t *testing.T) {
	data := t.TempDir()
	var block atomic.Bool
	started, release := make(chan string, 4), make(chan struct{})
	s := startWithAnalysis(t, api.Config{DataDir: data}, func(ctx context.Context, a api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error) {
		if block.Load() {
			started <- a.Run
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return real()
	})
	path := testkit.Public(t, traceSmall)
	c := uploadFile(t, s.URL, path, "&name=again")
	if r := waitRun(t, s.URL, c.ID); r.Status != store.StatusDone {
		t.Fatalf("first analysis: %s %s", r.Status, r.Error)
	}
	first := reportJSON(t, s.URL, c.ID)

	block.Store(true)
	code, body := do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/reanalyse", "", nil)
	if code != http.StatusAccepted || !strings.Contains(string(body), `"status":"queued"`) {
		t.Fatalf("reanalyse: %d %s", code, body)
	}
	<-started
	if code, _ := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report", "", nil); code != http.StatusConflict {
		t.Errorf("report while reanalysed: %d, want 409", code)
	}
	if code, body := do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/reanalyse", "", nil); code != http.StatusConflict {
		t.Errorf("reanalyse of a run being analysed: %d %s, want 409", code, body)
	}
	close(release)
	if r := waitRun(t, s.URL, c.ID); r.Status != store.StatusDone {
		t.Fatalf("second analysis: %s %s", r.Status, r.Error)
	}
	if again := reportJSON(t, s.URL, c.ID); !bytes.Equal(again, first) {
		t.Error("the report of the same files by the same rules changed")
	}
	sameReport(t, reportJSON(t, s.URL, c.ID), path)
	if code, _ := do(t, "POST", s.URL+"/api/v1/runs/0123456789abcdef/reanalyse", "", nil); code != http.StatusNotFound {
		t.Errorf("reanalyse of a missing run: %d, want 404", code)
	}

	// A run whose file went missing fails; with the file back (uploaded
	// again by another run), reanalyse makes it done.
	block.Store(false)
	other := uploadFile(t, s.URL, testkit.Public(t, traceRank0), "&name=other")
	waitRun(t, s.URL, other.ID)
	do(t, "DELETE", s.URL+"/api/v1/runs/"+c.ID, "", nil) // drops the blob
	lost := uploadFile(t, s.URL, testkit.Public(t, traceRank0), "&name=lost")
	waitRun(t, s.URL, lost.ID)
	removeBlob(t, data, lost.Run.Files[0].SHA256)
	do(t, "POST", s.URL+"/api/v1/runs/"+lost.ID+"/reanalyse", "", nil)
	if r := waitRun(t, s.URL, lost.ID); r.Status != store.StatusFailed {
		t.Fatalf("reanalysed without its file: %s", r.Status)
	}
	back := uploadFile(t, s.URL, testkit.Public(t, traceRank0), "&name=back")
	waitRun(t, s.URL, back.ID)
	if code, body := do(t, "POST", s.URL+"/api/v1/runs/"+lost.ID+"/reanalyse", "", nil); code != http.StatusAccepted {
		t.Fatalf("reanalyse of a failed run: %d %s", code, body)
	}
	if r := waitRun(t, s.URL, lost.ID); r.Status != store.StatusDone {
		t.Errorf("reanalysed with its file back: %s %s", r.Status, r.Error)
	}
}

// stores is one backend's stores for a crash-loop test: URLs that every
// process started over them shares.
type stores struct{ meta, blobs string }

// A run whose analysis kills the server (here: SIGKILL while it is
// analysed, as the out-of-memory killer does) is tried maxAnalysisStarts
// (3) times, then failed with a message saying why: the next server never
// starts its analysis again, so it never crash-loops on one input.
func TestCrashLoopBounded(t *testing.T) {
	for _, backend := range []string{"embedded", "team"} {
		t.Run(backend, func(t *testing.T) {
			st := stores{"sqlite://" + filepath.Join(t.TempDir(), "runs.db"), "file://" + filepath.Join(t.TempDir(), "blobs")}
			if backend == "team" {
				st = stores{pgtest.New(t), s3test.New(t)}
			}
			path := testkit.Public(t, traceSmall)
			var id string
			for kill := 1; kill <= 3; kill++ {
				url, analysing, cmd := startDoomed(t, st)
				if kill == 1 {
					id = uploadFile(t, url, path, "&name=deadly").ID
				}
				if got := analysing(); got != id {
					t.Fatalf("kill %d: the replica analyses %s, want %s", kill, got, id)
				}
				testkit.Must(t, cmd.Process.Signal(syscall.SIGKILL))
				cmd.Wait()
				if backend == "team" {
					rescue(t, st.meta, id) // what River's rescuer does after --job-timeout
				}
			}
			// A server with the real pipeline, which would analyse the
			// trace fine: it does not start it a fourth time.
			cfg := api.Config{DataDir: t.TempDir(), Meta: st.meta, Blobs: st.blobs, JobTimeout: teamJobTimeout, RescueMargin: teamRescueMargin}
			s := startServer(t, cfg)
			r := waitRun(t, s.URL, id)
			if r.Status != store.StatusFailed || !strings.Contains(r.Error, "started 3 times") || !strings.Contains(r.Error, "reanalyse") {
				t.Fatalf("after 3 kills: %s %q, want failed saying it started 3 times", r.Status, r.Error)
			}
			t.Logf("after 3 kills: %s", r.Error)
			if n := metricValue(t, s.URL, "kinetoscope_analysis_seconds_count"); n != 0 {
				t.Errorf("the server ran %d analyses, want none", n)
			}
			// reanalyse gives it another chance: with the real pipeline, done.
			if code, body := do(t, "POST", s.URL+"/api/v1/runs/"+id+"/reanalyse", "", nil); code != http.StatusAccepted {
				t.Fatalf("reanalyse: %d %s", code, body)
			}
			if r := waitRun(t, s.URL, id); r.Status != store.StatusDone {
				t.Errorf("reanalysed: %s %s", r.Status, r.Error)
			}
		})
	}
}

// startDoomed starts a replica process (runHelperReplica) over st whose
// analyses never end, and returns its URL, a function that waits for the
// run it starts analysing (which may come before it listens: it queues
// the unfinished runs as it starts), and its command.
func startDoomed(t *testing.T, st stores) (string, func() string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperReplicaEnv+"="+st.meta+" "+st.blobs)
	out, err := cmd.StdoutPipe()
	testkit.Must(t, err)
	cmd.Stderr = os.Stderr
	testkit.Must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	listen, analysing := make(chan string, 1), make(chan string, 16)
	go func() {
		defer close(listen)
		defer close(analysing)
		for lines := bufio.NewScanner(out); lines.Scan(); {
			line := lines.Text()
			if v, ok := strings.CutPrefix(line, "LISTEN "); ok {
				listen <- v
			} else if v, ok := strings.CutPrefix(line, "ANALYSING "); ok {
				analysing <- v
			} else if strings.HasPrefix(line, "ERROR") {
				analysing <- line
				listen <- line
			}
		}
	}()
	url, ok := <-listen
	if !ok || strings.HasPrefix(url, "ERROR") {
		t.Fatalf("replica did not listen: %q", url)
	}
	return url, func() string {
		select {
		case id, ok := <-analysing:
			if !ok {
				t.Fatal("replica exited before it analysed a run")
			}
			return id
		case <-time.After(time.Minute):
			t.Fatal("replica analysed no run within a minute")
			return ""
		}
	}, cmd
}

// rescue makes a dead replica's running job of run id available again at
// once, as River's rescuer does once --job-timeout and the margin passed.
func rescue(t *testing.T, meta, id string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, meta)
	testkit.Must(t, err)
	defer conn.Close(ctx)
	tag, err := conn.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE args->>'run' = $1 AND state = 'running'`, id)
	testkit.Must(t, err)
	if tag.RowsAffected() != 1 {
		t.Fatalf("rescue: %d running jobs of run %s, want 1", tag.RowsAffected(), id)
	}
}
