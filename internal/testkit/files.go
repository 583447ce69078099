package testkit

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// Gunzip returns the decompressed content of the gzip file at path (a
// bundled trace, say), failing tb when it cannot be read.
func Gunzip(tb testing.TB, path string) []byte {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return b
}

// Gzip returns data compressed as one gzip member (into memory, which
// cannot fail).
func Gzip(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// Must ends the test tb when err is not nil.
func Must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
