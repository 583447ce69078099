package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"kinetoscope/watch"
)

// captureUsage is the capture command's synopsis.
const captureUsage = `usage: kinetoscope capture --vllm URL [--seconds N] [--dir DIR] [watch flags]

Profiles a running vLLM server: POSTs URL/start_profile, waits N seconds
(or until interrupted), POSTs URL/stop_profile, then watches DIR, the
server's torch profiler directory, as 'kinetoscope watch --once' does,
until the new traces are written and analysed. When no new trace file
appears in DIR within --timeout of stop_profile, it stops and says what
DIR holds.
`

// captureArgs are the capture command's parsed arguments.
type captureArgs struct {
	watchArgs
	vllm    string
	seconds float64
	// timeout bounds the wait for the first trace file after
	// stop_profile (0: no bound).
	timeout time.Duration
}

// runCapture is the capture command.
func runCapture(args []string, stdout, stderr io.Writer) error {
	a, err := parseCaptureArgs(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return capture(ctx, a, stdout, stderr)
}

// parseCaptureArgs parses the capture flags.
func parseCaptureArgs(args []string, stderr io.Writer) (captureArgs, error) {
	a := captureArgs{watchArgs: watchArgs{source: "capture"}}
	fs := newFlagSet("capture", captureUsage, stderr)
	a.flags(fs)
	fs.StringVar(&a.vllm, "vllm", "", "the vLLM server's URL (http://host:8000)")
	fs.Float64Var(&a.seconds, "seconds", 10, "how long to profile")
	fs.DurationVar(&a.timeout, "timeout", 5*time.Minute, "give up when no new trace file appears in --dir this long after stop_profile (0: wait forever)")
	fs.StringVar(&a.dir, "dir", os.Getenv("VLLM_TORCH_PROFILER_DIR"), "the server's torch profiler directory (default $VLLM_TORCH_PROFILER_DIR)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return a, err
	}
	switch {
	case len(pos) > 0:
		return a, fmt.Errorf("unexpected argument %q", pos[0])
	case a.vllm == "":
		fs.Usage()
		return a, errors.New("want --vllm URL: the running vLLM server")
	case a.dir == "":
		return a, errors.New("want --dir DIR: the directory the server writes its traces to")
	}
	a.once = true
	return a, checkOneOf("format", a.format, watchFormats)
}

// capture runs one profile of the server and watches its traces.
func capture(ctx context.Context, a captureArgs, stdout, stderr io.Writer) error {
	if err := checkWritable(a.dir); err != nil {
		return err
	}
	base := strings.TrimRight(a.vllm, "/")
	started := time.Now().Add(-time.Second) // file times may be coarse
	if err := post(ctx, base+"/start_profile"); err != nil {
		var u *unreachableError
		if errors.As(err, &u) {
			return fmt.Errorf("the vLLM server at %s is unreachable (%w): is it running, and at that address and port?", base, u.err)
		}
		return notEnabled(base, a.dir, err)
	}
	fmt.Fprintf(stderr, "profiling %s for %gs (interrupt to stop sooner)\n", base, a.seconds)
	waitCtx, cancel := context.WithTimeout(ctx, time.Duration(a.seconds*float64(time.Second)))
	<-waitCtx.Done()
	cancel()
	if err := post(context.Background(), base+"/stop_profile"); err != nil {
		return fmt.Errorf("stop the profile: %w", err)
	}
	fmt.Fprintf(stderr, "profile stopped; waiting for the traces in %s\n", a.dir)
	return waitTraces(ctx, a, started, stdout, stderr)
}

// errNoTrace ends a capture's watch when no trace appeared in time.
var errNoTrace = errors.New("no trace appeared")

// waitTraces watches the directory for the profile's traces (those
// written since started), giving up when none appears within a.timeout.
func waitTraces(ctx context.Context, a captureArgs, started time.Time, stdout, stderr io.Writer) error {
	a.opt.After = started
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var appeared atomic.Bool
	a.seen = func(watch.File) { appeared.Store(true) }
	hint := time.AfterFunc(a.opt.Settle, func() {
		if !appeared.Load() {
			fmt.Fprintf(stderr, "no trace has appeared in %s since start_profile: is the server writing elsewhere? Its torch_profiler_dir must be %s\n", a.dir, a.dir)
		}
	})
	defer hint.Stop()
	if a.timeout > 0 {
		giveUp := time.AfterFunc(a.timeout, func() {
			if !appeared.Load() {
				cancel(errNoTrace)
			}
		})
		defer giveUp.Stop()
	}
	err := watchDir(ctx, a.watchArgs, stdout, stderr)
	if errors.Is(context.Cause(ctx), errNoTrace) {
		return noTraceError(a.dir, started, a.timeout)
	}
	return err
}

// noTraceError says that no trace appeared in dir within timeout of
// stop_profile, and what dir holds: each file and why the watcher passed
// it over.
func noTraceError(dir string, started time.Time, timeout time.Duration) error {
	entries, err := watch.Survey(dir, started)
	if err != nil {
		return fmt.Errorf("no trace appeared in %s within %v of stop_profile, and the directory cannot be listed: %w", dir, timeout, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no trace appeared in %s within %v of stop_profile (--timeout): is the server writing elsewhere? Its torch_profiler_dir must be this directory.", dir, timeout)
	if len(entries) == 0 {
		b.WriteString("\nThe directory is empty.")
	} else {
		fmt.Fprintf(&b, "\nThe directory holds %d entries:", len(entries))
	}
	const most = 20
	for i, e := range entries {
		if i == most {
			fmt.Fprintf(&b, "\n  ... and %d more", len(entries)-most)
			break
		}
		rel, _ := filepath.Rel(dir, e.Path)
		fmt.Fprintf(&b, "\n  %s", rel)
		if !e.ModTime.IsZero() {
			fmt.Fprintf(&b, " (%d bytes, written %s)", e.Size, e.ModTime.Format(time.DateTime))
		}
		if e.Ignored != "" {
			fmt.Fprintf(&b, ": %s", e.Ignored)
		}
	}
	return errors.New(b.String())
}

// post POSTs an empty body to url and fails unless it answers 2xx.
func post(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &unreachableError{err: err}
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}

// unreachableError is a request that got no HTTP answer: nothing listens
// at the address, or the host cannot be reached or named.
type unreachableError struct{ err error }

// Error returns the transport's error.
func (e *unreachableError) Error() string { return e.err.Error() }

// Unwrap returns the transport's error.
func (e *unreachableError) Unwrap() error { return e.err }

// notEnabled explains a start_profile that failed: profiling is not
// enabled on the server, and the flags to restart it with.
func notEnabled(base, dir string, err error) error {
	abs, aerr := filepath.Abs(dir)
	if aerr != nil {
		abs = dir
	}
	return fmt.Errorf(`%w
profiling is not enabled on the vLLM server at %s (its /start_profile failed).
Restart it with the torch profiler writing to %s:
  newer vLLM:  vllm serve ... --profiler-config '{"profiler": "torch", "torch_profiler_dir": "%s"}'
  older vLLM:  VLLM_TORCH_PROFILER_DIR=%s vllm serve ...`, err, base, abs, abs, abs)
}

// checkWritable fails unless dir is a directory this process can write.
func checkWritable(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("profile directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("profile directory %s: not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".kinetoscope-write-check-*")
	if err != nil {
		return fmt.Errorf("profile directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
