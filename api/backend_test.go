package api_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// The suite runs on either backend: the embedded default (SQLite and a
// directory), or, with KINETOSCOPE_TEST_BACKEND=team, the team deployment:
// a real PostgreSQL (with the River queue) and a real S3 server, both
// started by the tests (pgtest, s3test). scripts/test runs it both ways.

// TestMain stops the servers the tests started; run as a replica process
// by TestTeamReplicaKilled, it is that replica instead.
func TestMain(m *testing.M) {
	if stores := os.Getenv(helperReplicaEnv); stores != "" {
		runHelperReplica(stores)
		return
	}
	s3test.MainWith(m, pgtest.Stop)
}

// teamBackend reports whether the suite runs on the team backend.
func teamBackend() bool { return os.Getenv("KINETOSCOPE_TEST_BACKEND") == "team" }

// teamStores holds, per data directory, the database and bucket the team
// backend made for it, so that a server restarted over the same data
// directory finds its runs again.
var teamStores sync.Map // data dir -> [2]string{meta URL, blobs URL}

// withBackend returns cfg on the backend the suite runs on: on the team
// backend, a fresh PostgreSQL database and S3 bucket per data directory,
// unless cfg names its stores itself.
func withBackend(t testing.TB, cfg api.Config) api.Config {
	t.Helper()
	if !teamBackend() || cfg.Meta != "" || cfg.Blobs != "" || cfg.DataDir == "" {
		return cfg
	}
	v, ok := teamStores.Load(cfg.DataDir)
	if !ok {
		v = [2]string{pgtest.New(t), s3test.New(t)}
		teamStores.Store(cfg.DataDir, v)
		t.Cleanup(func() { teamStores.Delete(cfg.DataDir) })
	}
	urls := v.([2]string)
	cfg.Meta, cfg.Blobs = urls[0], urls[1]
	return cfg
}

// embedded returns cfg on the embedded stores whatever the backend: for
// the tests of what only a local data directory has (a corrupt runs.db).
func embedded(cfg api.Config) api.Config {
	cfg.Meta = "sqlite://" + filepath.Join(cfg.DataDir, "runs.db")
	cfg.Blobs = "file://" + filepath.Join(cfg.DataDir, "blobs")
	return cfg
}

// storedObjects counts what the blob store of a data directory holds under
// a kind of key: "sha256" for the blobs, "tmp" for uploads in progress
// (on S3 with the incomplete multipart uploads).
func storedObjects(t testing.TB, data, kind string) int {
	t.Helper()
	v, ok := teamStores.Load(data)
	if !ok {
		return countFiles(t, filepath.Join(data, "blobs", kind))
	}
	bucket := bucketOf(t, v.([2]string)[1])
	c, err := s3test.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	for obj := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: kind + "/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("list %s/%s: %v", bucket, kind, obj.Err)
		}
		n++
	}
	if kind == "tmp" {
		for u := range c.ListIncompleteUploads(ctx, bucket, "", true) {
			if u.Err != nil {
				t.Fatalf("list incomplete uploads of %s: %v", bucket, u.Err)
			}
			n++
		}
	}
	return n
}

// removeBlob deletes a stored blob behind the server's back.
func removeBlob(t testing.TB, data, sha string) {
	t.Helper()
	v, ok := teamStores.Load(data)
	if !ok {
		testkit.Must(t, os.Remove(filepath.Join(data, "blobs", "sha256", sha[:2], sha)))
		return
	}
	c, err := s3test.Client()
	testkit.Must(t, err)
	testkit.Must(t, c.RemoveObject(context.Background(), bucketOf(t, v.([2]string)[1]), "sha256/"+sha[:2]+"/"+sha, minio.RemoveObjectOptions{}))
}

// bucketOf returns the bucket of an s3:// URL.
func bucketOf(t testing.TB, blobs string) string {
	t.Helper()
	u, err := url.Parse(blobs)
	if err != nil || u.Scheme != "s3" {
		t.Fatalf("blob store URL %q: %v", blobs, err)
	}
	return strings.TrimSuffix(u.Host, "/")
}
