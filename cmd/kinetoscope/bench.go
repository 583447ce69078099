package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"kinetoscope/internal/bench"
)

// benchUsage is the bench command's synopsis.
const benchUsage = `usage: kinetoscope bench FILE [--runs N] [--no-python] [--json]
                         [--repeat N [--layout kineto|compact] [--out F] [--build-only]]
                         [--procs] [--analyze] [--parallel [--gzip-workers N]]
                         [--parallel-parse [--parse-workers N]]

Measures ingest of one trace file (uncompressed MB/s, events/s, bytes
retained per kept event, peak RSS) and, in the same run, two baselines:
klauspost gzip decompression alone to io.Discard (the ceiling), and
Python's json.load(gzip.open(f)) when python3 is on the PATH (what the
Python tools do first). Gunzip and ingest run --runs times, alternating;
the best time counts. Peak RSS is measured per phase (VmHWM, reset
between phases); Python's in its own process. CPU seconds (user + system,
all threads; the least over the runs) are given beside wall time, and the
speed ratio to gunzip by both: on a busy machine the CPU ratio says more.

--repeat N builds a large trace of a real shape from FILE first: its events
repeated N times, timestamps and ids shifted per copy, in FILE's own text
(--layout kineto) or re-saved as compact JSON, one event per line (--layout
compact); it is written gzip-compressed to --out (kept) or to a temporary
file (removed after). --build-only stops after writing it.

--procs adds whole-process runs: gunzip and ingest, each in a fresh process
of this binary, --runs times alternating; the medians are compared.
--analyze adds 'kinetoscope analyze --format json' of the file to them.
--parallel adds the parallel gzip reader (internal/pgzip, --gzip-workers
goroutines, default every core but one and at least two) to the same
runs: it alone to io.Discard, and ingest with it against ingest with
klauspost's reader; with --procs, its whole-process gunzip too.
--parallel-parse adds ingest with the events parsed in chunks on
--parse-workers goroutines (default every core but one and at least two)
against ingest with them parsed in order, the gzip reader left to
ingest's own decision in both; with --procs and --analyze, the same as
whole processes of ingest and of analyze.
FILE may be a profile directory: gunzip then decompresses its trace files
one after another (the baseline for reading the ranks), ingest and analyze
read the directory. --phase gunzip|ingest|analyze --cpuprofile F runs one
phase once and profiles it (--exectrace F: a Go execution trace of it).
`

// runBench is the bench command: flags to a bench.Config, run by the
// harness.
func runBench(args []string, stdout, stderr io.Writer) error {
	a, err := parseBenchArgs(args, stderr)
	if err != nil {
		return err
	}
	return bench.Run(a, stdout, stderr)
}

// parseBenchArgs parses flags given before or after the file.
func parseBenchArgs(args []string, stderr io.Writer) (bench.Config, error) {
	a := bench.Config{Runs: 3, PythonTimeout: 30 * time.Minute}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&a.Runs, "runs", a.Runs, "gunzip and ingest runs (best time counts)")
	fs.BoolVar(&a.NoPython, "no-python", false, "skip the Python json.load baseline")
	fs.BoolVar(&a.JSON, "json", false, "write JSON")
	fs.DurationVar(&a.PythonTimeout, "python-timeout", a.PythonTimeout, "give up on the Python baseline after this long")
	fs.IntVar(&a.Repeat, "repeat", 0, "bench a trace built from FILE with its events repeated N times")
	fs.StringVar(&a.Layout, "layout", bench.LayoutKineto, "layout of the built trace: kineto (FILE's own text) or compact")
	fs.StringVar(&a.Out, "out", "", "write the built trace here and keep it")
	fs.BoolVar(&a.BuildOnly, "build-only", false, "only build the trace (with --repeat and --out)")
	fs.BoolVar(&a.Procs, "procs", false, "also time gunzip and ingest as whole processes (median of --runs)")
	fs.BoolVar(&a.Analyze, "analyze", false, "also time 'analyze --format json' as a whole process")
	fs.BoolVar(&a.Parallel, "parallel", false, "also time the parallel gzip reader and ingest with it")
	fs.IntVar(&a.Workers, "gzip-workers", 0, "goroutines of the parallel gzip reader (0: every core but one, at least 2)")
	fs.BoolVar(&a.ParallelParse, "parallel-parse", false, "also time ingest with the events parsed in chunks on several cores")
	fs.IntVar(&a.ParseWorkers, "parse-workers", 0, "goroutines of the parallel parse (0: every core but one, at least 2)")
	fs.StringVar(&a.CPUProfile, "cpuprofile", "", "write a CPU profile of the ingest runs to this file")
	fs.StringVar(&a.ExecTrace, "exectrace", "", "write a Go execution trace of the --phase run to this file")
	fs.StringVar(&a.Phase, "phase", "", "internal: run one phase (gunzip, ingest) once in this process")
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return a, err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return a, errors.New("want exactly one FILE")
	}
	if a.Runs < 1 {
		return a, fmt.Errorf("--runs %d: want at least 1", a.Runs)
	}
	if a.BuildOnly && (a.Repeat < 1 || a.Out == "") {
		return a, errors.New("--build-only needs --repeat and --out")
	}
	a.File = files[0]
	return a, nil
}
