package api

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
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
		err := checkMember("a.tar", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("checkMember(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func tarOf(members map[string]int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, size := range members {
		tw.WriteHeader(&tar.Header{Name: name, Size: int64(size), Mode: 0o644, Typeflag: tar.TypeReg})
		tw.Write(bytes.Repeat([]byte(" "), size))
	}
	tw.Close()
	return buf.Bytes()
}

func TestValidate(t *testing.T) {
	lim := limits{maxUncompressed: 1 << 20, maxRatio: 200}
	big := append([]byte("{"), bytes.Repeat([]byte(" "), 2<<20)...)
	tests := []struct {
		name     string
		data     []byte
		wantKind string
		code     int // 0: valid
		msg      string
	}{
		{"json", []byte(` {"traceEvents": []}`), kindJSON, 0, ""},
		{"json with BOM", []byte("\xef\xbb\xbf{}"), kindJSON, 0, ""},
		{"gzip json", gz([]byte(`{"a":1}`)), kindGzip, 0, ""},
		{"tar", tarOf(map[string]int{"r0.json": 10}), kindTar, 0, ""},
		{"tar.gz", gz(tarOf(map[string]int{"r0.json": 10})), kindTarGz, 0, ""},
		{"gzip over the limit", gz(big), kindGzip, 413, "more than 1048576 bytes"},
		{"tar over the limit", tarOf(map[string]int{"a.json": 600 << 10, "b.json": 600 << 10}), kindTar, 413, "add up to more than"},
		{"tar with ..", tarOf(map[string]int{"../a.json": 1}), kindTar, 400, "climbs out"},
		{"html", []byte("<html>"), kindJSON, 400, "expected '{' at byte offset 0"},
		{"truncated gzip", gz([]byte(`{"a":1}`))[:15], kindGzip, 400, "truncated gzip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind, err := lim.validate("f", sniffKind(tc.data), bytes.NewReader(tc.data))
			if kind != tc.wantKind {
				t.Errorf("kind %q, want %q", kind, tc.wantKind)
			}
			var ie *inputError
			switch {
			case tc.code == 0 && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.code != 0 && (!errors.As(err, &ie) || ie.Code != tc.code || !strings.Contains(ie.Msg, tc.msg)):
				t.Errorf("got %v, want %d with %q", err, tc.code, tc.msg)
			}
		})
	}
}

// The ratio guard stops a bomb well before the absolute limit.
func TestValidateRatio(t *testing.T) {
	lim := limits{maxUncompressed: 1 << 40, maxRatio: 200}
	var buf bytes.Buffer
	buf.Write(gz([]byte("{")))
	member := gz(make([]byte, 1<<20))
	for range 512 { // 512 MiB of zeros in multistream gzip
		buf.Write(member)
	}
	_, err := lim.validate("bomb", kindGzip, io.NopCloser(&buf))
	var ie *inputError
	if !errors.As(err, &ie) || ie.Code != 413 || !strings.Contains(ie.Msg, "times its compressed size") {
		t.Fatalf("got %v, want the ratio guard", err)
	}
}

func TestCleanName(t *testing.T) {
	tests := map[string]string{
		"rank0.pt.trace.json.gz":         "rank0.pt.trace.json.gz",
		"../../etc/passwd":               "etc/passwd",
		`C:\Users\me\trace (1).json`:     "C_/Users/me/trace__1_.json",
		"prof/capture_traces/r0.json.gz": "prof/capture_traces/r0.json.gz",
		".hidden":                        "hidden",
		"":                               "",
	}
	for in, want := range tests {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}
}
