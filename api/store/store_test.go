package store

import (
	"context"
	"errors"
	"io"
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
	must(t, d.Delete(ctx, sha))
	if _, err := d.Open(ctx, sha); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open after Delete: %v", err)
	}
	if ok, err := d.Has(ctx, sha); ok || err != nil {
		t.Fatalf("Has after Delete: %v %v", ok, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newRun(id string, labels map[string]string, files ...File) *Run {
	now := time.Now().UTC()
	return &Run{ID: id, Name: id, Labels: labels, Status: StatusQueued, Files: files, Created: now, Updated: now}
}

func TestSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := OpenSQLite(path)
	must(t, err)
	shared := File{Name: "a.json.gz", SHA256: strings.Repeat("a", 64), Size: 10, Kind: "gzip"}
	own := File{Name: "b.json.gz", SHA256: strings.Repeat("b", 64), Size: 20, Kind: "gzip"}
	must(t, db.Create(ctx, newRun("r1", map[string]string{"gpu": "h100", "tp": "8"}, shared)))
	time.Sleep(time.Millisecond)
	must(t, db.Create(ctx, newRun("r2", map[string]string{"gpu": "h100"}, shared, own)))
	must(t, db.SetStatus(ctx, "r1", StatusRunning, Progress{Phase: "reading", Bytes: 5}, ""))
	must(t, db.SetReport(ctx, "r2", []byte(`{"ranks":[]}`), Progress{Phase: "done"}))

	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, "r2 r1"},
		{map[string]string{"gpu": "h100"}, "r2 r1"},
		{map[string]string{"gpu": "h100", "tp": "8"}, "r1"},
		{map[string]string{"gpu": "mi300"}, ""},
	} {
		runs, total, err := db.List(ctx, ListOptions{Labels: tc.labels})
		must(t, err)
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		if got := strings.Join(ids, " "); got != tc.want || total != len(ids) {
			t.Errorf("List %v: %q (total %d), want %q", tc.labels, got, total, tc.want)
		}
	}
	if un, err := db.Unfinished(ctx); err != nil || len(un) != 1 || un[0] != "r1" {
		t.Errorf("Unfinished: %v %v", un, err)
	}
	if _, err := db.Report(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("report of unfinished run: %v", err)
	}
	// Deleting r2 frees only its own blob; r1 still uses the shared one.
	orphans, err := db.Delete(ctx, "r2")
	must(t, err)
	if len(orphans) != 1 || orphans[0] != own.SHA256 {
		t.Errorf("orphans of r2: %v", orphans)
	}
	must(t, db.Close())

	db, err = OpenSQLite(path)
	must(t, err)
	defer db.Close()
	r, err := db.Get(ctx, "r1")
	must(t, err)
	if r.Status != StatusRunning || r.Progress.Bytes != 5 || r.Labels["tp"] != "8" || len(r.Files) != 1 {
		t.Errorf("r1 after reopening: %+v", r)
	}
	if _, err := db.Get(ctx, "r2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted run: %v", err)
	}
	if _, err := db.Delete(ctx, "r2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
}
