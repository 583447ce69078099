package ingest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"kinetoscope/internal/testkit"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestCheckMember(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"rank0.pt.trace.json.gz", true},
		{"prof/capture_traces/rank0.json", true},
		{"./prof/rank0.json", true},
		{"a..b.json", true},
		{"../x", false},
		{"prof/../../x", false},
		{"/etc/passwd", false},
		{`..\x`, false},
		{`C:\x.json`, false},
	}
	for _, tc := range tests {
		err := CheckMember("a.tar", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckMember(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func tarOfSizes(members map[string]int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, size := range members {
		tw.WriteHeader(&tar.Header{Name: name, Size: int64(size), Mode: 0o644, Typeflag: tar.TypeReg})
		tw.Write(bytes.Repeat([]byte(" "), size))
	}
	tw.Close()
	return buf.Bytes()
}

// tarWithLink is a tar of a trace and a link of type flag to it.
func tarWithLink(flag byte) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "rank0.json", Size: 2, Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Write([]byte("{}"))
	tw.WriteHeader(&tar.Header{Name: "rank1.json", Linkname: "rank0.json", Mode: 0o777, Typeflag: flag})
	tw.Close()
	return buf.Bytes()
}

func TestCheck(t *testing.T) {
	lim := Limits{MaxUncompressedBytes: 1 << 20, MaxRatio: 200}
	big := append([]byte("{"), bytes.Repeat([]byte(" "), 2<<20)...)
	tests := []struct {
		name     string
		data     []byte
		wantKind string
		tooLarge bool
		bad      bool // false: valid
		msg      string
	}{
		{"json", []byte(` {"traceEvents": []}`), FormatJSON, false, false, ""},
		{"json with BOM", []byte("\xef\xbb\xbf{\"traceEvents\":[]}"), FormatJSON, false, false, ""},
		{"gzip json", testkit.Gzip([]byte(`{"traceEvents":[{"ph":"X"}]}`)), FormatGzip, false, false, ""},
		{"gzip of truncated json", testkit.Gzip([]byte(`{"traceEvents":[{"ph":"X"`)), FormatGzip, false, true, "byte offset 25: unexpected end of input"},
		{"gzip of json not a trace", testkit.Gzip([]byte(`[[[[]]]]`)), FormatGzip, false, true, "expected an event object"},
		{"tar", tarOfSizes(map[string]int{"r0.json": 10}), FormatTar, false, false, ""},
		{"tar.gz", testkit.Gzip(tarOfSizes(map[string]int{"r0.json": 10})), FormatTarGz, false, false, ""},
		{"gzip over the limit", testkit.Gzip(big), FormatGzip, true, true, "more than 1048576 bytes"},
		{"tar over the limit", tarOfSizes(map[string]int{"a.json": 600 << 10, "b.json": 600 << 10}), FormatTar, true, true, "add up to more than"},
		{"tar with ..", tarOfSizes(map[string]int{"../a.json": 1}), FormatTar, false, true, "climbs out"},
		{"html", []byte("<html>"), FormatJSON, false, true, "expected '{' at byte offset 0"},
		{"truncated gzip", testkit.Gzip([]byte(`{"a":1}`))[:15], FormatGzip, false, true, "truncated gzip"},
		{"cut tar", tarOfSizes(map[string]int{"r0.json": 10, "r1.json": 10})[:1100], FormatTar, false, true, "f: bad tar archive: unexpected EOF"},
		{"tar.gz of a cut tar", testkit.Gzip(tarOfSizes(map[string]int{"r0.json": 10, "r1.json": 10})[:1100]), FormatTarGz, false, true, "f: bad tar archive: unexpected EOF"},
		{"tar with a link", tarWithLink(tar.TypeSymlink), FormatTar, false, true, `f: archive member "rank1.json" is a link`},
		{"tar with a hard link", tarWithLink(tar.TypeLink), FormatTar, false, true, `f: archive member "rank1.json" is a link`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind, err := lim.Check("f", Sniff(tc.data), bytes.NewReader(tc.data))
			if kind != tc.wantKind {
				t.Errorf("kind %q, want %q", kind, tc.wantKind)
			}
			var ce *CheckError
			switch {
			case !tc.bad && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.bad && (!errors.As(err, &ce) || ce.TooLarge != tc.tooLarge || !strings.Contains(ce.Msg, tc.msg)):
				t.Errorf("got %v, want a check error (too large: %v) with %q", err, tc.tooLarge, tc.msg)
			}
		})
	}
}

// The ratio guard stops a bomb well before the absolute limit.
func TestCheckRatio(t *testing.T) {
	lim := Limits{MaxUncompressedBytes: 1 << 40, MaxRatio: 200}
	var buf bytes.Buffer
	buf.Write(testkit.Gzip([]byte(`{"traceEvents":[{"name":"`)))
	member := testkit.Gzip(make([]byte, 1<<20))
	for range 512 { // 512 MiB of zeros in multistream gzip
		buf.Write(member)
	}
	_, err := lim.Check("bomb", FormatGzip, io.NopCloser(&buf))
	var ce *CheckError
	if !errors.As(err, &ce) || !ce.TooLarge || !strings.Contains(ce.Msg, "times its compressed size") {
		t.Fatalf("got %v, want the ratio guard", err)
	}
}

// CheckZip refuses a zip whose member is a symbolic link, as a tar's link
// is refused (the mode bits of a zip entry are read as an fs.FileMode).
func TestCheckZipLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		msg  string
	}{
		{"regular", 0o644, ""},
		{"symlink", fs.ModeSymlink | 0o777, "is a link"},
	} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		h := &zip.FileHeader{Name: "rank0.json", Method: zip.Store}
		h.SetMode(tc.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(`{"traceEvents": []}`))
		zw.Close()
		err = Limits{MaxUncompressedBytes: 1 << 20, MaxRatio: 200}.CheckZip("a.zip", bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if (tc.msg == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s: CheckZip = %v, want %q", tc.name, err, tc.msg)
		}
	}
}

