package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kinetoscope/ingest"
)

const benchUsage = `usage: kinetoscope bench FILE [--runs N] [--no-python] [--json]
                         [--repeat N [--layout kineto|compact] [--out F] [--build-only]]
                         [--procs] [--analyze] [--parallel [--gzip-workers N]]

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
FILE may be a profile directory: gunzip then decompresses its trace files
one after another (the baseline for reading the ranks), ingest and analyze
read the directory. --phase gunzip|ingest|analyze --cpuprofile F runs one
phase once and profiles it.
`

// pythonLoad is the Python baseline: load the whole trace the way the
// Python tools do, and report time, events and peak RSS as JSON.
const pythonLoad = `import gzip, json, resource, sys, time
t = time.perf_counter()
with open(sys.argv[1], "rb") as raw:
    gz = raw.read(2) == b"\x1f\x8b"
f = gzip.open(sys.argv[1]) if gz else open(sys.argv[1], "rb")
d = json.load(f)
s = time.perf_counter() - t
ev = d["traceEvents"] if isinstance(d, dict) else d
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": s, "cpu_seconds": ru.ru_utime + ru.ru_stime, "events": len(ev), "peak_rss_bytes": ru.ru_maxrss * 1024}))
`

// benchPhase is one measured phase.
type benchPhase struct {
	Seconds   float64 `json:"seconds"`
	CPU       float64 `json:"cpu_seconds"` // user + system, all threads
	MBPerSec  float64 `json:"uncompressed_mb_per_s"`
	PeakRSS   int64   `json:"peak_rss_bytes"`
	EventsSec float64 `json:"events_per_s,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// benchResult is the bench JSON output.
type benchResult struct {
	File              string          `json:"file"`
	Bytes             int64           `json:"bytes"`
	UncompressedBytes int64           `json:"uncompressed_bytes"`
	Events            int64           `json:"events"`
	PythonFunctions   int64           `json:"python_functions"`
	KeptEvents        int64           `json:"kept_events"`
	RetainedBytes     int64           `json:"retained_bytes"`
	BytesPerKept      float64         `json:"retained_bytes_per_kept_event"`
	Gunzip            benchPhase      `json:"gunzip"`
	Ingest            benchPhase      `json:"ingest"`
	Python            *benchPhase     `json:"python_json_load,omitempty"`
	SpeedVsGunzip     float64         `json:"ingest_speed_vs_gunzip"`
	CPUVsGunzip       float64         `json:"ingest_cpu_vs_gunzip"` // gunzip CPU seconds / ingest CPU seconds
	SpeedupVsPython   float64         `json:"ingest_speedup_vs_python,omitempty"`
	RSSVsJSONSize     float64         `json:"ingest_peak_rss_vs_uncompressed"`
	Procs             *procResult     `json:"whole_process,omitempty"`
	Parallel          *parallelResult `json:"parallel_gzip,omitempty"`
}

// benchArgs are the bench flags.
type benchArgs struct {
	file     string
	runs     int
	noPython bool
	asJSON   bool
	pyTime   time.Duration
	repeat   int
	layout   string
	out      string
	build    bool // --build-only
	procs    bool
	analyze  bool
	parallel bool   // --parallel
	workers  int    // --gzip-workers
	phase    string // run one phase in this process (for --procs)
	profile  string // --cpuprofile
}

func runBench(args []string, stdout, stderr io.Writer) error {
	a, err := parseBenchArgs(args, stderr)
	if err != nil {
		return err
	}
	if a.phase != "" {
		return runPhase(a.phase, a.file, a.profile, benchWorkers(a.workers))
	}
	if a.repeat > 0 {
		built, cleanup, err := buildForBench(a, stderr)
		if err != nil || a.build {
			return err
		}
		defer cleanup()
		a.file = built
	}
	res := benchResult{File: a.file}
	// Whole processes first: a child's peak RSS (getrusage) counts the
	// parent's at the fork, small while nothing is measured in it yet.
	if a.procs || a.analyze {
		if res.Procs, err = processRuns(a); err != nil {
			return err
		}
	}
	if a.parallel {
		res.Parallel = &parallelResult{Workers: benchWorkers(a.workers)}
	}
	for run := range a.runs {
		g, err := measure(func() error { return gunzipAll(a.file, &res) })
		if err != nil {
			return err
		}
		in, err := measure(func() error { return ingestOnce(a.file, &res) })
		if err != nil {
			return err
		}
		res.Gunzip.best(g, run == 0)
		res.Ingest.best(in, run == 0)
		res.Gunzip.PeakRSS = max(res.Gunzip.PeakRSS, g.PeakRSS)
		res.Ingest.PeakRSS = max(res.Ingest.PeakRSS, in.PeakRSS)
		if res.Parallel != nil {
			if err := res.Parallel.measure(a.file, run == 0); err != nil {
				return err
			}
		}
	}
	if !a.noPython {
		res.Python = pythonBaseline(a.file, a.pyTime)
	}
	res.finish()
	if a.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	res.write(stdout)
	return nil
}

// best keeps the least wall time and the least CPU time of p and m.
func (p *benchPhase) best(m benchPhase, first bool) {
	if first || m.Seconds < p.Seconds {
		p.Seconds = m.Seconds
	}
	if first || m.CPU < p.CPU {
		p.CPU = m.CPU
	}
}

// parseBenchArgs parses flags given before or after the file.
func parseBenchArgs(args []string, stderr io.Writer) (benchArgs, error) {
	a := benchArgs{runs: 3, pyTime: 30 * time.Minute}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&a.runs, "runs", a.runs, "gunzip and ingest runs (best time counts)")
	fs.BoolVar(&a.noPython, "no-python", false, "skip the Python json.load baseline")
	fs.BoolVar(&a.asJSON, "json", false, "write JSON")
	fs.DurationVar(&a.pyTime, "python-timeout", a.pyTime, "give up on the Python baseline after this long")
	fs.IntVar(&a.repeat, "repeat", 0, "bench a trace built from FILE with its events repeated N times")
	fs.StringVar(&a.layout, "layout", layoutKineto, "layout of the built trace: kineto (FILE's own text) or compact")
	fs.StringVar(&a.out, "out", "", "write the built trace here and keep it")
	fs.BoolVar(&a.build, "build-only", false, "only build the trace (with --repeat and --out)")
	fs.BoolVar(&a.procs, "procs", false, "also time gunzip and ingest as whole processes (median of --runs)")
	fs.BoolVar(&a.analyze, "analyze", false, "also time 'analyze --format json' as a whole process")
	fs.BoolVar(&a.parallel, "parallel", false, "also time the parallel gzip reader and ingest with it")
	fs.IntVar(&a.workers, "gzip-workers", 0, "goroutines of the parallel gzip reader (0: every core but one, at least 2)")
	fs.StringVar(&a.profile, "cpuprofile", "", "write a CPU profile of the ingest runs to this file")
	fs.StringVar(&a.phase, "phase", "", "internal: run one phase (gunzip, ingest) once in this process")
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
	if a.runs < 1 {
		return a, fmt.Errorf("--runs %d: want at least 1", a.runs)
	}
	if a.build && (a.repeat < 1 || a.out == "") {
		return a, errors.New("--build-only needs --repeat and --out")
	}
	a.file = files[0]
	return a, nil
}

// measure runs f and returns its wall time and the peak RSS during it.
func measure(f func() error) (benchPhase, error) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	cpu0 := cpuSeconds()
	start := time.Now()
	err := f()
	return benchPhase{Seconds: time.Since(start).Seconds(), CPU: cpuSeconds() - cpu0, PeakRSS: peakRSS()}, err
}

// gunzipAll decompresses the file to io.Discard (or reads it, if it is not
// gzip) and records its sizes.
func gunzipAll(path string, res *benchResult) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return gunzipDir(path, res)
	}
	return readMaybeGzip(path, func(r io.Reader) error {
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			return err
		}
		res.UncompressedBytes = n
		return nil
	})
}

// gunzipDir decompresses the trace files of a profile directory one after
// another, the baseline for reading a directory of ranks.
func gunzipDir(dir string, res *benchResult) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var total int64
	for _, e := range ents {
		if e.IsDir() || !strings.Contains(e.Name(), ".json") || strings.HasPrefix(e.Name(), "truth") {
			continue
		}
		var one benchResult
		if err := gunzipAll(filepath.Join(dir, e.Name()), &one); err != nil {
			return err
		}
		total += one.UncompressedBytes
	}
	res.UncompressedBytes = total
	return nil
}

// ingestOnce reads the trace and records what it holds.
func ingestOnce(path string, res *benchResult) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		set, err := ingest.Open(path, ingest.Options{})
		if err != nil {
			return err
		}
		for _, t := range set.Traces {
			res.Bytes += t.Counts.Bytes
			res.Events += t.Counts.Events
		}
		return nil
	}
	t, err := ingest.ReadFile(path, ingest.Options{})
	if err != nil {
		return err
	}
	res.Bytes = t.Counts.Bytes
	res.Events = t.Counts.Events
	res.PythonFunctions = t.Counts.PythonFunctions
	res.KeptEvents = t.KeptEvents()
	res.RetainedBytes = t.RetainedBytes()
	runtime.KeepAlive(t)
	return nil
}

// pythonBaseline runs json.load(gzip.open(f)) in python3, or returns nil
// when there is no python3.
func pythonBaseline(path string, timeout time.Duration) *benchPhase {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, py, "-c", pythonLoad, path)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return &benchPhase{Error: fmt.Sprintf("python3: %v: %s", err, lastLine(errb.String()))}
	}
	var r struct {
		Seconds float64 `json:"seconds"`
		CPU     float64 `json:"cpu_seconds"`
		Events  int64   `json:"events"`
		PeakRSS int64   `json:"peak_rss_bytes"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return &benchPhase{Error: fmt.Sprintf("python3 output %q: %v", out.String(), err)}
	}
	return &benchPhase{Seconds: r.Seconds, CPU: r.CPU, PeakRSS: r.PeakRSS}
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// finish computes rates and ratios.
func (r *benchResult) finish() {
	mb := float64(r.UncompressedBytes) / 1e6
	rate := func(p *benchPhase) {
		if p.Seconds > 0 {
			p.MBPerSec = mb / p.Seconds
			p.EventsSec = float64(r.Events) / p.Seconds
		}
	}
	rate(&r.Gunzip)
	r.Gunzip.EventsSec = 0
	rate(&r.Ingest)
	if r.Ingest.Seconds > 0 {
		r.SpeedVsGunzip = r.Gunzip.Seconds / r.Ingest.Seconds
	}
	if r.Ingest.CPU > 0 {
		r.CPUVsGunzip = r.Gunzip.CPU / r.Ingest.CPU
	}
	if r.Python != nil && r.Python.Error == "" {
		rate(r.Python)
		r.SpeedupVsPython = r.Python.Seconds / r.Ingest.Seconds
	}
	if r.UncompressedBytes > 0 {
		r.RSSVsJSONSize = float64(r.Ingest.PeakRSS) / float64(r.UncompressedBytes)
	}
	if r.KeptEvents > 0 {
		r.BytesPerKept = float64(r.RetainedBytes) / float64(r.KeptEvents)
	}
	if r.Parallel != nil {
		r.Parallel.finish(r)
	}
}

