package ingest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// benchTraces returns the traces to benchmark, by name: the file in
// $KINETOSCOPE_BENCH_TRACE, or the largest public trace (kept-event heavy)
// and the first rank of the real eager vLLM run.
func benchTraces(b *testing.B) map[string][]byte {
	b.Helper()
	paths := []string{os.Getenv("KINETOSCOPE_BENCH_TRACE")}
	if paths[0] == "" {
		paths = []string{publicTrace(b, "hta-diff-control-a100.json.gz"), realTraces(b, "eager")[0]}
	}
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		name := filepath.Base(p)
		if len(name) > 24 {
			name = name[:24]
		}
		out[name] = data
	}
	return out
}

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times and reports its CPU time per run (all threads)
// beside the wall time: on a shared machine it varies less.
func loop(b *testing.B, f func()) {
	cpu0 := cpuTime()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// gunzip returns the decompressed content of data.
func gunzip(b *testing.B, data []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	return text
}

// BenchmarkGunzip is the ceiling: klauspost gzip decompression alone.
func BenchmarkGunzip(b *testing.B) {
	for name, data := range benchTraces(b) {
		n := int64(len(gunzip(b, data))) // once: b.Run calls f again for each b.N
		b.Run(name, func(b *testing.B) {
			b.SetBytes(n)
			loop(b, func() {
				zr, err := gzip.NewReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, zr); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkRead is the whole ingest of one trace, decompression included.
// MB/s are of uncompressed JSON.
func BenchmarkRead(b *testing.B) {
	for name, data := range benchTraces(b) {
		n := int64(len(gunzip(b, data))) // once: b.Run calls f again for each b.N
		b.Run(name, func(b *testing.B) {
			b.SetBytes(n)
			b.ReportAllocs()
			var tr *Trace
			loop(b, func() {
				var err error
				if tr, err = Read(bytes.NewReader(data), "bench.json.gz", Options{}); err != nil {
					b.Fatal(err)
				}
			})
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(tr.Counts.Events)/sec, "events/s")
			b.ReportMetric(float64(tr.RetainedBytes())/float64(max(tr.KeptEvents(), 1)), "B/kept-event")
		})
	}
}

// BenchmarkParse is ingest of already decompressed JSON: the parser
// alone, the events parsed in order whatever the cores.
func BenchmarkParse(b *testing.B) { benchParse(b, Options{ParseWorkers: 1}) }

// BenchmarkParseChunks is BenchmarkParse with the events parsed in
// chunks on every core but one (at least two): compare the two.
func BenchmarkParseChunks(b *testing.B) {
	benchParse(b, Options{ParseWorkers: max(runtime.GOMAXPROCS(0)-1, 2)})
}

// benchParse times ingest of the bench traces' JSON text with opt.
func benchParse(b *testing.B, opt Options) {
	for name, data := range benchTraces(b) {
		text := gunzip(b, data) // once: b.Run calls f again for each b.N
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			loop(b, func() {
				if _, err := Read(bytes.NewReader(text), "bench.json", opt); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkCheckText is the upload check of decompressed JSON (Check:
// the whole text's shape): compare with BenchmarkParse of the same trace.
func BenchmarkCheckText(b *testing.B) {
	lim := Limits{MaxUncompressedBytes: 1 << 40, MaxRatio: 200}
	for name, data := range benchTraces(b) {
		text := gunzip(b, data) // once: b.Run calls f again for each b.N
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			loop(b, func() {
				if _, err := lim.Check("bench.json", FormatJSON, bytes.NewReader(text)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkOpenInput reads the rank files of a real run as a directory and
// given one by one: both read their files several at a time, so that the
// second costs what the first does.
func BenchmarkOpenInput(b *testing.B) {
	files := realTraces(b, "eager")
	for _, bc := range []struct {
		name string
		in   func() Input
	}{
		{"directory", func() Input { return FromPath(filepath.Dir(files[0])) }},
		{"files one by one", func() Input { return FromPaths(files) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := OpenInput(bc.in(), Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