// zipBytes returns a zip of the given members (deflated).
func zipBytes(t *testing.T, members map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, b := range members {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeZip writes a zip of the given members (deflated) and returns its
// path.
func writeZip(t *testing.T, members map[string][]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.zip")
	if err := os.WriteFile(p, zipBytes(t, members), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Zip and tar members get gzip's limits: the ratio of a zip member's
// declared size to its compressed size, the bytes a gzip-compressed trace
// member inflates to, and the number of members.
func TestCheckArchiveLimits(t *testing.T) {
	lim := Limits{MaxUncompressedBytes: 1 << 40, MaxRatio: 200, MaxMembers: 4}
	zeros := append([]byte(`{"traceEvents":[`), make([]byte, 300<<20)...) // deflates about 1000x
	gzBomb := testkit.Gzip(zeros)
	small := []byte(`{"traceEvents": []}`)
	many := map[string][]byte{}
	manyTar := map[string]int{}
	for i := range 5 {
		many[strconv.Itoa(i)+".json"] = small
		manyTar[strconv.Itoa(i)+".json"] = 2
	}
	tarBomb := func() []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		tw.WriteHeader(&tar.Header{Name: "rank0.json.gz", Size: int64(len(gzBomb)), Mode: 0o644, Typeflag: tar.TypeReg})
		tw.Write(gzBomb)
		tw.Close()
		return buf.Bytes()
	}()
	tests := []struct {
		name string
		zip  map[string][]byte // checked with CheckZip
		tar  []byte            // else checked with Check
		msg  string            // "" when accepted
	}{
		{name: "zip ok", zip: map[string][]byte{"r0.json": small}},
		{name: "zip deflate bomb", zip: map[string][]byte{"r0.json": zeros}, msg: "zip bomb"},
		{name: "zip holding a gzip bomb", zip: map[string][]byte{"r0.json.gz": gzBomb}, msg: "gzip bomb"},
		{name: "zip of many files", zip: many, msg: "more than 4 files"},
		{name: "tar ok", tar: tarOfSizes(map[string]int{"r0.json": 10})},
		{name: "tar holding a gzip bomb", tar: tarBomb, msg: "gzip bomb"},
		{name: "tar.gz holding a gzip bomb", tar: testkit.Gzip(tarBomb), msg: "gzip bomb"},
		{name: "tar of many files", tar: tarOfSizes(manyTar), msg: "more than 4 files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.zip != nil {
				b := zipBytes(t, tc.zip)
				err = lim.CheckZip("a.zip", bytes.NewReader(b), int64(len(b)))
			} else {
				_, err = lim.Check("a.tar", Sniff(tc.tar), bytes.NewReader(tc.tar))
			}
			var ce *CheckError
			switch {
			case tc.msg == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.msg != "" && (!errors.As(err, &ce) || !ce.TooLarge || !strings.Contains(ce.Msg, tc.msg)):
				t.Errorf("got %v, want a too-large check error with %q", err, tc.msg)
			}
		})
	}
}

// Reading a zip for analysis stops a member that inflates past MaxRatio
// times its compressed size, as the upload check does.
func TestOpenZipRatio(t *testing.T) {
	doc := append([]byte(`{"traceEvents":[`), bytes.Repeat([]byte(`{},`), 100<<20)...)
	p := writeZip(t, map[string][]byte{"rank0.json": append(doc, "{}]}"...)})
	for _, tc := range []struct {
		ratio   int64
		tooLate bool
	}{{200, true}} { // without the bound ({0, false}) it reads all 300 MiB

		set, err := Open(p, Options{MaxRatio: tc.ratio})
		if err != nil {
			t.Fatal(err)
		}
		stopped := len(set.Errors) == 1 && errors.Is(set.Errors[0], ErrTooLarge)
		if stopped != tc.tooLate || !stopped && len(set.Errors) > 0 {
			t.Errorf("ratio %d: errors %v, want stopped %v", tc.ratio, set.Errors, tc.tooLate)
		}
	}
}

// CheckZip names the archive and says what is wrong with one it cannot
// read, or that holds nothing.
func TestCheckZipUnreadable(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.Close()
	empty := buf.Bytes()
	one := zipBytes(t, map[string][]byte{"rank0.json": []byte(`{"traceEvents": []}`)})
	for _, tc := range []struct {
		name string
		b    []byte
		msg  string
	}{
		{"empty", empty, "a.zip: empty zip archive"},
		{"cut", one[:len(one)-10], "a.zip: bad zip archive: zip: not a valid zip file"},
		{"whole", one, ""},
	} {
		err := Limits{MaxUncompressedBytes: 1 << 20, MaxRatio: 200}.CheckZip("a.zip", bytes.NewReader(tc.b), int64(len(tc.b)))
		var ce *CheckError
		if tc.msg == "" && err != nil || tc.msg != "" && (!errors.As(err, &ce) || ce.Msg != tc.msg) {
			t.Errorf("%s: CheckZip = %v, want %q", tc.name, err, tc.msg)
		}
	}
}
