package ingest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// memSource is a Source over bytes in memory, as an object store's reader
// would be: no local path.
func memSource(name string, b []byte) Source {
	return Source{Name: name, Size: int64(len(b)), Open: func() (SourceReader, error) {
		return memReader{bytes.NewReader(b)}, nil
	}}
}

type memReader struct{ *bytes.Reader }

func (memReader) Close() error { return nil }

// archives returns the files as a tar.gz and as a zip archive.
func archives(t *testing.T, names []string, files [][]byte) (tgz, zp []byte) {
	t.Helper()
	var tb, zb bytes.Buffer
	gw := gzip.NewWriter(&tb)
	tw := tar.NewWriter(gw)
	zw := zip.NewWriter(&zb)
	for i, name := range names {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[i])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[i])
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(files[i])
	}
	for _, c := range []interface{ Close() error }{tw, gw, zw} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return tb.Bytes(), zb.Bytes()
}

// OpenInput reads files and archives held anywhere exactly as it reads the
// same bytes from disk (FromPaths): the same traces, the same model, the
// same paths.
func TestOpenInputAsFiles(t *testing.T) {
	paths := realTraces(t, "eager")
	if len(paths) != 2 {
		t.Fatalf("eager sample: %v", paths)
	}
	var names []string
	var files [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(p))
		files = append(files, b)
	}
	tgz, zp := archives(t, names, files)
	work := t.TempDir()
	for name, b := range map[string][]byte{"run.tar.gz": tgz, "run.zip": zp} {
		if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	local := make([]string, len(names))
	for i, name := range names {
		local[i] = filepath.Join(work, name)
		if err := os.WriteFile(local[i], files[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		srcs  []Source
		paths []string
	}{
		{"rank files", []Source{memSource(local[0], files[0]), memSource(local[1], files[1])}, local},
		{"one rank file", []Source{memSource(local[1], files[1])}, local[1:]},
		{"tar.gz", []Source{memSource(filepath.Join(work, "run.tar.gz"), tgz)}, []string{filepath.Join(work, "run.tar.gz")}},
		{"zip", []Source{memSource(filepath.Join(work, "run.zip"), zp)}, []string{filepath.Join(work, "run.zip")}},
		{"archive beside a file", []Source{memSource(filepath.Join(work, "run.zip"), zp), memSource(local[0], files[0])},
			[]string{filepath.Join(work, "run.zip"), local[0]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenInput(Input{Name: strings.Join(tc.paths, " "), Sources: tc.srcs}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := OpenInput(FromPaths(tc.paths), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != want.Path || len(got.Traces) != len(want.Traces) || len(got.Errors) != len(want.Errors) {
				t.Fatalf("sources: path %q, %d traces, errors %v; files: path %q, %d traces, errors %v",
					got.Path, len(got.Traces), got.Errors, want.Path, len(want.Traces), want.Errors)
			}
			if len(got.Traces) == 0 {
				t.Fatal("no traces")
			}
			for i := range got.Traces {
				g, w := got.Traces[i], want.Traces[i]
				if g.Path != w.Path {
					t.Errorf("trace %d: path %q, want %q", i, g.Path, w.Path)
				}
				if !reflect.DeepEqual(modelOf(g), modelOf(w)) {
					t.Errorf("trace %d (%s): the model differs from the one read from disk", i, g.Path)
				}
			}
			for i := range got.Errors {
				if got.Errors[i].Error() != want.Errors[i].Error() {
					t.Errorf("error %d: %v, want %v", i, got.Errors[i], want.Errors[i])
				}
			}
		})
	}
}

// A source that cannot be opened, or that is no trace, is recorded against
// its name; the others are still read.
func TestOpenInputErrors(t *testing.T) {
	good, err := os.ReadFile(realTraces(t, "eager")[0])
	if err != nil {
		t.Fatal(err)
	}
	broken := Source{Name: "gone.json.gz", Size: 10, Open: func() (SourceReader, error) { return nil, errors.New("object vanished") }}
	srcs := []Source{memSource("rank0.json.gz", good), broken, memSource("bad.json", []byte(`{"traceEvents": [{"ph": `))}
	set, err := OpenInput(Input{Name: "run", Sources: srcs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Traces) != 1 || set.Traces[0].Path != "rank0.json.gz" {
		t.Fatalf("traces: %d", len(set.Traces))
	}
	var msgs []string
	for _, e := range set.Errors {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"gone.json.gz: object vanished", "bad.json"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors %q lack %q", all, want)
		}
	}
	if _, err := OpenInput(Input{Name: "run"}, Options{}); err == nil {
		t.Error("OpenInput of nothing succeeded")
	}
	if _, err := OpenInput(FromPaths(nil), Options{}); err == nil {
		t.Error("OpenInput of no path succeeded")
	}
}

// A source whose format is given is opened once (to be read); one without
// is opened once more to tell its format from its first bytes. Both read
// to the same traces.
func TestOpenInputFormat(t *testing.T) {
	paths := realTraces(t, "eager")
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	tgz, _ := archives(t, []string{"rank0.json.gz"}, [][]byte{b})
	for _, tc := range []struct {
		name, format string
		content      []byte
		opens        int
	}{
		{"rank0.json.gz", FormatGzip, b, 1},
		{"rank0.json.gz", "", b, 2},
		{"run.tar.gz", FormatTarGz, tgz, 1},
		{"run.tar.gz", "", tgz, 2},
	} {
		opens := 0
		src := memSource(tc.name, tc.content)
		open := src.Open
		src.Format = tc.format
		src.Open = func() (SourceReader, error) { opens++; return open() }
		set, err := OpenInput(Input{Name: tc.name, Sources: []Source{src}}, Options{})
		if err != nil || len(set.Traces) != 1 {
			t.Fatalf("%s (format %q): %v, %d traces", tc.name, tc.format, err, len(set.Traces))
		}
		if opens != tc.opens {
			t.Errorf("%s (format %q): opened %d times, want %d", tc.name, tc.format, opens, tc.opens)
		}
	}
}

// FromPath and FromPaths file what they find as Open always did: a JSON
// file that is no trace is an error when given alone and set aside among
// others (a directory's, or beside another file); a path that cannot be
// looked at fails the read, naming it; Dir is the one directory given.
func TestFromPaths(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "profile")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.json")
	other := filepath.Join(work, "other.json")
	for _, p := range []string{config, other} {
		if err := os.WriteFile(p, []byte(`{"a": 1}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(work, "missing.json")
	for _, tc := range []struct {
		name          string
		paths         []string
		errors, aside int
		dir           string
		fails         string // the read fails with an error holding this
	}{
		{"a file alone", []string{config}, 1, 0, "", ""},
		{"a directory", []string{dir}, 0, 1, dir, ""},
		{"two files", []string{config, other}, 0, 2, "", ""},
		{"a directory and a file", []string{dir, other}, 0, 2, "", ""},
		{"a missing path", []string{config, missing}, 0, 0, "", missing},
		{"no path", nil, 0, 0, "", "no path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := FromPaths(tc.paths)
			if in.Name != strings.Join(tc.paths, " ") || in.Dir() != tc.dir {
				t.Errorf("name %q, dir %q; want %q, %q", in.Name, in.Dir(), strings.Join(tc.paths, " "), tc.dir)
			}
			set, err := OpenInput(in, Options{})
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Fatalf("error %v, want one naming %q", err, tc.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if set.Path != in.Name || len(set.Errors) != tc.errors || len(set.SetAside) != tc.aside {
				t.Errorf("path %q, errors %v, set aside %v; want %q, %d errors, %d set aside", set.Path, set.Errors, set.SetAside, in.Name, tc.errors, tc.aside)
			}
			for _, e := range set.Errors {
				if !errors.Is(e, ErrNotTrace) {
					t.Errorf("error %v is not ErrNotTrace", e)
				}
			}
		})
	}
}
