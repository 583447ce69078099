package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"syscall"
	"time"

	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// ProcessMeasurement is one phase timed as whole processes: every run, and the
// medians.
type ProcessMeasurement struct {
	Seconds    []float64 `json:"seconds"`
	Median     float64   `json:"median_seconds"`
	CPUMedian  float64   `json:"median_cpu_seconds"`
	PeakRSS    int64     `json:"peak_rss_bytes"` // the most over the runs
	VsGunzip   float64   `json:"speed_vs_gunzip,omitempty"`
	CPUVsGunzp float64   `json:"cpu_vs_gunzip,omitempty"`
}

// Processes are the whole-process runs of bench --procs.
type Processes struct {
	Runs    int                 `json:"runs"`
	Gunzip  ProcessMeasurement  `json:"gunzip"`
	Ingest  *ProcessMeasurement `json:"ingest,omitempty"`
	PGunzip *ProcessMeasurement `json:"parallel_gunzip,omitempty"`
	// IngestSeq and AnalyzeSeq read with klauspost's reader whatever
	// the cores, AnalyzePar with the parallel one (--parallel).
	IngestSeq  *ProcessMeasurement `json:"ingest_klauspost,omitempty"`
	AnalyzeSeq *ProcessMeasurement `json:"analyze_klauspost,omitempty"`
	AnalyzePar *ProcessMeasurement `json:"analyze_parallel,omitempty"`
	// IngestSeqParse and AnalyzeSeqParse parse the events in order
	// whatever the cores, IngestParParse and AnalyzeParParse in chunks
	// (--parallel-parse).
	IngestSeqParse  *ProcessMeasurement `json:"ingest_sequential_parse,omitempty"`
	IngestParParse  *ProcessMeasurement `json:"ingest_parallel_parse,omitempty"`
	AnalyzeSeqParse *ProcessMeasurement `json:"analyze_sequential_parse,omitempty"`
	AnalyzeParParse *ProcessMeasurement `json:"analyze_parallel_parse,omitempty"`
	Analyze         *ProcessMeasurement `json:"analyze,omitempty"`
}

