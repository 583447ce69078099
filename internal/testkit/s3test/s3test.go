// Package s3test runs a real S3-compatible server for tests: Versity's
// gateway (github.com/versity/versitygw) with its POSIX backend over a
// temporary directory, on a free 127.0.0.1 port, once per test process.
//
// The gateway is built from the Go module proxy with `go install` into
// the user's cache directory (kinetoscope/versitygw/VERSION), once per
// machine: the first build takes a minute or more; later test runs reuse
// it. A failed build or start fails the test; it never skips.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { s3test.Main(m) }
//
//	func TestX(t *testing.T) {
//		url := s3test.New(t) // s3://BUCKET?endpoint=127.0.0.1:PORT&region=us-east-1&insecure=true
//		s, err := store.OpenS3(ctx, url)
//		...
//	}
package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"kinetoscope/internal/testkit"
)

// Version is the versitygw module version the harness builds.
const Version = "v1.8.0"

// The fixed credentials and region of the test server.
const (
	AccessKey = "kinetoscope-test"
	SecretKey = "kinetoscope-test-secret"
	Region    = "us-east-1"
)

const pkg = "github.com/versity/versitygw/cmd/versitygw"

// server is the one gateway of this test process.
var server struct {
	once     sync.Once
	err      error
	endpoint string // 127.0.0.1:PORT
	bin      string // the gateway's binary
	root     string // the POSIX backend's directory: a bucket is a directory in it
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has exited
	log      *syncBuffer
	built    time.Duration // how long this process spent building the gateway; 0 when cached
}

var (
	mainCalled atomic.Bool
	buckets    atomic.Int64
)

// Main runs the tests, stops the server if one was started, and exits
// with the tests' status. Call it from TestMain.
func Main(m *testing.M) { MainWith(m) }

// MainWith is Main for a package that uses other harnesses too: after the
// tests it also calls their stop functions (pgtest.Stop, say).
func MainWith(m *testing.M, stops ...func()) {
	mainCalled.Store(true)
	code := m.Run()
	stop()
	for _, f := range stops {
		f()
	}
	os.Exit(code)
}

// New returns the URL of a fresh, empty bucket on the test server,
// starting the server on first use:
// s3://BUCKET?endpoint=127.0.0.1:PORT&region=us-east-1&insecure=true.
// It sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to the server's
// credentials for the test (so the test cannot be parallel), and removes
// the bucket when the test ends.
func New(tb testing.TB) string {
	tb.Helper()
	if !mainCalled.Load() {
		tb.Fatal("s3test: call s3test.Main(m) from TestMain, so that the server is stopped")
	}
	server.once.Do(start)
	if server.err != nil {
		tb.Fatalf("s3test: %v", server.err)
	}
	if server.built > 0 {
		tb.Logf("s3test: built versitygw %s in %s", Version, server.built.Round(100*time.Millisecond))
		server.built = 0
	}
	tb.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	tb.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	bucket := bucketName(tb.Name())
	c, err := Client()
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: Region}); err != nil {
		tb.Fatalf("s3test: create bucket %s at %s: %v\nserver output:\n%s", bucket, server.endpoint, err, server.log)
	}
	tb.Cleanup(func() {
		// The gateway keeps a bucket, its objects and its incomplete
		// uploads under root/BUCKET.
		if err := os.RemoveAll(filepath.Join(server.root, bucket)); err != nil {
			tb.Errorf("s3test: remove bucket %s: %v", bucket, err)
		}
	})
	return fmt.Sprintf("s3://%s?endpoint=%s&region=%s&insecure=true", bucket, server.endpoint, Region)
}

// Client returns a minio-go client of the running test server, for tests
// that look at a bucket directly (its objects, its incomplete uploads).
func Client() (*minio.Client, error) {
	if server.endpoint == "" {
		return nil, errors.New("the test server is not running: call New first")
	}
	c, err := minio.New(server.endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(AccessKey, SecretKey, ""),
		Region:       Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", server.endpoint, err)
	}
	return c, nil
}

var nonBucketChars = regexp.MustCompile(`[^a-z0-9]+`)

// bucketName returns a valid, unique bucket name for a test.
func bucketName(test string) string {
	name := fmt.Sprintf("t%d-%s", buckets.Add(1), nonBucketChars.ReplaceAllString(strings.ToLower(test), "-"))
	if len(name) > 63 {
		name = name[:63]
	}
	return strings.TrimRight(name, "-")
}

