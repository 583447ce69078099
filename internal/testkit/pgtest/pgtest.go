// Package pgtest gives tests a real, throwaway PostgreSQL: one cluster per
// test process, made by initdb in a temporary directory and started by
// pg_ctl on 127.0.0.1 at a free port, and a fresh empty database for each
// test that asks (New). Nothing is mocked and nothing is skipped: when the
// PostgreSQL binaries are missing, the test fails and says what to install.
//
// A package whose tests use it stops the cluster from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// The cluster also stops on SIGINT or SIGTERM, and a watchdog process stops
// it and removes its directory should the test process die without either
// (a test timeout's panic, SIGKILL).
//
// As root (CI, these machines) initdb and postgres refuse to run, so they
// run as the "postgres" user, which owns the cluster's directory.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"kinetoscope/internal/testkit"
)

// InstallHint is what to do when the PostgreSQL binaries are missing.
const InstallHint = "install Debian's postgresql package (apt-get install postgresql; scripts/test does it)"

// The process's one cluster, started by the first New.
var (
	startOnce sync.Once
	shared    *cluster
	startErr  error
	dbSeq     atomic.Int64
)

// cluster is a running PostgreSQL server and its directory.
type cluster struct {
	dir   string // the temporary directory: data/, the socket, the log
	bin   string // the directory of initdb, pg_ctl and postgres
	port  int
	cred  *syscall.Credential // the postgres user's, when we are root
	admin *pgxpool.Pool       // to the "postgres" database, for CREATE DATABASE

	stopOnce sync.Once
}

// New returns the URL of a new, empty database in the process's cluster,
// starting the cluster on first use; the database is dropped when t ends.
// It fails t when no cluster can be started.
func New(t testing.TB) string {
	t.Helper()
	c, err := get()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// FORCE: a connection the test left open does not keep it.
		if _, err := c.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return c.url(name)
}

// Main runs the tests of m, then stops the cluster if one was started, and
// exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the process's cluster and removes its directory; it does
// nothing when none was started. Main calls it.
func Stop() {
	if shared != nil {
		shared.stop()
	}
}

// Down stops the process's cluster (pg_ctl stop -m fast: the clients'
// connections are cut, what was committed stays: the cluster runs with
// synchronous_commit off, which an immediate stop would make lose the
// last commits), as an outage would; its databases stay,
// and Up starts it again on the same port. A test that stops it starts it
// again before it ends (Down registers that as a cleanup too).
func Down(tb testing.TB) {
	tb.Helper()
	if shared == nil {
		tb.Fatal("pgtest: Down before New")
	}
	if err := run(shared.command(filepath.Join(shared.bin, "pg_ctl"), "stop", "-D", shared.data(), "-m", "fast", "-w", "-t", "30")); err != nil {
		tb.Fatalf("pgtest: stop the cluster: %v", err)
	}
	tb.Cleanup(func() { Up(tb) })
}

// Up starts the cluster again after Down, on the same port; it does
// nothing when the cluster runs.
func Up(tb testing.TB) {
	tb.Helper()
	if err := run(shared.command(filepath.Join(shared.bin, "pg_ctl"), "status", "-D", shared.data())); err == nil {
		return
	}
	if err := shared.pgctlStart(); err != nil {
		tb.Fatalf("pgtest: start the cluster again: %v", err)
	}
	shared.admin.Reset() // its connections died with the server
}

// get returns the process's cluster, starting it the first time.
func get() (*cluster, error) {
	startOnce.Do(func() {
		shared, startErr = start()
		if startErr == nil {
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			go func() {
				s := <-sig
				shared.stop()
				fmt.Fprintf(os.Stderr, "pgtest: %v: stopped the PostgreSQL cluster\n", s)
				os.Exit(1)
			}()
		}
	})
	return shared, startErr
}

// url returns the URL of database name in the cluster.
func (c *cluster) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// findBin returns the directory holding initdb and pg_ctl: where PATH
// finds initdb, else the newest /usr/lib/postgresql/VERSION/bin.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if isExec(filepath.Join(dir, "pg_ctl")) && isExec(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		if isExec(filepath.Join(dir, "initdb")) && isExec(filepath.Join(dir, "pg_ctl")) && isExec(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("initdb and pg_ctl are not in PATH nor in /usr/lib/postgresql/*/bin: %s", InstallHint)
}

