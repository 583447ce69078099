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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kinetoscope/api"
	"kinetoscope/api/web"
	"kinetoscope/sampletraces"
	"kinetoscope/watch"
)

// serveFlags are the serve command's settings.
type serveFlags struct {
	addr, data, token, readToken, samples string
	// db and blobs name the stores (api.Config.Meta, Blobs); replica
	// names this process among the replicas.
	db, blobs, replica          string
	jobTimeout                  time.Duration
	maxUpload, maxUncompressed  int64
	workers, maxFiles, maxParts int
	chartWorkers                int
	chartTimeout                time.Duration
	chartCache                  int64
	// maxAnalysisMemory is one analysis's memory budget (0: the default).
	maxAnalysisMemory int64
	// minFreeDisk is the free space kept in reserve (api.Config.MinFreeDisk).
	minFreeDisk int64
	// maxUploads, minUploadRate and uploadGrace bound the uploads
	// received at once and how slow they may be.
	maxUploads    int
	minUploadRate int64
	uploadGrace   time.Duration
	// insecure allows a non-loopback address without a token.
	insecure bool
	// noSamples skips loading sample runs on first start.
	noSamples bool
	// watch is a profile directory whose complete rank sets become runs.
	watch string
	// allowedHosts are the Host names served, comma-separated (empty:
	// api.DefaultAllowedHosts of the listen address).
	allowedHosts string
	// grace is how long a shutdown waits for the requests in progress
	// before it cuts them off (not a flag; tests shorten it).
	grace time.Duration
}

func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &serveFlags{grace: 10 * time.Second}
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address (another machine can reach only a non-loopback one, which needs --token)")
	fs.StringVar(&f.data, "data", "kinetoscope-data", "data directory (SQLite database and uploaded files, unless --db and --blobs say otherwise; the chart cache)")
	fs.StringVar(&f.db, "db", "", "runs and reports: sqlite://PATH (default: runs.db in --data) or postgres://USER@HOST:PORT/DB (shared by replicas, with the analysis queue)")
	fs.StringVar(&f.blobs, "blobs", "", "uploaded files: file://DIR (default: blobs/ in --data) or s3://BUCKET?endpoint=HOST:PORT&region=R[&insecure=true] (credentials from $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY)")
	fs.StringVar(&f.replica, "replica", "", "this replica's name in logs, /healthz and /metrics (default: host name and process id)")
	fs.DurationVar(&f.jobTimeout, "job-timeout", 30*time.Minute, "longest one analysis may take on the shared queue (--db postgres://); a dead replica's job is taken by another after this plus a minute")
	fs.StringVar(&f.token, "token", os.Getenv("KINETOSCOPE_TOKEN"), "bearer token required on every route but /healthz (default $KINETOSCOPE_TOKEN; empty: none)")
	fs.StringVar(&f.readToken, "read-token", os.Getenv("KINETOSCOPE_READ_TOKEN"), "read-only bearer token: may read but not upload or delete (default $KINETOSCOPE_READ_TOKEN; needs --token)")
	fs.BoolVar(&f.insecure, "insecure-no-token", false, "allow a non-loopback --addr without a token: anyone who reaches it reads every trace")
	fs.IntVar(&f.maxFiles, "max-files", 1024, "most trace files in one run (multipart files, archive members)")
	fs.IntVar(&f.maxParts, "max-parts", 1024, "most parts in one multipart upload")
	fs.StringVar(&f.samples, "samples", "", "directory of sample runs loaded on first start (default: the real sample runs built into the binary)")
	fs.BoolVar(&f.noSamples, "no-samples", false, "load no sample runs on first start")
	fs.StringVar(&f.watch, "watch", "", "profile directory to follow: every complete set of rank files that appears in it becomes a run")
	fs.Int64Var(&f.maxUpload, "max-upload", 8<<30, "largest upload request body, bytes")
	fs.Int64Var(&f.maxUncompressed, "max-uncompressed", 64<<30, "largest decompressed size of one gzip stream, archive or archive member, bytes")
	fs.IntVar(&f.workers, "workers", 2, "analyses run at once")
	fs.Int64Var(&f.maxAnalysisMemory, "max-analysis-memory", 0, "memory budget of one analysis, bytes, estimated while the files are read (140 bytes per kept event, 1000 per distinct name): a run past it fails, naming the limit and the counts (0: half the machine's or cgroup's memory, divided by --workers)")
	fs.IntVar(&f.chartWorkers, "chart-workers", 0, "charts drawn at once, apart from the analyses (0: a quarter of the processors, at least 1)")
	fs.DurationVar(&f.chartTimeout, "chart-timeout", time.Minute, "longest a chart request may take, waiting for a chart worker included")
	fs.Int64Var(&f.chartCache, "chart-cache", 256<<20, "bytes of rendered charts kept on disk under the data directory")
	fs.IntVar(&f.maxUploads, "max-uploads", 64, "most uploads received at once: one more is answered 503 with Retry-After")
	fs.Int64Var(&f.minUploadRate, "min-upload-rate", 8<<10, "least average upload rate, bytes/s, once --upload-grace has passed: a slower upload is cut off (408)")
	fs.DurationVar(&f.uploadGrace, "upload-grace", 30*time.Second, "time an upload may take before --min-upload-rate applies")
	fs.Int64Var(&f.minFreeDisk, "min-free-disk", 256<<20, "free space kept in reserve on the disk of the data directory, bytes: uploads are refused (507) below it and /healthz answers 503 degraded, so that deletes and the database's log have room (negative: no reserve)")
	fs.StringVar(&f.allowedHosts, "allowed-hosts", "", "host names the server answers to, comma-separated (a Host header naming another is refused: DNS rebinding); '*': any, '.example.com': every name below it (default: localhost, 127.0.0.1, ::1 and the --addr host; for an --addr of every interface, the machine's host name and addresses)")
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
	if err := f.checkExposure(); err != nil {
		return nil, err
	}
	if err := errors.Join(checkTokenFlag("--token", f.token), checkTokenFlag("--read-token", f.readToken)); err != nil {
		return nil, err
	}
	return f, nil
}

