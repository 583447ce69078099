package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// connect opens a connection to url, closed when t ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestNew(t *testing.T) {
	ctx := context.Background()
	var dropped string
	t.Run("two databases", func(t *testing.T) {
		a, b := New(t), New(t)
		if a == b {
			t.Fatalf("New twice gave one database: %s", a)
		}
		ca, cb := connect(t, a), connect(t, b)
		if _, err := ca.Exec(ctx, `CREATE TABLE only_in_a (x int)`); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := cb.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'`).Scan(&n); err != nil || n != 0 {
			t.Errorf("a table of one database is in the other: %d %v", n, err)
		}
		var addr string
		if err := ca.QueryRow(ctx, `SELECT host(inet_server_addr())`).Scan(&addr); err != nil || addr != "127.0.0.1" {
			t.Errorf("server address %q %v, want 127.0.0.1", addr, err)
		}
		if err := ca.QueryRow(ctx, `SELECT current_database()`).Scan(&dropped); err != nil {
			t.Fatal(err)
		}
	})
	// The subtest's cleanup dropped its databases, even with connections
	// still open when it ran.
	admin := connect(t, shared.url("postgres"))
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, dropped).Scan(&n); err != nil || n != 0 {
		t.Errorf("database %s after its test: %d %v", dropped, n, err)
	}
	// The cluster is fast rather than durable, and its socket is in its
	// own directory.
	var fsync string
	if err := admin.QueryRow(ctx, `SHOW fsync`).Scan(&fsync); err != nil || fsync != "off" {
		t.Errorf("fsync = %q %v", fsync, err)
	}
	if _, err := os.Stat(filepath.Join(shared.dir, ".s.PGSQL."+strconv.Itoa(shared.port))); err != nil {
		t.Errorf("unix socket: %v", err)
	}
}

func TestFindBin(t *testing.T) {
	bin, err := findBin()
	if err != nil {
		t.Fatal(err)
	}
	for _, prog := range []string{"initdb", "pg_ctl", "postgres"} {
		if !isExec(filepath.Join(bin, prog)) {
			t.Errorf("%s has no %s", bin, prog)
		}
	}
	// Without PATH, the Debian directory is found.
	t.Setenv("PATH", "")
	if bin, err := findBin(); err != nil || filepath.Dir(filepath.Dir(bin)) != "/usr/lib/postgresql" {
		t.Errorf("findBin without PATH: %q %v", bin, err)
	}
}
