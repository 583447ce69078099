package ingest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// benchTrace returns the trace to benchmark: $KINETOSCOPE_BENCH_TRACE, or
// the largest public trace.
func benchTrace(b *testing.B) []byte {
	b.Helper()
	path := os.Getenv("KINETOSCOPE_BENCH_TRACE")
	if path == "" {
		path = filepath.Join(publicDir(b), "hta-diff-control-a100.json.gz")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// uncompressedSize returns the gunzipped size of data.
func uncompressedSize(b *testing.B, data []byte) int64 {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkGunzip is the ceiling: klauspost gzip decompression alone.
func BenchmarkGunzip(b *testing.B) {
	data := benchTrace(b)
	b.SetBytes(uncompressedSize(b, data))
	for b.Loop() {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, zr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead is the whole ingest of one trace, decompression included.
// MB/s are of uncompressed JSON.
func BenchmarkRead(b *testing.B) {
	data := benchTrace(b)
	b.SetBytes(uncompressedSize(b, data))
	b.ReportAllocs()
	var tr *Trace
	for b.Loop() {
		var err error
		if tr, err = Read(bytes.NewReader(data), "bench.json.gz", Options{}); err != nil {
			b.Fatal(err)
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(tr.Counts.Events)/sec, "events/s")
	b.ReportMetric(float64(tr.RetainedBytes())/float64(max(tr.KeptEvents(), 1)), "B/kept-event")
}

// BenchmarkParse is ingest of already decompressed JSON: the parser alone.
func BenchmarkParse(b *testing.B) {
	data := benchTrace(b)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Read(bytes.NewReader(text), "bench.json", Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