// runPhase runs one phase once in this process, for a parent's --procs,
// with a CPU profile written to profile and a Go execution trace to
// exectrace when they are not ""; the parallel gzip phases use workers
// goroutines, the parallel parse's parsers.
func runPhase(phase, file, profile, exectrace string, workers, parsers int) error {
	var res Result
	var run func() error
	switch phase {
	case "gunzip":
		run = func() error { return gunzipAll(file, &res) }
	case "ingest":
		run = func() error { return ingestOnce(file, &res) }
	case "analyze":
		run = func() error { return analyzeOnce(file) }
	case "pgunzip":
		run = func() error { _, err := parallelGunzip(file, workers); return err }
	case "ingest-klauspost":
		run = func() error { return ingestWith(file, gzipOptions(1)) }
	case "ingest-parallel":
		run = func() error { return ingestWith(file, gzipOptions(workers)) }
	case "analyze-klauspost":
		run = func() error { return analyzeWith(file, gzipOptions(1), io.Discard) }
	case "analyze-parallel":
		run = func() error { return analyzeWith(file, gzipOptions(workers), io.Discard) }
	case "report-klauspost":
		run = func() error { return analyzeWith(file, gzipOptions(1), os.Stdout) }
	case "report-parallel":
		run = func() error { return analyzeWith(file, gzipOptions(workers), os.Stdout) }
	case "ingest-seqparse":
		run = func() error { return ingestWith(file, parseOptions(1)) }
	case "ingest-parparse":
		run = func() error { return ingestWith(file, parseOptions(parsers)) }
	case "analyze-seqparse":
		run = func() error { return analyzeWith(file, parseOptions(1), io.Discard) }
	case "analyze-parparse":
		run = func() error { return analyzeWith(file, parseOptions(parsers), io.Discard) }
	case "report-seqparse":
		run = func() error { return analyzeWith(file, parseOptions(1), os.Stdout) }
	case "report-parparse":
		run = func() error { return analyzeWith(file, parseOptions(parsers), os.Stdout) }
	default:
		return fmt.Errorf("--phase %q: want gunzip, ingest, analyze, pgunzip, ingest-klauspost, ingest-parallel, analyze-klauspost, analyze-parallel, report-klauspost, report-parallel, ingest-seqparse, ingest-parparse, analyze-seqparse, analyze-parparse, report-seqparse or report-parparse", phase)
	}
	if exectrace != "" {
		f, err := os.Create(exectrace)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	if profile == "" {
		return run()
	}
	f, err := os.Create(profile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return run()
}

// analyzeOnce runs the pipeline on path and writes its JSON report
// nowhere: what 'analyze --format json' does, profiled with --cpuprofile.
func analyzeOnce(path string) error {
	run, err := driver.Analyze(ingest.FromPath(path), driver.Options{})
	if err != nil {
		return err
	}
	return driver.WriteReport(io.Discard, run.Report, "json")
}

// processRuns times gunzip, ingest (with --procs) and analyze (with
// --analyze) as fresh processes of this binary, a.Runs times, alternating.
func processRuns(a Config) (*Processes, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	type job struct {
		ph   *ProcessMeasurement
		args []string
	}
	r := &Processes{Runs: a.Runs}
	jobs := []job{{&r.Gunzip, []string{"bench", "--phase", "gunzip", a.File}}}
	if a.Procs {
		r.Ingest = &ProcessMeasurement{}
		jobs = append(jobs, job{r.Ingest, []string{"bench", "--phase", "ingest", a.File}})
	}
	workers := fmt.Sprint(benchWorkers(a.Workers))
	if a.Procs && a.Parallel {
		r.PGunzip, r.IngestSeq = &ProcessMeasurement{}, &ProcessMeasurement{}
		jobs = append(jobs, job{r.PGunzip, []string{"bench", "--phase", "pgunzip", "--gzip-workers", workers, a.File}},
			job{r.IngestSeq, []string{"bench", "--phase", "ingest-klauspost", a.File}})
	}
	if a.Analyze && a.Parallel {
		r.AnalyzeSeq, r.AnalyzePar = &ProcessMeasurement{}, &ProcessMeasurement{}
		jobs = append(jobs, job{r.AnalyzeSeq, []string{"bench", "--phase", "analyze-klauspost", a.File}},
			job{r.AnalyzePar, []string{"bench", "--phase", "analyze-parallel", "--gzip-workers", workers, a.File}})
	}
	parsers := fmt.Sprint(benchWorkers(a.ParseWorkers))
	if a.Procs && a.ParallelParse {
		r.IngestSeqParse, r.IngestParParse = &ProcessMeasurement{}, &ProcessMeasurement{}
		jobs = append(jobs, job{r.IngestSeqParse, []string{"bench", "--phase", "ingest-seqparse", a.File}},
			job{r.IngestParParse, []string{"bench", "--phase", "ingest-parparse", "--parse-workers", parsers, a.File}})
	}
	if a.Analyze && a.ParallelParse {
		r.AnalyzeSeqParse, r.AnalyzeParParse = &ProcessMeasurement{}, &ProcessMeasurement{}
		jobs = append(jobs, job{r.AnalyzeSeqParse, []string{"bench", "--phase", "analyze-seqparse", a.File}},
			job{r.AnalyzeParParse, []string{"bench", "--phase", "analyze-parparse", "--parse-workers", parsers, a.File}})
	}
	if a.Analyze {
		r.Analyze = &ProcessMeasurement{}
		jobs = append(jobs, job{r.Analyze, []string{"analyze", "--format", "json", a.File}})
	}
	cpus := make([][]float64, len(jobs))
	for range a.Runs {
		for i, j := range jobs {
			wall, cpu, rss, err := timeProcess(self, j.args)
			if err != nil {
				return nil, err
			}
			j.ph.Seconds = append(j.ph.Seconds, wall)
			cpus[i] = append(cpus[i], cpu)
			j.ph.PeakRSS = max(j.ph.PeakRSS, rss)
		}
	}
	for i, j := range jobs {
		j.ph.Median, j.ph.CPUMedian = median(j.ph.Seconds), median(cpus[i])
		if i > 0 && j.ph.Median > 0 && j.ph.CPUMedian > 0 {
			j.ph.VsGunzip = r.Gunzip.Median / j.ph.Median
			j.ph.CPUVsGunzp = r.Gunzip.CPUMedian / j.ph.CPUMedian
		}
	}
	return r, nil
}

// timeProcess runs self with args and returns its wall and CPU seconds and
// peak RSS.
func timeProcess(self string, args []string) (wall, cpu float64, rss int64, err error) {
	cmd := exec.Command(self, args...)
	cmd.Stdout = io.Discard
	var errb limitedBuffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, 0, fmt.Errorf("%s %v: %v: %s", filepath.Base(self), args, err, errb.b)
	}
	wall = time.Since(start).Seconds()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		rss = ru.Maxrss * 1024
	}
	return wall, cpu, rss, nil
}

