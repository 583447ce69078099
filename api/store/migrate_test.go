package store

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
)

// legacySchema is the schema OpenSQLite created, with no version table,
// before migrations were versioned.
const legacySchema = `
CREATE TABLE IF NOT EXISTS runs (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	status TEXT NOT NULL,
	progress TEXT NOT NULL,
	error TEXT NOT NULL DEFAULT '',
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	report BLOB
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created DESC);
CREATE TABLE IF NOT EXISTS run_files (
	run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	pos INTEGER NOT NULL,
	name TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	size INTEGER NOT NULL,
	kind TEXT NOT NULL,
	PRIMARY KEY (run_id, pos)
);
CREATE INDEX IF NOT EXISTS run_files_sha ON run_files(sha256);
CREATE TABLE IF NOT EXISTS run_labels (
	run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	key TEXT NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
);
CREATE INDEX IF NOT EXISTS run_labels_kv ON run_labels(key, value);
`

// sqliteVersion returns the goose version of the SQLite database at path.
func sqliteVersion(t *testing.T, path string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	testkit.Must(t, err)
	defer db.Close()
	var v int64
	testkit.Must(t, db.QueryRow(`SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&v))
	return v
}

// TestSQLiteLegacy: a database made before migrations were versioned
// opens, takes version 1, and keeps its runs and reports.
func TestSQLiteLegacy(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "runs.db")
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	testkit.Must(t, err)
	_, err = old.Exec(legacySchema)
	testkit.Must(t, err)
	created := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	for _, q := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO runs (id, name, status, progress, error, created, updated, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{"old1", "old run", "done", `{"phase":"done","bytes_read":7,"bytes_total":7,"events":3}`, "", created.UnixNano(), created.UnixNano(), []byte(`{"old":1}`)}},
		{`INSERT INTO runs (id, name, status, progress, error, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{"old2", "queued run", "queued", `{"phase":"queued","bytes_read":0,"bytes_total":0,"events":0}`, "", created.UnixNano() + 1, created.UnixNano() + 1}},
		{`INSERT INTO run_files (run_id, pos, name, sha256, size, kind) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{"old1", 0, "rank0.json.gz", strings.Repeat("a", 64), 7, "gzip"}},
		{`INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)`, []any{"old1", "gpu", "a100"}},
	} {
		_, err := old.Exec(q.q, q.args...)
		testkit.Must(t, err)
	}
	testkit.Must(t, old.Close())

	for i := range 2 { // migrated, then already current
		db, err := OpenSQLite(path)
		if err != nil {
			t.Fatalf("open #%d of a legacy database: %v", i+1, err)
		}
		r, err := db.Get(ctx, "old1")
		testkit.Must(t, err)
		if r.Name != "old run" || r.Status != StatusDone || r.Progress.Events != 3 || r.Labels["gpu"] != "a100" ||
			len(r.Files) != 1 || r.Files[0].Name != "rank0.json.gz" || !r.Created.Equal(created) {
			t.Errorf("legacy run after open #%d: %+v", i+1, r)
		}
		rep, err := db.Report(ctx, "old1")
		if err != nil || string(rep) != `{"old":1}` {
			t.Errorf("legacy report: %s %v", rep, err)
		}
		if un, err := db.Unfinished(ctx); err != nil || len(un) != 1 || un[0] != "old2" {
			t.Errorf("legacy unfinished: %v %v", un, err)
		}
		testkit.Must(t, db.Close())
		if v, want := sqliteVersion(t, path), int64(latestVersion(t, "sqlite")); v != want {
			t.Errorf("version after open #%d: %d, want %d", i+1, v, want)
		}
	}
}

// TestPostgresConcurrentOpen: replicas starting at once on an empty
// database all open it, and the schema is applied once.
func TestPostgresConcurrentOpen(t *testing.T) {
	url := pgtest.New(t)
	const replicas = 3
	var wg sync.WaitGroup
	dbs := make([]*Postgres, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	for i := range replicas {
		wg.Go(func() {
			<-start
			dbs[i], errs[i] = OpenPostgres(t.Context(), url)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
			continue
		}
		defer dbs[i].Close()
		if _, err := dbs[i].Counts(t.Context()); err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	if n := pgtest.Count(t, url, `SELECT count(*) FROM goose_db_version WHERE version_id = 1`); n != 1 {
		t.Errorf("version 1 recorded %d times", n)
	}
	if n, want := pgtest.Count(t, url, `SELECT count(*) FROM goose_db_version`), latestVersion(t, "postgres")+1; n != want { // versions 0 to the latest
		t.Errorf("%d rows in the version table, want %d", n, want)
	}
}

// TestPostgresMigrationLock: a replica does not migrate while another
// holds the migration lock, and does once it is released.
func TestPostgresMigrationLock(t *testing.T) {
	ctx := t.Context()
	url := pgtest.New(t)
	holder, err := pgx.Connect(ctx, url)
	testkit.Must(t, err)
	defer holder.Close(context.Background())
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrationLockID)
	testkit.Must(t, err)
	done := make(chan error, 1)
	go func() {
		db, err := OpenPostgres(ctx, url)
		if err == nil {
			db.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("opened while another replica held the migration lock: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	if n := pgtest.Count(t, url, `SELECT count(*) FROM pg_tables WHERE tablename = 'runs'`); n != 0 {
		t.Fatal("migrated while another replica held the migration lock")
	}
	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, migrationLockID)
	testkit.Must(t, err)
	select {
	case err := <-done:
		testkit.Must(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting 30s after the lock was released")
	}
	if n := pgtest.Count(t, url, `SELECT count(*) FROM pg_tables WHERE tablename = 'runs'`); n != 1 {
		t.Fatal("no runs table after the migration")
	}
}

func TestOpenMeta(t *testing.T) {
	pg := pgtest.New(t)
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct {
		name, url string
		kind      string // "sqlite" or "postgres"; "" for an error
		file      string // the SQLite file it must create
		errHas    []string
	}{
		{"sqlite relative", "sqlite://runs.db", "sqlite", filepath.Join(dir, "runs.db"), nil},
		{"sqlite relative in a directory", "sqlite://sub/../rel.db", "sqlite", filepath.Join(dir, "rel.db"), nil},
		{"sqlite absolute", "sqlite://" + filepath.Join(dir, "abs.db"), "sqlite", filepath.Join(dir, "abs.db"), nil},
		{"sqlite upper case", "SQLITE://upper.db", "sqlite", filepath.Join(dir, "upper.db"), nil},
		{"postgres", pg, "postgres", "", nil},
		{"postgresql", "postgresql://" + strings.TrimPrefix(pg, "postgres://"), "postgres", "", nil},
		{"other scheme", "mysql://u:p@host/db", "", "", []string{`"mysql"`, "sqlite://", "postgres://", "postgresql://"}},
		{"no scheme", "runs.db", "", "", []string{"runs.db", "no scheme", "sqlite://"}},
		{"no scheme with a secret", "host=x password=hunter2", "", "", []string{"sqlite://"}},
		{"sqlite without a path", "sqlite://", "", "", []string{"sqlite://PATH"}},
		{"postgres unreachable", "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5", "", "", []string{"127.0.0.1:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "sqlite relative in a directory" {
				testkit.Must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
			}
			m, err := OpenMeta(t.Context(), tc.url)
			if tc.kind == "" {
				if err == nil {
					m.Close()
					t.Fatalf("OpenMeta(%q) succeeded", tc.url)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %s", err, s)
					}
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %q shows the password", err)
				}
				return
			}
			testkit.Must(t, err)
			defer m.Close()
			switch m.(type) {
			case *SQLite:
				if tc.kind != "sqlite" {
					t.Fatalf("OpenMeta(%q) is SQLite", tc.url)
				}
			case *Postgres:
				if tc.kind != "postgres" {
					t.Fatalf("OpenMeta(%q) is Postgres", tc.url)
				}
			default:
				t.Fatalf("OpenMeta(%q) is %T", tc.url, m)
			}
			// It works, and it is where the URL says.
			testkit.Must(t, m.Create(t.Context(), runAt(tc.name, "x", 0, nil)))
			if _, err := m.Get(t.Context(), tc.name); err != nil {
				t.Error(err)
			}
			if tc.file != "" {
				if _, err := os.Stat(tc.file); err != nil {
					t.Errorf("database file: %v", err)
				}
			}
		})
	}
	if n := pgtest.Count(t, pg, `SELECT count(*) FROM runs`); n != 2 {
		t.Errorf("%d runs in the PostgreSQL database, want the 2 both schemes made", n)
	}
}

// TestPostgresOpenError: a database that cannot be reached fails fast and
// says which, without the password.
func TestPostgresOpenError(t *testing.T) {
	start := time.Now()
	_, err := OpenPostgres(t.Context(), "postgres://kin:s3cret@127.0.0.1:1/runs?connect_timeout=5")
	if err == nil {
		t.Fatal("opened a database nobody serves")
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "127.0.0.1:1/runs") {
		t.Errorf("error %q: want the address, not the password", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v to fail", time.Since(start))
	}
	if _, err := OpenPostgres(t.Context(), "postgres://%zz"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("bad URL: %v", err)
	}
}

// latestVersion returns the newest schema version of a backend: its
// migrations are numbered from 1 without gaps.
func latestVersion(t *testing.T, dir string) int {
	t.Helper()
	files, err := fs.Glob(migrations, "migrations/"+dir+"/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations of %s: %v %v", dir, files, err)
	}
	return len(files)
}
