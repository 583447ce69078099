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
until the new traces are written and analysed.
`

// captureArgs are the capture command's parsed arguments.
type captureArgs struct {
	watchArgs
	vllm    string
	seconds float64
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
	var a captureArgs
	fs := newFlagSet("capture", captureUsage, stderr)
	a.flags(fs)
	fs.StringVar(&a.vllm, "vllm", "", "the vLLM server's URL (http://host:8000)")
	fs.Float64Var(&a.seconds, "seconds", 10, "how long to profile")
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
	a.opt.After = started
	var appeared atomic.Bool
	a.seen = func(watch.File) { appeared.Store(true) }
	t := time.AfterFunc(a.opt.Settle, func() {
		if !appeared.Load() {
			fmt.Fprintf(stderr, "no trace has appeared in %s since start_profile: is the server writing elsewhere? Its torch_profiler_dir must be %s\n", a.dir, a.dir)
		}
	})
	defer t.Stop()
	return watchDir(ctx, a.watchArgs, stdout, stderr)
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
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}

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