// start builds the gateway if needed and starts it; it sets server.err
// when it cannot.
func start() {
	bin, built, err := binary()
	if err != nil {
		server.err = err
		return
	}
	server.built = built
	root, err := os.MkdirTemp("", "kinetoscope-s3test-")
	if err != nil {
		server.err = fmt.Errorf("server directory: %w", err)
		return
	}
	server.root = root
	// A free port can be taken by another process between our probe and
	// the gateway's listen: try a few.
	server.bin = bin
	for range 3 {
		port, err := testkit.FreePort()
		if err != nil {
			server.err = err
			return
		}
		if server.err = run(bin, root, fmt.Sprintf("127.0.0.1:%d", port)); server.err == nil {
			return
		}
	}
}

// Down kills the test server, as an outage would (SIGKILL: no request is
// finished); its buckets and objects stay, and Up brings it back on
// the same endpoint. A test that stops it starts it again before it ends
// (Down registers that as a cleanup too).
func Down(tb testing.TB) {
	tb.Helper()
	if server.cmd == nil {
		tb.Fatal("s3test: Down before New")
	}
	select {
	case <-server.exited:
		return // stopped already
	default:
	}
	server.cmd.Process.Kill()
	<-server.exited
	tb.Cleanup(func() { Up(tb) })
}

// Up starts the test server again after Down, on the same endpoint
// over the same directory; it does nothing when the server runs.
func Up(tb testing.TB) {
	tb.Helper()
	select {
	case <-server.exited:
	default:
		return
	}
	var err error
	for range 50 { // the port may linger a moment after the kill
		if err = run(server.bin, server.root, server.endpoint); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("s3test: start the server again on %s: %v", server.endpoint, err)
}

// run starts the gateway on endpoint and waits until it answers.
func run(bin, root, endpoint string) error {
	cmd := exec.Command(bin,
		"--access", AccessKey, "--secret", SecretKey, "--region", Region,
		"--port", endpoint, "--keep-alive", "--quiet",
		"posix", root)
	cmd.Env = childEnv()
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return fmt.Errorf("versitygw exited at start (%v):\n%s", cmd.ProcessState, log)
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get("http://" + endpoint + "/")
		if err == nil {
			resp.Body.Close() // any answer, even "access denied", means it is up
			server.endpoint, server.cmd, server.exited, server.log = endpoint, cmd, exited, log
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("versitygw did not answer on %s within 30s: %v\n%s", endpoint, err, log)
		}
	}
}

// stop ends the gateway and removes its directory.
func stop() {
	if server.cmd != nil {
		server.cmd.Process.Signal(os.Interrupt)
		select {
		case <-server.exited:
		case <-time.After(5 * time.Second):
			server.cmd.Process.Kill()
			<-server.exited
		}
	}
	if server.root != "" {
		os.RemoveAll(server.root)
	}
}

// childEnv is the environment of the gateway: ours without the variables
// that configure versitygw, so that only the flags do.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VGW_") && !strings.HasPrefix(kv, "ROOT_") {
			env = append(env, kv)
		}
	}
	return env
}

// binary returns the path of the gateway's binary, building it first when
// the cache lacks it, and how long that build took (0 when cached).
// Parallel test processes wait for one build through a lock file.
func binary() (string, time.Duration, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "kinetoscope", "versitygw", Version)
	bin := filepath.Join(dir, "versitygw")
	if _, err := os.Stat(bin); err == nil {
		return bin, 0, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, fmt.Errorf("versitygw cache: %w", err)
	}
	unlock, err := lock(filepath.Join(dir, "build.lock"))
	if err != nil {
		return "", 0, fmt.Errorf("versitygw cache: %w", err)
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, 0, nil // another process built it while we waited
	}
	t0 := time.Now()
	if err := build(dir, bin); err != nil {
		return "", 0, err
	}
	return bin, time.Since(t0), nil
}

// build installs the gateway into a temporary directory beside bin and
// moves it into place, so that bin is either absent or whole.
func build(dir, bin string) error {
	gobin, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("versitygw build: %w", err)
	}
	defer os.RemoveAll(gobin)
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gocmd, "install", pkg+"@"+Version)
	cmd.Dir = gobin // outside any module: `go install pkg@version` ignores it anyway
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build versitygw: %s install %s@%s: %v\n%s", gocmd, pkg, Version, err, out.Bytes())
	}
	if err := os.Rename(filepath.Join(gobin, "versitygw"), bin); err != nil {
		return fmt.Errorf("versitygw build: %w", err)
	}
	return nil
}

// syncBuffer is a bytes.Buffer for a child's output, safe to read while
// the child writes it; it keeps the last 64 KiB.
type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write appends p, dropping the oldest bytes past 64 KiB.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 64<<10; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what was written.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
