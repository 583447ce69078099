package bench

import (
	"fmt"
	"io"
	"runtime"

	"kinetoscope/ingest"
)

// The parallel parse's phases of bench: ingest and analyze with the
// events parsed in chunks on several cores (ingest.Options.ParseWorkers)
// against the sequential parse, the gzip reader left to ingest's own
// decision in both.

// ParallelParse are the parallel parse's phases.
type ParallelParse struct {
	Workers      int         `json:"workers"`
	IngestSeq    Measurement `json:"ingest_sequential_parse"`
	IngestPar    Measurement `json:"ingest_parallel_parse"`
	IngestVsSeq  float64     `json:"ingest_parallel_parse_speed_vs_sequential"`
	IngestVsGzip float64     `json:"ingest_parallel_parse_speed_vs_gunzip"`
	// Chunks, ChunkBytes and Stopped are what the last parse in chunks
	// did (ingest.ParseStats): the chunks built, their JSON bytes, and
	// those that ended early.
	Chunks     int64 `json:"chunks"`
	ChunkBytes int64 `json:"chunk_bytes"`
	Stopped    int64 `json:"chunks_stopped_early"`
}

// parseOptions returns the ingest options of a parse on workers
// goroutines (1: the sequential parse).
func parseOptions(workers int) ingest.Options {
	return ingest.Options{ParseWorkers: workers}
}

// measure runs the phases once and keeps the best.
func (p *ParallelParse) measure(path string, first bool) error {
	seq, err := measure(func() error { return ingestWith(path, parseOptions(1)) })
	if err != nil {
		return err
	}
	var st ingest.ParseStats
	opt := parseOptions(p.Workers)
	opt.ParseStats = &st
	par, err := measure(func() error { return ingestWith(path, opt) })
	if err != nil {
		return err
	}
	p.Chunks, p.ChunkBytes, p.Stopped = st.Chunks.Load(), st.Bytes.Load(), st.Stopped.Load()
	for _, m := range []struct {
		to   *Measurement
		from Measurement
	}{{&p.IngestSeq, seq}, {&p.IngestPar, par}} {
		m.to.best(m.from, first)
		m.to.PeakRSS = max(m.to.PeakRSS, m.from.PeakRSS)
	}
	return nil
}

// finish computes the rates and ratios, with gunzip the klauspost phase
// of the same run.
func (p *ParallelParse) finish(r *Result) {
	mb := float64(r.UncompressedBytes) / 1e6
	for _, ph := range []*Measurement{&p.IngestSeq, &p.IngestPar} {
		if ph.Seconds > 0 {
			ph.MBPerSec = mb / ph.Seconds
		}
	}
	if p.IngestPar.Seconds > 0 {
		p.IngestVsSeq = p.IngestSeq.Seconds / p.IngestPar.Seconds
		p.IngestVsGzip = r.Gunzip.Seconds / p.IngestPar.Seconds
	}
}

// write prints the phases and their ratios.
func (p *ParallelParse) write(w io.Writer, jsonBytes int64) {
	share := 0.0
	if jsonBytes > 0 {
		share = 100 * float64(p.ChunkBytes) / float64(jsonBytes)
	}
	fmt.Fprintf(w, "\nparallel parse, %d workers on %d cores (%.1f%% of the JSON in %d chunks, %d stopped early):\n",
		p.Workers, runtime.GOMAXPROCS(0), share, p.Chunks, p.Stopped)
	for _, row := range []struct {
		name string
		ph   *Measurement
	}{{"ingest, parse in order", &p.IngestSeq}, {"ingest, parse in chunks", &p.IngestPar}} {
		fmt.Fprintf(w, "%-22s %9.3f %9.3f %11.1f %12s %12.1f\n", row.name, row.ph.Seconds, row.ph.CPU, row.ph.MBPerSec, "-", float64(row.ph.PeakRSS)/1e6)
	}
	fmt.Fprintf(w, "ingest, parse in chunks: %.2fx the parse in order, %.2fx gunzip (wall)\n", p.IngestVsSeq, p.IngestVsGzip)
}