// write prints the result as a table with the ratios.
func (r *benchResult) write(w io.Writer) {
	fmt.Fprintf(w, "%s: %.1f MB read, %.1f MB JSON, %s events (%s python_function), %s kept\n\n",
		r.File, float64(r.Bytes)/1e6, float64(r.UncompressedBytes)/1e6, group(r.Events), group(r.PythonFunctions), group(r.KeptEvents))
	fmt.Fprintf(w, "%-22s %9s %9s %11s %12s %12s\n", "phase", "seconds", "CPU s", "JSON MB/s", "events/s", "peak RSS MB")
	row := func(name string, p *benchPhase) {
		if p.Error != "" {
			fmt.Fprintf(w, "%-22s %s\n", name, p.Error)
			return
		}
		ev := "-"
		if p.EventsSec > 0 {
			ev = fmt.Sprintf("%.0f", p.EventsSec)
		}
		fmt.Fprintf(w, "%-22s %9.3f %9.3f %11.1f %12s %12.1f\n", name, p.Seconds, p.CPU, p.MBPerSec, ev, float64(p.PeakRSS)/1e6)
	}
	row("gunzip (ceiling)", &r.Gunzip)
	row("kinetoscope ingest", &r.Ingest)
	if r.Python != nil {
		row("python json.load", r.Python)
	}
	fmt.Fprintf(w, "\ningest speed: %.2fx gunzip (wall), %.2fx by CPU seconds", r.SpeedVsGunzip, r.CPUVsGunzip)
	if r.SpeedupVsPython > 0 {
		fmt.Fprintf(w, ", %.1fx python json.load", r.SpeedupVsPython)
	}
	fmt.Fprintf(w, "\ningest peak RSS: %.3fx the JSON size", r.RSSVsJSONSize)
	if r.Python != nil && r.Python.PeakRSS > 0 {
		fmt.Fprintf(w, " (python: %.2fx)", float64(r.Python.PeakRSS)/float64(r.UncompressedBytes))
	}
	fmt.Fprintf(w, "\nretained: %.1f bytes per kept event (%.1f MB)\n", r.BytesPerKept, float64(r.RetainedBytes)/1e6)
	if r.Parallel != nil {
		r.Parallel.write(w)
	}
	if r.Procs != nil {
		r.Procs.write(w)
	}
}

// cpuSeconds returns the user and system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// resetPeakRSS resets the kernel's peak RSS mark (VmHWM) to the current
// RSS; without it (not Linux) peaks cover the whole process.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns VmHWM from /proc/self/status in bytes, 0 if unknown.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
