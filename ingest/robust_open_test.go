package ingest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// entry is an archive member: a directory when body is nil.
type entry struct {
	name string
	body io.Reader
	size int64
}

// file returns a member holding s.
func file(name, s string) entry { return entry{name, strings.NewReader(s), int64(len(s))} }

// tarOf returns a tar archive of ms.
func tarOf(t *testing.T, ms ...entry) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Typeflag: tar.TypeReg, Size: m.size, Mode: 0o644}
		if m.body == nil {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if m.body != nil {
			if _, err := io.Copy(tw, m.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// zipOf returns a zip archive of ms.
func zipOf(t *testing.T, ms ...entry) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range ms {
		name := m.name
		if m.body == nil {
			name += "/"
		}
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.body != nil {
			if _, err := io.Copy(w, m.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gzipFast compresses b quickly (a bomb of zeros shrinks anyway).
func gzipFast(t *testing.T, r io.Reader) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if _, err := io.Copy(zw, r); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return b.Bytes()
}

// write writes data to dir/name and returns the path.
func write(t *testing.T, dir, name string, data []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// traceDoc is a small trace with one kernel.
const traceDoc = `{"traceEvents": [` + kernelEvent + `]}`

// TestOpenPathological opens directories and archives made to break a
// reader. Every error in Set.Errors must name its file (and member).
func TestOpenPathological(t *testing.T) {
	tests := []struct {
		name   string
		make   func(t *testing.T, dir string) (path string, opt Options)
		traces int
		errs   []string // substrings, one per Set.Errors entry, in order; {dir} is the test directory
		aside  string   // substring of a SetAside reason
	}{
		{"symbolic link loop, FIFO, unreadable file", func(t *testing.T, dir string) (string, Options) {
			write(t, dir, "rank0.json", []byte(traceDoc))
			os.Symlink("loop.json", filepath.Join(dir, "loop.json"))
			os.Symlink(".", filepath.Join(dir, "self"))
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
				t.Fatal(err)
			}
			write(t, dir, "rank1.json", []byte(traceDoc))
			os.Chmod(filepath.Join(dir, "rank1.json"), 0) // root still reads it
			return dir, Options{}
		}, 2, []string{"{dir}/loop.json: stat {dir}/loop.json: too many levels of symbolic links"}, "not a regular file (p-"},
		{"invalid JSON in a directory", func(t *testing.T, dir string) (string, Options) {
			write(t, dir, "rank0.json", []byte(traceDoc))
			write(t, dir, "rank1.json.gz", []byte(gz(`{"traceEvents": [{"ph": "X",, }]}`)))
			return dir, Options{}
		}, 1, []string{"{dir}/rank1.json.gz: invalid JSON at byte offset 28: expected an object key"}, ""},
		{"tar: a directory member, a member named with .., a truncated member", func(t *testing.T, dir string) (string, Options) {
			a := tarOf(t, entry{name: "d.json"}, file("../../etc/rank0.json", traceDoc), file("rank1.json", traceDoc+strings.Repeat(" ", 4096)))
			return write(t, dir, "a.tar", a[:3*512+len(traceDoc)+512+100]), Options{}
		}, 1, []string{"{dir}/a.tar!rank1.json: input ends early, after", "{dir}/a.tar: reading tar archive: truncated: unexpected EOF"}, ""},
		{"tar cut in a header", func(t *testing.T, dir string) (string, Options) {
			return write(t, dir, "a.tar", tarOf(t, file("rank0.json", traceDoc), file("rank1.json", traceDoc))[:1024+300]), Options{}
		}, 1, []string{"{dir}/a.tar: reading tar archive: truncated: unexpected EOF"}, ""},
		{"zip: a bomb member, a directory, a member named with ..", func(t *testing.T, dir string) (string, Options) {
			bomb := io.MultiReader(strings.NewReader(`{"traceEvents": [`), &repeated{40 << 20, ' '})
			a := zipOf(t, entry{name: "bomb_rank0.json", body: bomb}, entry{name: "d.json"}, file("../x_rank1.json", traceDoc))
			return write(t, dir, "a.zip", a), Options{MaxUncompressedBytes: 8 << 20}
		}, 1, []string{"{dir}/a.zip!bomb_rank0.json: decompressed size limit exceeded: more than 8388608 uncompressed bytes"}, ""},
		{"tar.gz: a bomb in a member that is not a trace", func(t *testing.T, dir string) (string, Options) {
			a := tarOf(t, file("rank0.json", traceDoc), entry{"zeros.bin", &repeated{40 << 20, 0}, 40 << 20}, file("rank1.json", traceDoc))
			return write(t, dir, "a.tar.gz", gzipFast(t, bytes.NewReader(a))), Options{MaxUncompressedBytes: 8 << 20}
		}, 1, []string{"{dir}/a.tar.gz: reading tar archive: decompressed size limit exceeded: members that are not traces"}, ""},
		{"gzip members concatenated, in a directory", func(t *testing.T, dir string) (string, Options) {
			write(t, dir, "rank0.json.gz", []byte(gz(`{"traceEvents": [`+kernelEvent)+gz(", "+kernelEvent+"]}")))
			return dir, Options{}
		}, 1, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path, opt := tt.make(t, dir)
			set := openWithin(t, path, opt, 5*time.Second)
			if len(set.Traces) != tt.traces {
				t.Errorf("%d traces, want %d", len(set.Traces), tt.traces)
			}
			if len(set.Errors) != len(tt.errs) {
				t.Errorf("errors %v, want %d", set.Errors, len(tt.errs))
			}
			for i, e := range set.Errors {
				if want := strings.ReplaceAll(tt.errs[min(i, len(tt.errs)-1)], "{dir}", dir); !strings.Contains(e.Error(), want) {
					t.Errorf("error %q, want %q", e, want)
				}
			}
			if tt.aside != "" && !strings.Contains(fmt.Sprint(set.SetAside), tt.aside) {
				t.Errorf("set aside %v, want %q", set.SetAside, tt.aside)
			}
		})
	}
}

// openWithin opens path, failing the test if that takes longer than d (a
// hang).
func openWithin(t *testing.T, path string, opt Options, d time.Duration) *Set {
	t.Helper()
	type result struct {
		set *Set
		err error
	}
	done := make(chan result, 1)
	go func() {
		set, err := Open(path, opt)
		done <- result{set, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.set
	case <-time.After(d):
		t.Fatalf("Open(%s) still running after %v", path, d)
	}
	return nil
}

// TestOpenManySmallFiles opens a directory of 2,000 small traces: each
// costs a small block, not a full one (1.6 MB allocated per file before,
// 330 KB now).
func TestOpenManySmallFiles(t *testing.T) {
	dir := t.TempDir()
	const n = 2000
	for i := range n {
		write(t, dir, fmt.Sprintf("w%d_rank%d.json", i, i), []byte(traceDoc))
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	set := openWithin(t, dir, Options{}, 20*time.Second)
	runtime.ReadMemStats(&m1)
	if len(set.Traces) != n || len(set.Errors) != 0 {
		t.Errorf("%d traces, errors %v", len(set.Traces), set.Errors)
	}
	if per := (m1.TotalAlloc - m0.TotalAlloc) / n; per > 512<<10 {
		t.Errorf("%d KB allocated per file", per>>10)
	}
}

// TestOpenNotRegular checks that a path that is neither a regular file nor
// a directory is refused, not read (a FIFO would block).
func TestOpenNotRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo.json")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(p, Options{})
	if err == nil || !strings.Contains(err.Error(), p+": not a regular file or directory") {
		t.Errorf("error %v", err)
	}
}