// minTokenLen is the shortest --token or --read-token accepted.
const minTokenLen = 16

// checkTokenFlag refuses a blank or short token: one a visitor guesses is
// no protection.
func checkTokenFlag(flag, tok string) error {
	if tok == "" {
		return nil
	}
	if n := len(strings.TrimSpace(tok)); n < minTokenLen {
		return fmt.Errorf("%s has %d visible characters: give at least %d (openssl rand -hex 16 makes one)", flag, n, minTokenLen)
	}
	return nil
}

// hosts returns the host names served: --allowed-hosts, else the
// defaults for --addr (a name) and for the address it listens on, bound.
func (f *serveFlags) hosts(bound string) []string {
	if strings.TrimSpace(f.allowedHosts) != "" {
		return strings.Split(f.allowedHosts, ",")
	}
	hosts := api.DefaultAllowedHosts(bound)
	if f.addr != "" {
		hosts = append(hosts, api.DefaultAllowedHosts(f.addr)...)
	}
	return hosts
}

// shared reports whether the stores may be shared with other replicas.
func (f *serveFlags) shared() bool {
	return strings.HasPrefix(f.db, "postgres://") || strings.HasPrefix(f.db, "postgresql://")
}

// checkExposure refuses to serve beyond this machine without a token,
// unless --insecure-no-token says so.
func (f *serveFlags) checkExposure() error {
	if f.token != "" || f.insecure || isLoopback(f.addr) {
		return nil
	}
	return fmt.Errorf("--addr %s is reachable from other machines and no --token is set: "+
		"set --token (or KINETOSCOPE_TOKEN), listen on 127.0.0.1, or pass --insecure-no-token to serve every trace to anyone", f.addr)
}

