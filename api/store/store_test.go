package store

import (
	"context"
	"errors"
	"io"
	"kinetoscope/internal/testkit"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// failingReader returns some bytes, then an error: an interrupted upload.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n = 0
		return copy(p, "partial"), nil
	}
	return 0, errors.New("connection reset")
}

func TestDirPut(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	sha, n, err := d.Put(ctx, strings.NewReader("hello"))
	if err != nil || n != 5 || sha != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Fatalf("Put: %s %d %v", sha, n, err)
	}
	if _, _, err := d.Put(ctx, &failingReader{n: 1}); err == nil {
		t.Fatal("interrupted Put succeeded")
	}
	var files []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 {
		t.Fatalf("files after one good and one interrupted Put: %v", files)
	}
	rc, err := d.Open(ctx, sha)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" {
		t.Fatalf("Open: %q", b)
	}
	if _, err := d.Open(ctx, "../../etc/passwd"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open with a bad hash: %v", err)
	}
	if ok, err := d.Has(ctx, sha); !ok || err != nil {
		t.Fatalf("Has of a stored blob: %v %v", ok, err)
	}
	testkit.Must(t, d.Delete(ctx, sha))
	if _, err := d.Open(ctx, sha); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open after Delete: %v", err)
	}
	if ok, err := d.Has(ctx, sha); ok || err != nil {
		t.Fatalf("Has after Delete: %v %v", ok, err)
	}
}

func newRun(id string, labels map[string]string, files ...File) *Run {
	now := time.Now().UTC()
	return &Run{ID: id, Name: id, Labels: labels, Status: StatusQueued, Files: files, Created: now, Updated: now}
}
