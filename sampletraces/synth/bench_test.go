package synth

import (
	"bytes"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// benchConfig is the full Kimi-K2.5 shape (61 layers, TP 8) with a few
// decode steps: about 25 MB per rank.
func benchConfig() Config {
	c := DefaultConfig()
	c.DecodeSteps = 4
	return c
}

// benchSetup returns the benchmark config and model and sets the bytes
// processed per op to one rank's uncompressed size.
func benchSetup(b *testing.B) (Config, *model) {
	cfg := benchConfig()
	m := newModel(&cfg)
	var n countWriter
	if _, err := writeRank(syncSink{w: &n}, &cfg, m, 3, "bench"); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	b.ResetTimer()
	return cfg, m
}

// BenchmarkWriteRank formats one rank's trace without compression.
func BenchmarkWriteRank(b *testing.B) {
	cfg, m := benchSetup(b)
	for range b.N {
		if _, err := writeRank(syncSink{w: io.Discard}, &cfg, m, 3, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteRankGzip formats and compresses one rank's trace the way
// Generate does (compression in a second goroutine).
func BenchmarkWriteRankGzip(b *testing.B) {
	cfg, m := benchSetup(b)
	for range b.N {
		if _, err := writeTo(io.Discard, &cfg, m, 3, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGzipOnly is the baseline: compressing the same bytes, already
// formatted, at the same level in one goroutine.
func BenchmarkGzipOnly(b *testing.B) {
	cfg := benchConfig()
	var buf bytes.Buffer
	if _, err := WriteRank(&buf, cfg, 3); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for range b.N {
		zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		if _, err := zw.Write(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
		zw.Close()
	}
}
