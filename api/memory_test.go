package api_test

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/klauspost/compress/gzip"

	"kinetoscope/analyze"
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces/synth"
)

// zipOfGzip writes the trace of a gzip file as the one member of a zip.
func zipOfGzip(b *testing.B, gz, out string) {
	in, err := os.Open(gz)
	testkit.Must(b, err)
	defer in.Close()
	zr, err := gzip.NewReader(in)
	testkit.Must(b, err)
	f, err := os.Create(out)
	testkit.Must(b, err)
	defer f.Close()
	zw := zip.NewWriter(f)
	w, err := zw.Create("rank0.pt.trace.json")
	testkit.Must(b, err)
	_, err = io.Copy(w, zr)
	testkit.Must(b, err)
	testkit.Must(b, zw.Close())
}

// BenchmarkBytesPerEvent measures the memory of the service's pipeline
// per kept event on one 200 MB synthetic trace, as gzip and as zip: the
// ingested set alone (ingest's figure, the README's 68 bytes), the set
// with the report once analysed, and the peak heap during the analysis
// (HeapInuse sampled every 5 ms; the process's RSS adds the GC's headroom
// on top). With KINETOSCOPE_HEAPPROFILE=DIR it writes DIR/FORMAT.heap at
// the end of each analysis (go tool pprof -sample_index=alloc_space shows
// where the temporaries come from).
func BenchmarkBytesPerEvent(b *testing.B) {
	dir := b.TempDir()
	cfg := synth.DefaultConfig()
	cfg.Ranks, cfg.TargetSize, cfg.Gzip = 1, 200<<20, true
	_, err := synth.Generate(dir, cfg, false)
	testkit.Must(b, err)
	gz := filepath.Join(dir, synth.FileName(&cfg, 0))
	zp := filepath.Join(b.TempDir(), "run.zip")
	zipOfGzip(b, gz, zp)
	for b.Loop() {
		for _, tc := range []struct{ format, path string }{{"gzip", gz}, {"zip", zp}} {
			set, rep, m := measurePipeline(b, tc.path)
			b.ReportMetric(m.set, "B/event-set-"+tc.format)
			b.ReportMetric(m.kept, "B/event-set+report-"+tc.format)
			b.ReportMetric(m.peak, "B/event-peak-"+tc.format)
			b.Logf("%s: %d kept events; per event: set %.0f B, set+report %.0f B, peak heap in use %.0f B", tc.format, m.events, m.set, m.kept, m.peak)
			runtime.KeepAlive(set)
			runtime.KeepAlive(rep)
		}
	}
}

// pipelineMemory is what measurePipeline found, in bytes per kept event.
type pipelineMemory struct {
	events          int64
	set, kept, peak float64
}

// measurePipeline reads and analyses path as the service does and
// measures its heap per kept event.
func measurePipeline(b *testing.B, path string) (any, any, pipelineMemory) {
	inUse := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	base := inUse()
	stop := heapPeak()
	set, err := driver.Read(ingest.FromPath(path), driver.Options{Options: ingest.Options{MaxUncompressedBytes: 1 << 40, MaxRatio: 200}})
	testkit.Must(b, err)
	afterRead := inUse()
	rep, err := analyze.Analyze(set, analyze.Options{})
	testkit.Must(b, err)
	peak := stop()
	if d := os.Getenv("KINETOSCOPE_HEAPPROFILE"); d != "" {
		f, err := os.Create(filepath.Join(d, filepath.Ext(path)[1:]+".heap"))
		testkit.Must(b, err)
		testkit.Must(b, pprof.WriteHeapProfile(f))
		f.Close()
	}
	afterAnalysis := inUse()
	var events int64
	for _, t := range set.Traces {
		events += t.KeptEvents()
	}
	per := func(n uint64) float64 { return float64(n-base) / float64(events) }
	return set, rep, pipelineMemory{events: events, set: per(afterRead), kept: per(afterAnalysis), peak: per(peak)}
}
