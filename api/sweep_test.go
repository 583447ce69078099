package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// Blobs that no run references and no upload holds are swept once past
// the grace period (SweepAge), on both blob stores; referenced and held
// ones never are. Each way such a blob is left is tested: a multi-file
// upload whose server was killed after storing its first file, an upload
// refused during a database outage, and a run deleted while a dead upload
// held its blobs.

// fileSHA returns the SHA-256 of a file, as its blob is named.
func fileSHA(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	testkit.Must(t, err)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// backendStores returns fresh stores of a backend: embedded (SQLite and
// a directory) or team (PostgreSQL and S3).
func backendStores(t *testing.T, backend string) stores {
	t.Helper()
	if backend == "team" {
		return stores{pgtest.New(t), s3test.New(t)}
	}
	dir := t.TempDir()
	return stores{"sqlite://" + filepath.Join(dir, "runs.db"), "file://" + filepath.Join(dir, "blobs")}
}

// blobStored reports whether the blob store of st holds sha.
func blobStored(t testing.TB, st stores, sha string) bool {
	t.Helper()
	b, err := store.OpenBlobs(context.Background(), st.blobs)
	testkit.Must(t, err)
	ok, err := b.Has(context.Background(), sha)
	testkit.Must(t, err)
	return ok
}

// execMeta runs a statement on the database of st, behind the server's
// back; with scan, it scans the one row that query answers.
func execMeta(t testing.TB, st stores, query string, args []any, scan ...any) {
	t.Helper()
	ctx := context.Background()
	if path, ok := strings.CutPrefix(st.meta, "sqlite://"); ok {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		testkit.Must(t, err)
		defer db.Close()
		query = regexp.MustCompile(`\$\d`).ReplaceAllString(query, "?")
		if len(scan) > 0 {
			testkit.Must(t, db.QueryRowContext(ctx, query, args...).Scan(scan...))
			return
		}
		_, err = db.ExecContext(ctx, query, args...)
		testkit.Must(t, err)
		return
	}
	conn, err := pgx.Connect(ctx, st.meta)
	testkit.Must(t, err)
	defer conn.Close(ctx)
	if len(scan) > 0 {
		testkit.Must(t, conn.QueryRow(ctx, query, args...).Scan(scan...))
		return
	}
	_, err = conn.Exec(ctx, query, args...)
	testkit.Must(t, err)
}

// expireHolds makes every hold expired, as a day after its upload died.
func expireHolds(t testing.TB, st stores) {
	t.Helper()
	execMeta(t, st, `UPDATE blob_holds SET expires = 1`, nil)
}

// holds counts the holds on a blob.
func holds(t testing.TB, st stores, sha string) int {
	t.Helper()
	var n int
	execMeta(t, st, `SELECT count(*) FROM blob_holds WHERE sha256 = $1`, []any{sha}, &n)
	return n
}

// partialUpload sends a multipart upload of first and second to base,
// stopping half-way through second once first is stored and held, and
// returns the connection, to be finished (or dropped) by the caller, and
// the rest of the body.
func partialUpload(t *testing.T, st stores, base, first, second string) (net.Conn, []byte) {
	t.Helper()
	ctype, body := multipartBody(t, "partial", "", first, second)
	all := body.Bytes()
	secondBytes, err := os.ReadFile(second)
	testkit.Must(t, err)
	cut := bytes.Index(all, secondBytes) + len(secondBytes)/2
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	testkit.Must(t, err)
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", ctype, len(all))
	_, err = conn.Write(all[:cut])
	testkit.Must(t, err)
	sha := fileSHA(t, first)
	waitFor(t, "the first file stored and held", func() bool { return holds(t, st, sha) == 1 })
	return conn, all[cut:]
}

// killedUpload leaves what a multi-file upload leaves when its server is
// killed after storing the first file: that file stored and held by an
// upload that will never record its run.
func killedUpload(t *testing.T, st stores, first, second string) {
	t.Helper()
	url, _, cmd := startDoomed(t, st)
	partialUpload(t, st, url, first, second)
	testkit.Must(t, cmd.Process.Kill())
	cmd.Wait()
}

// sweeper starts a server over st that sweeps blobs older than age.
func sweeper(t *testing.T, st stores, age time.Duration) *testServer {
	t.Helper()
	return startServer(t, api.Config{DataDir: t.TempDir(), Meta: st.meta, Blobs: st.blobs, SweepAge: age,
		JobTimeout: teamJobTimeout, RescueMargin: teamRescueMargin})
}

// sweepNow runs a sweep and returns how many blobs it removed.
func sweepNow(t *testing.T, s *testServer) int {
	t.Helper()
	n, err := s.SweepNow(context.Background())
	testkit.Must(t, err)
	return n
}

func TestSweepKilledUpload(t *testing.T) {
	for _, backend := range []string{"embedded", "team"} {
		t.Run(backend, func(t *testing.T) {
			st := backendStores(t, backend)
			kept, first, second := testkit.Public(t, traceRank1), testkit.Public(t, traceSmall), testkit.Public(t, traceRank0)
			s := sweeper(t, st, time.Nanosecond)
			c := uploadFile(t, s.URL, kept, "&name=kept")
			waitRun(t, s.URL, c.ID)
			s.stop()
			killedUpload(t, st, first, second)
			orphan := fileSHA(t, first)
			for _, step := range []struct {
				what    string
				expire  bool
				age     time.Duration
				removed int
			}{
				{"held by the dead upload", false, time.Nanosecond, 0},
				{"hold expired, within the grace period", true, time.Hour, 0},
				{"hold expired, past the grace period", true, time.Nanosecond, 1},
			} {
				if step.expire {
					expireHolds(t, st)
				}
				s := sweeper(t, st, step.age) // it sweeps at start too
				if n := sweepNow(t, s); n > step.removed {
					t.Errorf("%s: the sweep removed %d blobs, want %d", step.what, n, step.removed)
				}
				if got := blobStored(t, st, orphan); got != (step.removed == 0) {
					t.Errorf("%s: the dead upload's blob stored: %v", step.what, got)
				}
				if !blobStored(t, st, c.Run.Files[0].SHA256) {
					t.Fatalf("%s: the sweep removed a run's blob", step.what)
				}
				s.stop()
			}
		})
	}
}

func TestSweepUploadRefusedDuringDatabaseOutage(t *testing.T) {
	st := backendStores(t, "team")
	s := sweeper(t, st, time.Nanosecond)
	first, second := testkit.Public(t, traceSmall), testkit.Public(t, traceRank0)
	conn, rest := partialUpload(t, st, s.URL, first, second)
	pgtest.Down(t)
	_, err := conn.Write(rest)
	testkit.Must(t, err)
	answer := make([]byte, 4096)
	n, _ := conn.Read(answer)
	if !strings.Contains(string(answer[:n]), " 503 ") {
		t.Errorf("upload during a database outage: %q, want 503", answer[:n])
	}
	pgtest.Up(t)
	held, unheld := fileSHA(t, first), fileSHA(t, second)
	if !blobStored(t, st, held) || !blobStored(t, st, unheld) {
		t.Fatalf("the refused upload left no blob (held %v, unheld %v): nothing to sweep", blobStored(t, st, held), blobStored(t, st, unheld))
	}
	if got := sweepNow(t, s); got != 1 || blobStored(t, st, unheld) || !blobStored(t, st, held) {
		t.Errorf("sweep: removed %d; the unheld blob stored %v (want false), the held one %v (want true)", got, blobStored(t, st, unheld), blobStored(t, st, held))
	}
	expireHolds(t, st)
	if got := sweepNow(t, s); got != 1 || blobStored(t, st, held) {
		t.Errorf("sweep after the hold expired: removed %d, the blob stored %v", got, blobStored(t, st, held))
	}
}

func TestSweepDeleteWhileDeadUploadHeld(t *testing.T) {
	for _, backend := range []string{"embedded", "team"} {
		t.Run(backend, func(t *testing.T) {
			st := backendStores(t, backend)
			first, second := testkit.Public(t, traceSmall), testkit.Public(t, traceRank0)
			s := sweeper(t, st, time.Nanosecond)
			c := uploadFile(t, s.URL, first, "&name=deleted")
			waitRun(t, s.URL, c.ID)
			killedUpload(t, st, first, second)
			do(t, "DELETE", s.URL+"/api/v1/runs/"+c.ID, "", nil)
			sha := c.Run.Files[0].SHA256
			if !blobStored(t, st, sha) {
				t.Fatal("the delete removed a blob an upload held")
			}
			if n := sweepNow(t, s); n != 0 || !blobStored(t, st, sha) {
				t.Errorf("sweep while held: removed %d", n)
			}
			expireHolds(t, st)
			if n := sweepNow(t, s); n != 1 || blobStored(t, st, sha) {
				t.Errorf("sweep after the hold expired: removed %d, blob stored %v", n, blobStored(t, st, sha))
			}
		})
	}
}