// version returns the major version of /usr/lib/postgresql/VERSION/bin.
func version(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// start makes and starts a cluster.
func start() (*cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("cluster directory: %w", err)
	}
	c := &cluster{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if c.cred, err = postgresUser(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("cluster directory: %w", err)
		}
	}
	if err := c.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A free port may be taken by someone else before postgres binds it:
	// try a few.
	for try := 0; ; try++ {
		if c.port, err = testkit.FreePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err = c.pgctlStart(); err == nil || try == 4 {
			break
		}
	}
	if err != nil {
		c.removeDir()
		return nil, err
	}
	if err := c.watchdog(); err != nil {
		c.stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.admin, err = pgxpool.New(ctx, c.url("postgres")); err == nil {
		err = c.admin.Ping(ctx)
	}
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("connect to the cluster: %w", err)
	}
	return c, nil
}

// postgresUser returns the credential of the "postgres" user.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres user: %w (%s)", err, InstallHint)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command returns the command running program path, as the postgres user
// when we are root, in the cluster's directory.
func (c *cluster) command(path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(cmd.Env, "HOME="+c.dir, "USER=postgres", "LOGNAME=postgres")
	}
	return cmd
}

// run runs a command and returns its output in its error.
func run(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// initdb makes the cluster's data directory, set up to be fast rather
// than durable: nothing it holds outlives the tests.
func (c *cluster) initdb() error {
	if err := run(c.command(filepath.Join(c.bin, "initdb"), "-D", c.data(), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	conf := fmt.Sprintf(`
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
autovacuum = off
max_connections = 200
shared_buffers = 32MB
log_min_messages = warning
`, c.dir)
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("postgresql.conf: %w", err)
	}
	_, err = f.WriteString(conf)
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err != nil {
		return fmt.Errorf("postgresql.conf: %w", err)
	}
	return nil
}

// pgctlStart starts the server and waits until it accepts connections.
func (c *cluster) pgctlStart() error {
	log := filepath.Join(c.dir, "postgres.log")
	err := run(c.command(filepath.Join(c.bin, "pg_ctl"), "start", "-D", c.data(), "-l", log, "-w", "-t", "60",
		"-o", "-p "+strconv.Itoa(c.port)))
	if err != nil {
		tail, _ := os.ReadFile(log)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("start PostgreSQL: %w\nserver log:\n%s", err, tail)
	}
	return nil
}

// watchdog starts a process, in a session of its own so that a ^C to the
// tests does not end it first, that stops the cluster and removes its
// directory once this process is gone, if Stop did not.
func (c *cluster) watchdog() error {
	script := `while [ -d "/proc/$1" ] && [ -d "$2" ]; do sleep 1; done
if [ -d "$2" ]; then "$3/pg_ctl" stop -D "$2/data" -m immediate >/dev/null 2>&1; rm -rf "$2"; fi`
	cmd := c.command("/bin/sh", "-c", script, "pgtest-watchdog", strconv.Itoa(os.Getpid()), c.dir, c.bin)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest watchdog: %w", err)
	}
	go cmd.Wait() // reap it should it end first
	return nil
}

// stop stops the server at once (the data is thrown away) and removes the
// cluster's directory.
func (c *cluster) stop() {
	c.stopOnce.Do(func() {
		if c.admin != nil {
			c.admin.Close()
		}
		if err := run(c.command(filepath.Join(c.bin, "pg_ctl"), "stop", "-D", c.data(), "-m", "immediate", "-w", "-t", "30")); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop PostgreSQL: %v\n", err)
		}
		c.removeDir()
	})
}

func (c *cluster) removeDir() {
	if err := os.RemoveAll(c.dir); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: remove %s: %v\n", c.dir, err)
	}
}

// Count returns the number that query (a SELECT count(*) ..., with
// args in $N placeholders) answers in the database at url.
func Count(tb testing.TB, url, query string, args ...any) int {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		tb.Fatalf("pgtest: %s: %v", query, err)
	}
	return n
}
