// Package bench is the harness of kinetoscope bench: it builds large traces
// of a real shape, and times ingest, analysis and the parallel gzip reader
// in this process and as whole processes, against klauspost gunzip and
// Python's json.load, in the same run.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
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
	"kinetoscope/render"
)

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

// Measurement is one measured phase.
type Measurement struct {
	Seconds   float64 `json:"seconds"`
	CPU       float64 `json:"cpu_seconds"` // user + system, all threads
	MBPerSec  float64 `json:"uncompressed_mb_per_s"`
	PeakRSS   int64   `json:"peak_rss_bytes"`
	EventsSec float64 `json:"events_per_s,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// Result is the bench JSON output.
type Result struct {
	File              string         `json:"file"`
	Bytes             int64          `json:"bytes"`
	UncompressedBytes int64          `json:"uncompressed_bytes"`
	Events            int64          `json:"events"`
	PythonFunctions   int64          `json:"python_functions"`
	KeptEvents        int64          `json:"kept_events"`
	RetainedBytes     int64          `json:"retained_bytes"`
	BytesPerKept      float64        `json:"retained_bytes_per_kept_event"`
	Gunzip            Measurement    `json:"gunzip"`
	Ingest            Measurement    `json:"ingest"`
	Python            *Measurement   `json:"python_json_load,omitempty"`
	SpeedVsGunzip     float64        `json:"ingest_speed_vs_gunzip"`
	CPUVsGunzip       float64        `json:"ingest_cpu_vs_gunzip"` // gunzip CPU seconds / ingest CPU seconds
	SpeedupVsPython   float64        `json:"ingest_speedup_vs_python,omitempty"`
	RSSVsJSONSize     float64        `json:"ingest_peak_rss_vs_uncompressed"`
	Procs             *Processes     `json:"whole_process,omitempty"`
	Parallel          *ParallelGzip  `json:"parallel_gzip,omitempty"`
	Parse             *ParallelParse `json:"parallel_parse,omitempty"`
}

// Config is what a bench run measures, as the bench command's flags say.
type Config struct {
	File          string        // the trace file or profile directory
	Runs          int           // gunzip and ingest runs (the best time counts)
	NoPython      bool          // skip the Python json.load baseline
	JSON          bool          // write JSON
	PythonTimeout time.Duration // give up on the Python baseline after this long
	Repeat        int           // bench a trace built from File with its events repeated this many times
	Layout        string        // of the built trace: LayoutKineto or LayoutCompact
	Out           string        // write the built trace here and keep it
	BuildOnly     bool          // only build the trace (with Repeat and Out)
	Procs         bool          // also time gunzip and ingest as whole processes
	Analyze       bool          // also time analyze --format json as a whole process
	Parallel      bool          // also time the parallel gzip reader and ingest with it
	Workers       int           // goroutines of the parallel gzip reader (0: every core but one, at least 2)
	ParallelParse bool          // also time ingest (and analyze) with the events parsed in chunks against in order
	ParseWorkers  int           // goroutines of the parallel parse (0: every core but one, at least 2)
	Phase         string        // run one phase once in this process (what Procs runs)
	CPUProfile    string        // write a CPU profile of the phase to this file
	ExecTrace     string        // write a Go execution trace of the phase to this file
}

// Run measures what a says and writes the result to stdout (progress and
// notes to stderr).
func Run(a Config, stdout, stderr io.Writer) error {
	var err error
	if a.Phase != "" {
		return runPhase(a.Phase, a.File, a.CPUProfile, a.ExecTrace, benchWorkers(a.Workers), benchWorkers(a.ParseWorkers))
	}
	if a.Repeat > 0 {
		built, cleanup, err := buildForBench(a, stderr)
		if err != nil || a.BuildOnly {
			return err
		}
		defer cleanup()
		a.File = built
	}
	res := Result{File: a.File}
	// Whole processes first: a child's peak RSS (getrusage) counts the
	// parent's at the fork, small while nothing is measured in it yet.
	if a.Procs || a.Analyze {
		if res.Procs, err = processRuns(a); err != nil {
			return err
		}
	}
	if a.Parallel {
		res.Parallel = &ParallelGzip{Workers: benchWorkers(a.Workers)}
	}
	if a.ParallelParse {
		res.Parse = &ParallelParse{Workers: benchWorkers(a.ParseWorkers)}
	}
	for run := range a.Runs {
		g, err := measure(func() error { return gunzipAll(a.File, &res) })
		if err != nil {
			return err
		}
		in, err := measure(func() error { return ingestOnce(a.File, &res) })
		if err != nil {
			return err
		}
		res.Gunzip.best(g, run == 0)
		res.Ingest.best(in, run == 0)
		res.Gunzip.PeakRSS = max(res.Gunzip.PeakRSS, g.PeakRSS)
		res.Ingest.PeakRSS = max(res.Ingest.PeakRSS, in.PeakRSS)
		if res.Parallel != nil {
			if err := res.Parallel.measure(a.File, run == 0); err != nil {
				return err
			}
		}
		if res.Parse != nil {
			if err := res.Parse.measure(a.File, run == 0); err != nil {
				return err
			}
		}
	}
	if !a.NoPython {
		res.Python = pythonBaseline(a.File, a.PythonTimeout)
	}
	res.finish()
	if a.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	res.write(stdout)
	return nil
}

// best keeps the least wall time and the least CPU time of p and m.
func (p *Measurement) best(m Measurement, first bool) {
	if first || m.Seconds < p.Seconds {
		p.Seconds = m.Seconds
	}
	if first || m.CPU < p.CPU {
		p.CPU = m.CPU
	}
}

// measure runs f and returns its wall time and the peak RSS during it.
func measure(f func() error) (Measurement, error) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	cpu0 := cpuSeconds()
	start := time.Now()
	err := f()
	return Measurement{Seconds: time.Since(start).Seconds(), CPU: cpuSeconds() - cpu0, PeakRSS: peakRSS()}, err
}

// gunzipAll decompresses the file to io.Discard (or reads it, if it is not
// gzip) and records its sizes.
func gunzipAll(path string, res *Result) error {
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
func gunzipDir(dir string, res *Result) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var total int64
	for _, e := range ents {
		if e.IsDir() || !strings.Contains(e.Name(), ".json") || strings.HasPrefix(e.Name(), "truth") {
			continue
		}
		var one Result
		if err := gunzipAll(filepath.Join(dir, e.Name()), &one); err != nil {
			return err
		}
		total += one.UncompressedBytes
	}
	res.UncompressedBytes = total
	return nil
}

// ingestOnce reads the trace and records what it holds.
func ingestOnce(path string, res *Result) error {
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
func pythonBaseline(path string, timeout time.Duration) *Measurement {
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
		return &Measurement{Error: fmt.Sprintf("python3: %v: %s", err, lastLine(errb.String()))}
	}
	var r struct {
		Seconds float64 `json:"seconds"`
		CPU     float64 `json:"cpu_seconds"`
		Events  int64   `json:"events"`
		PeakRSS int64   `json:"peak_rss_bytes"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return &Measurement{Error: fmt.Sprintf("python3 output %q: %v", out.String(), err)}
	}
	return &Measurement{Seconds: r.Seconds, CPU: r.CPU, PeakRSS: r.PeakRSS}
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// finish computes rates and ratios.
func (r *Result) finish() {
	mb := float64(r.UncompressedBytes) / 1e6
	rate := func(p *Measurement) {
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
	if r.Parse != nil {
		r.Parse.finish(r)
	}
}

// write prints the result as a table with the ratios.
func (r *Result) write(w io.Writer) {
	fmt.Fprintf(w, "%s: %.1f MB read, %.1f MB JSON, %s events (%s python_function), %s kept\n\n",
		r.File, float64(r.Bytes)/1e6, float64(r.UncompressedBytes)/1e6, render.Grouped(r.Events), render.Grouped(r.PythonFunctions), render.Grouped(r.KeptEvents))
	fmt.Fprintf(w, "%-22s %9s %9s %11s %12s %12s\n", "phase", "seconds", "CPU s", "JSON MB/s", "events/s", "peak RSS MB")
	row := func(name string, p *Measurement) {
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
	if r.Parse != nil {
		r.Parse.write(w, r.UncompressedBytes)
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
