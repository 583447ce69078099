package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"kinetoscope/analyze"
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/pgzip"
)

// The parallel gzip reader's phases of bench: internal/pgzip's reader
// alone to io.Discard against klauspost's, and ingest with each.

// ParallelGzip are the parallel reader's phases.
type ParallelGzip struct {
	Workers      int         `json:"workers"`
	Gunzip       Measurement `json:"parallel_gunzip"`
	IngestSeq    Measurement `json:"ingest_klauspost"`
	IngestPar    Measurement `json:"ingest_parallel"`
	GunzipVsSeq  float64     `json:"parallel_gunzip_speed_vs_gunzip"`
	IngestVsSeq  float64     `json:"ingest_parallel_speed_vs_ingest_klauspost"`
	IngestVsGzip float64     `json:"ingest_parallel_speed_vs_gunzip"`
	Chunks       pgzip.Stats `json:"chunks"`
}

// benchWorkers returns the parallel reader's workers for bench: n where
// given, else every core but one, at least two (so that the parallel path
// runs on a machine of two cores too).
func benchWorkers(n int) int {
	if n > 0 {
		return n
	}
	return max(runtime.GOMAXPROCS(0)-1, 2)
}

// parallelGunzip decompresses the gzip file at path with the parallel
// reader of workers goroutines to io.Discard, and returns how its chunks
// were decoded.
func parallelGunzip(path string, workers int) (pgzip.Stats, error) {
	in, err := os.ReadFile(path)
	if err != nil {
		return pgzip.Stats{}, err
	}
	r, err := pgzip.NewReader(in, pgzip.Options{Workers: workers})
	if err != nil {
		return pgzip.Stats{}, fmt.Errorf("%s: %w", path, err)
	}
	defer r.Close()
	if _, err := io.Copy(io.Discard, r); err != nil {
		return pgzip.Stats{}, fmt.Errorf("%s: %w", path, err)
	}
	return r.Stats(), nil
}

// gzipOptions returns the ingest options of gzip decompressed by workers
// goroutines (1: klauspost's reader).
func gzipOptions(workers int) ingest.Options {
	return ingest.Options{GzipWorkers: workers}
}

// ingestWith reads the trace file at path with opt.
func ingestWith(path string, opt ingest.Options) error {
	t, err := ingest.ReadFile(path, opt)
	runtime.KeepAlive(t)
	return err
}

// measureParallel runs the parallel phases once and keeps the best.
func (p *ParallelGzip) measure(path string, first bool) error {
	g, err := measure(func() error {
		st, err := parallelGunzip(path, p.Workers)
		p.Chunks = st
		return err
	})
	if err != nil {
		return err
	}
	seq, err := measure(func() error { return ingestWith(path, gzipOptions(1)) })
	if err != nil {
		return err
	}
	par, err := measure(func() error { return ingestWith(path, gzipOptions(p.Workers)) })
	if err != nil {
		return err
	}
	for _, m := range []struct {
		to   *Measurement
		from Measurement
	}{{&p.Gunzip, g}, {&p.IngestSeq, seq}, {&p.IngestPar, par}} {
		m.to.best(m.from, first)
		m.to.PeakRSS = max(m.to.PeakRSS, m.from.PeakRSS)
	}
	return nil
}

// finish computes the rates and ratios, with gunzip the klauspost phase
// of the same run.
func (p *ParallelGzip) finish(r *Result) {
	mb := float64(r.UncompressedBytes) / 1e6
	for _, ph := range []*Measurement{&p.Gunzip, &p.IngestSeq, &p.IngestPar} {
		if ph.Seconds > 0 {
			ph.MBPerSec = mb / ph.Seconds
		}
	}
	if p.Gunzip.Seconds > 0 {
		p.GunzipVsSeq = r.Gunzip.Seconds / p.Gunzip.Seconds
	}
	if p.IngestPar.Seconds > 0 {
		p.IngestVsSeq = p.IngestSeq.Seconds / p.IngestPar.Seconds
		p.IngestVsGzip = r.Gunzip.Seconds / p.IngestPar.Seconds
	}
}

// write prints the parallel phases and their ratios.
func (p *ParallelGzip) write(w io.Writer) {
	fmt.Fprintf(w, "\nparallel gzip reader, %d workers on %d cores (chunks: %d, %d in parallel, %d again in order, %d inside a block):\n",
		p.Workers, runtime.GOMAXPROCS(0), p.Chunks.Chunks, p.Chunks.Parallel, p.Chunks.InOrder, p.Chunks.Skipped)
	for _, row := range []struct {
		name string
		ph   *Measurement
	}{{"parallel gunzip", &p.Gunzip}, {"ingest, klauspost gzip", &p.IngestSeq}, {"ingest, parallel gzip", &p.IngestPar}} {
		fmt.Fprintf(w, "%-22s %9.3f %9.3f %11.1f %12s %12.1f\n", row.name, row.ph.Seconds, row.ph.CPU, row.ph.MBPerSec, "-", float64(row.ph.PeakRSS)/1e6)
	}
	fmt.Fprintf(w, "parallel gunzip: %.2fx gunzip; ingest with it: %.2fx ingest with klauspost, %.2fx gunzip (wall)\n",
		p.GunzipVsSeq, p.IngestVsSeq, p.IngestVsGzip)
}

// analyzeWith reads path with opt (how gzip is decompressed, how the
// events are parsed), analyses it as 'analyze' does with its default
// options, and writes the JSON report to w: the same work but for the
// reader, so that two of them time the reader and compare its output.
func analyzeWith(path string, opt ingest.Options, w io.Writer) error {
	set, err := ingest.Open(path, opt)
	if err != nil {
		return err
	}
	if len(set.Traces) == 0 {
		return fmt.Errorf("%s: no trace with GPU events", path)
	}
	rep, err := analyze.Analyze(set, analyze.Options{})
	if err != nil {
		return err
	}
	return driver.WriteReport(w, rep, "json")
}
