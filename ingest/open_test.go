package ingest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenPublicDir(t *testing.T) {
	set, err := Open(publicDir(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two CPU-only traces are set aside.
	if len(set.SetAside) != 2 {
		t.Errorf("set aside %d traces, want 2: %+v", len(set.SetAside), set.SetAside)
	}
	// The public traces come from different jobs; several claim rank 0.
	dup := 0
	for _, e := range set.Errors {
		if !strings.Contains(e.Error(), "duplicate rank") {
			t.Errorf("unexpected error: %v", e)
		}
		dup++
	}
	total := len(set.Traces) + len(set.SetAside) + dup
	if want := len(publicTraces(t)); total != want {
		t.Errorf("traces %d + set aside %d + duplicates %d = %d files, want %d",
			len(set.Traces), len(set.SetAside), dup, total, want)
	}
	for i := 1; i < len(set.Traces); i++ {
		a, b := set.Traces[i-1].Rank, set.Traces[i].Rank
		if b >= 0 && (a < 0 || a >= b) {
			t.Errorf("traces not sorted by unique rank: %d before %d", a, b)
		}
	}
}

// copyFile copies a public trace into dir under name.
func copyFile(t *testing.T, src, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestOpenProfileDir(t *testing.T) {
	pub := publicDir(t)
	dir := t.TempDir()
	copyFile(t, filepath.Join(pub, "hta-sampled-rank-0.json.gz"), dir, "a_rank0.pt.trace.json.gz")
	copyFile(t, filepath.Join(pub, "hta-sampled-rank-1.json.gz"), dir, "b_rank1.pt.trace.json.gz")
	copyFile(t, filepath.Join(pub, "hta-sampled-rank-0.json.gz"), dir, "capture_traces/c.pt.trace.json.gz")
	copyFile(t, filepath.Join(pub, "hta-rank-non-gpu.json.gz"), dir, "host.async_llm.pt.trace.json.gz")
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"traceEvents": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "truth.json"), []byte(`{"steps": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Traces) != 2 || set.Traces[0].Rank != 0 || set.Traces[1].Rank != 1 {
		t.Errorf("traces: %d, want ranks 0 and 1", len(set.Traces))
	}
	if len(set.Captures) != 1 || !set.Captures[0].Capture {
		t.Errorf("captures: %d, want 1", len(set.Captures))
	}
	if len(set.SetAside) != 2 || !strings.Contains(set.SetAside[0].Path, "async_llm") ||
		!strings.Contains(set.SetAside[1].Reason, "no traceEvents") {
		t.Errorf("set aside: %+v", set.SetAside)
	}
	if len(set.Errors) != 1 || !strings.Contains(set.Errors[0].Error(), "broken.json") {
		t.Errorf("errors: %v", set.Errors)
	}
}

func TestOpenDuplicateRank(t *testing.T) {
	pub := publicDir(t)
	dir := t.TempDir()
	copyFile(t, filepath.Join(pub, "hta-sampled-rank-0.json.gz"), dir, "x.json.gz")
	copyFile(t, filepath.Join(pub, "hta-sampled-rank-0.json.gz"), dir, "y.json.gz")
	set, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Traces) != 1 || len(set.Errors) != 1 {
		t.Fatalf("traces %d errors %d, want 1 and 1", len(set.Traces), len(set.Errors))
	}
	msg := set.Errors[0].Error()
	if !strings.Contains(msg, "x.json.gz") || !strings.Contains(msg, "y.json.gz") {
		t.Errorf("error does not name both files: %s", msg)
	}
	var dup *DuplicateRankError
	if !errors.As(set.Errors[0], &dup) || dup.Rank != 0 || set.Errors[0].Trace == nil {
		t.Errorf("error %v is not a DuplicateRankError with its trace", set.Errors[0])
	}
}

// archive writes the named public traces into an archive of the given kind.
func archive(t *testing.T, kind string, members map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	switch kind {
	case "zip":
		zw := zip.NewWriter(&buf)
		for name, src := range members {
			b, _ := os.ReadFile(src)
			w, _ := zw.Create(name)
			w.Write(b)
		}
		zw.Close()
	default:
		var tw *tar.Writer
		var gw *gzip.Writer
		if kind == "tar.gz" {
			gw = gzip.NewWriter(&buf)
			tw = tar.NewWriter(gw)
		} else {
			tw = tar.NewWriter(&buf)
		}
		for name, src := range members {
			b, _ := os.ReadFile(src)
			tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
			tw.Write(b)
		}
		tw.Close()
		if gw != nil {
			gw.Close()
		}
	}
	p := filepath.Join(t.TempDir(), "profile."+kind)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenArchives(t *testing.T) {
	pub := publicDir(t)
	members := map[string]string{
		"prof/r0.pt.trace.json.gz":                filepath.Join(pub, "hta-sampled-rank-0.json.gz"),
		"prof/r1.pt.trace.json.gz":                filepath.Join(pub, "hta-sampled-rank-1.json.gz"),
		"prof/capture_traces/r0.pt.trace.json.gz": filepath.Join(pub, "hta-sampled-rank-0.json.gz"),
	}
	for _, kind := range []string{"tar", "tar.gz", "zip"} {
		t.Run(kind, func(t *testing.T) {
			set, err := Open(archive(t, kind, members), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(set.Traces) != 2 || len(set.Captures) != 1 || len(set.Errors) != 0 {
				t.Fatalf("traces %d captures %d errors %v", len(set.Traces), len(set.Captures), set.Errors)
			}
			if !strings.Contains(set.Traces[1].Path, "!prof/r1.pt.trace.json.gz") {
				t.Errorf("member path %q", set.Traces[1].Path)
			}
		})
	}
}
