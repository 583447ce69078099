package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"kinetoscope/api"
	"kinetoscope/sampletraces"
)

// serveFlags are the serve command's settings.
type serveFlags struct {
	addr, data, token, samples string
	noSamples                  bool
	maxUpload, maxUncompressed int64
	workers                    int
	// grace is how long a shutdown waits for the requests in progress
	// before it cuts them off (not a flag; tests shorten it).
	grace time.Duration
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &serveFlags{grace: 10 * time.Second}
	fs.StringVar(&f.addr, "addr", ":8080", "listen address")
	fs.StringVar(&f.data, "data", "kinetoscope-data", "data directory (SQLite database and uploaded files)")
	fs.StringVar(&f.token, "token", os.Getenv("KINETOSCOPE_TOKEN"), "bearer token required for uploads and deletes (default $KINETOSCOPE_TOKEN; empty: none)")
	fs.StringVar(&f.samples, "samples", "", "directory of sample runs loaded on first start (default: the real sample runs built into the binary)")
	fs.BoolVar(&f.noSamples, "no-samples", false, "load no sample runs on first start")
	fs.Int64Var(&f.maxUpload, "max-upload", 8<<30, "largest upload request body, bytes")
	fs.Int64Var(&f.maxUncompressed, "max-uncompressed", 64<<30, "largest decompressed size of one gzip stream or archive, bytes")
	fs.IntVar(&f.workers, "workers", 2, "analyses run at once")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kinetoscope serve [flags]\n\nServe the REST API (/api/v1) and the web page.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return f, nil
}

// runServe is the serve command: it runs the service until SIGINT/SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) error {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	return serve(ctx, ln, f, stdout)
}

// serve runs the service on ln until ctx ends.
func serve(ctx context.Context, ln net.Listener, f *serveFlags, stdout io.Writer) error {
	log := slog.New(slog.NewTextHandler(stdout, nil))
	srv, err := api.Open(api.Config{
		DataDir: f.data, Token: f.token, MaxUploadBytes: f.maxUpload,
		MaxUncompressedBytes: f.maxUncompressed, Workers: f.workers, Logger: log,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if !f.noSamples {
		loadSamples(ctx, srv, f, log)
	}
	hs := &http.Server{}
	srv.ConfigureHTTP(hs)
	hs.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("kinetoscope serving", "url", "http://"+displayAddr(ln.Addr()), "data", f.data, "token", f.token != "")
	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdown(hs, f.grace, log)
	return nil
}

// shutdown stops hs: it stops accepting connections, waits up to grace
// for the requests in progress, then closes the connections still open
// (an upload cut off leaves no run; the server's Close waits for its
// handler to clean up).
func shutdown(hs *http.Server, grace time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown: cutting off the requests still in progress", "grace", grace, "err", err)
		hs.Close()
	}
}

// loadSamples loads the sample runs on the data directory's first start:
// the --samples directory, else the real sample runs built into the binary
// (written out under the data directory first), and logs what it loaded.
func loadSamples(ctx context.Context, srv *api.Server, f *serveFlags, log *slog.Logger) {
	dir := f.samples
	if dir == "" {
		dir = filepath.Join(f.data, "bundled-samples")
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.CopyFS(dir, sampletraces.Bundled()); err != nil {
				log.Warn("writing the bundled sample runs", "dir", dir, "err", err)
				return
			}
		}
	}
	runs, err := srv.LoadSamples(ctx, dir)
	if err != nil {
		log.Warn("loading samples", "dir", dir, "err", err)
		return
	}
	if len(runs) > 0 {
		names := make([]string, len(runs))
		for i, r := range runs {
			names[i] = r.Name
		}
		log.Info("loaded sample runs", "dir", dir, "runs", len(runs), "names", strings.Join(names, ", "))
	}
}

// displayAddr turns ":8080" style addresses into a clickable host:port.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil || host == "::" || host == "0.0.0.0" || host == "" {
		return "localhost:" + port
	}
	return net.JoinHostPort(host, port)
}