// limitedBuffer keeps the first 4 KiB written to it.
type limitedBuffer struct{ b []byte }

// Write implements io.Writer.
func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.b = append(l.b, p[:min(len(p), max(4096-len(l.b), 0))]...)
	return len(p), nil
}

// median returns the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// buildForBench builds the trace that --repeat asks for and returns its
// path, and a function that removes it when it is temporary.
func buildForBench(a Config, stderr io.Writer) (string, func(), error) {
	out, cleanup := a.Out, func() {}
	if out == "" {
		dir, err := os.MkdirTemp("", "kinetoscope-bench-")
		if err != nil {
			return "", nil, err
		}
		out = filepath.Join(dir, filepath.Base(a.File)+"."+a.Layout+".json.gz")
		cleanup = func() { os.RemoveAll(dir) }
	}
	start := time.Now()
	if err := buildTrace(a.File, out, a.Layout, a.Repeat); err != nil {
		cleanup()
		return "", nil, err
	}
	if st, err := os.Stat(out); err == nil {
		fmt.Fprintf(stderr, "built %s: %s x %d, %s layout, %.1f MB compressed, in %.1f s\n",
			out, a.File, a.Repeat, a.Layout, float64(st.Size())/1e6, time.Since(start).Seconds())
	}
	return out, cleanup, nil
}

// write prints the whole-process medians and their ratios to gunzip.
func (r *Processes) write(w io.Writer) {
	fmt.Fprintf(w, "\nwhole processes, median of %d alternating runs:\n", r.Runs)
	row := func(name string, p *ProcessMeasurement) {
		if p == nil {
			return
		}
		fmt.Fprintf(w, "%-22s %9.3f s %9.3f CPU s %10.1f MB peak RSS", name, p.Median, p.CPUMedian, float64(p.PeakRSS)/1e6)
		if p.VsGunzip > 0 {
			fmt.Fprintf(w, "   %.2fx gunzip (wall), %.2fx by CPU", p.VsGunzip, p.CPUVsGunzp)
		}
		fmt.Fprintln(w)
	}
	row("gunzip", &r.Gunzip)
	row("ingest", r.Ingest)
	row("ingest, klauspost gzip", r.IngestSeq)
	row("parallel gunzip", r.PGunzip)
	row("analyze, klauspost gzip", r.AnalyzeSeq)
	row("analyze, parallel gzip", r.AnalyzePar)
	row("ingest, parse in order", r.IngestSeqParse)
	row("ingest, parse in chunks", r.IngestParParse)
	row("analyze, parse in order", r.AnalyzeSeqParse)
	row("analyze, parse in chunks", r.AnalyzeParParse)
	row("analyze --format json", r.Analyze)
}