// isLoopback reports whether a listen address accepts only this machine's
// connections ("localhost:8080", "127.0.0.1:8080", "[::1]:8080"; not
// ":8080").
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
		DataDir: f.data, Token: f.token, ReadToken: f.readToken, MaxUploadBytes: f.maxUpload,
		MaxUncompressedBytes: f.maxUncompressed, Workers: f.workers, Logger: log,
		MaxFiles: f.maxFiles, MaxParts: f.maxParts,
		ChartWorkers: f.chartWorkers, ChartTimeout: f.chartTimeout, ChartCacheBytes: f.chartCache,
		Meta: f.db, Blobs: f.blobs, Replica: f.replica, JobTimeout: f.jobTimeout,
		AllowedHosts: f.hosts(ln.Addr().String()), MaxAnalysisMemory: f.maxAnalysisMemory,
		MinFreeDisk: f.minFreeDisk, MaxUploads: f.maxUploads, MinUploadRate: f.minUploadRate, UploadGrace: f.uploadGrace,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	// A shared instance loads samples only when asked (--samples): two
	// replicas starting at once would load them twice.
	if !f.noSamples && (!f.shared() || f.samples != "") {
		loadSamples(ctx, srv, f, log)
	}
	if f.watch != "" {
		go watchInto(ctx, srv, f.watch, log)
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
	shutdown(hs, srv, f.grace, log)
	return nil
}

// shutdown stops hs: it stops accepting connections and waits up to grace
// for the requests in progress; then it cuts off the transfers still open
// (an upload cut off answers 503 and leaves no run), waits a little for
// those answers, and closes the connections still open.
func shutdown(hs *http.Server, srv *api.Server, grace time.Duration, log *slog.Logger) {
	if waitIdle(hs, grace) {
		return
	}
	log.Warn("shutdown: cutting off the requests still in progress", "grace", grace)
	srv.CutOff()
	if !waitIdle(hs, cutOffWait) {
		hs.Close()
	}
}

// cutOffWait is how long a shutdown waits for the answers of the
// transfers it cut off.
const cutOffWait = 3 * time.Second

// waitIdle shuts hs down, waiting up to d for its connections to go idle;
// it reports whether they did.
func waitIdle(hs *http.Server, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := hs.Shutdown(ctx)
	return err == nil || errors.Is(err, http.ErrServerClosed)
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

// watchInto follows dir until ctx ends and imports every set of rank files
// that becomes complete (or settles, missing ranks named in the log) as one
// run labelled source=watch.
func watchInto(ctx context.Context, srv *api.Server, dir string, log *slog.Logger) {
	log.Info("watching a profile directory", "dir", dir)
	st := &watchedState{dir: dir, files: map[string]watch.File{}}
	srv.SetWatched(st.summary())
	w := watch.New(dir, watch.Options{OnFile: func(f watch.File) {
		st.files[f.Path] = f
		srv.SetWatched(st.summary())
	}})
	err := w.Run(ctx, func(sr *watch.SetReport) bool {
		if len(sr.Files) == 0 {
			return true
		}
		name := fmt.Sprintf("%s set %d", filepath.Base(dir), sr.Index)
		labels := map[string]string{"source": "watch", "watch_set": strconv.Itoa(sr.Index)}
		run, err := srv.ImportFiles(ctx, name, sr.Files, labels)
		if err != nil {
			log.Warn("importing a watched set", "dir", dir, "set", sr.Index, "err", err)
			return true
		}
		st.runs = append(st.runs, run.ID)
		for _, p := range sr.Files {
			delete(st.files, p) // the set is a run now; the list shows what is still filling
		}
		srv.SetWatched(st.summary())
		log.Info("imported a watched set", "dir", dir, "set", sr.Index, "run", run.ID, "files", len(sr.Files),
			"missing_ranks", fmt.Sprint(sr.Missing), "truncated", strings.Join(sr.Truncated, ", "))
		return true
	})
	if err != nil && ctx.Err() == nil {
		log.Warn("watching stopped", "dir", dir, "err", err)
	}
}

// watchedState is what serve --watch knows of its directory: the files of
// the sets still filling, by path, and the runs made so far. Only the
// watcher's goroutine touches it.
type watchedState struct {
	dir   string
	files map[string]watch.File
	runs  []string
}

// summary is the state as the run list shows it.
func (w *watchedState) summary() web.WatchedDir {
	d := web.WatchedDir{Dir: w.dir, Runs: slices.Clone(w.runs), Updated: time.Now()}
	for _, f := range w.files {
		d.Files++
		d.Bytes += f.Size
		switch f.State {
		case watch.Complete:
			d.Complete++
		case watch.Growing, watch.Appeared, watch.Waiting:
			d.Growing++
		case watch.Truncated:
			d.Truncated++
		}
		d.WorldSize = max(d.WorldSize, f.WorldSize)
	}
	return d
}
