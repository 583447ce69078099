// Package api is Kinetoscope's REST service and web page: it stores uploaded
// traces, analyses them in the background and serves reports, charts and
// diffs. It only wires the ingest, analyze and render packages together
// (through the driver package) over a store.Meta and a store.Blobs.
//
// The embedded store's data directory holds:
//
//	runs.db                  SQLite: runs, files, labels, status, reports
//	blobs/sha256/ab/abcd...  uploaded files, named by their SHA-256
//	blobs/tmp/               uploads in progress (renamed when complete,
//	                         removed at start)
//	charts/ID/               rendered charts of a run (bounded in size)
//	ballast                  4 MiB freed when the disk fills, so that
//	                         deletes can still be recorded (keepBallast)
//	.samples-loaded          written once the sample runs were loaded
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
	"kinetoscope/api/store"
	"kinetoscope/api/web"
	"kinetoscope/driver"
)

// Config holds the server's settings. Zero fields take the defaults below.
type Config struct {
	// DataDir holds the embedded database (runs.db) and blobs (blobs/)
	// unless Meta and Blobs say otherwise, and the chart cache (charts/).
	DataDir string
	// Meta is where runs, their status and reports are kept: sqlite://PATH
	// (default: runs.db in DataDir) or postgres://... A server over
	// PostgreSQL queues its analyses there too (River), so any number of
	// replicas can share one database and one blob store.
	Meta string
	// Blobs is where the uploaded files are kept: file://DIR (default:
	// blobs/ in DataDir) or s3://BUCKET?endpoint=HOST:PORT&region=R.
	Blobs string
	// JobTimeout bounds one analysis on the shared queue (default 30m):
	// past it the run fails, saying so. A job whose replica died is taken
	// by another once it has been running for JobTimeout + RescueMargin
	// (default 1m), within rescueSlack (40 s) more.
	JobTimeout   time.Duration
	RescueMargin time.Duration
	// Replica names this server among the replicas, in logs, /healthz and
	// /metrics (default: host name and process id).
	Replica string
	// SweepAge is the age past which an upload's leftovers are removed:
	// in an object store, incomplete multipart uploads and temporary
	// objects (what a process killed mid-upload leaves); in any blob
	// store, blobs that no run references and no upload holds (default
	// 24h).
	SweepAge time.Duration
	// Token, when set, is required on every route but /healthz and the
	// login page: as "Authorization: Bearer TOKEN", or in the session
	// cookie the login page sets.
	Token string
	// ReadToken, when set (only with Token), may read (GET, HEAD) but not
	// upload or delete.
	ReadToken string
	// MaxUploadBytes caps one upload request body (default 8 GiB).
	MaxUploadBytes int64
	// MaxUncompressedBytes caps the decompressed size of one gzip stream
	// and of an archive (default 64 GiB).
	MaxUncompressedBytes int64
	// MaxRatio caps the decompression ratio of a gzip stream once it has
	// inflated past 256 MiB (default 200; real traces compress 12-22x).
	MaxRatio int64
	// MaxFiles caps the trace files of one run: the files of a multipart
	// upload, or the members of an archive (default 1024).
	MaxFiles int
	// MaxParts caps the parts of one multipart request, fields included
	// (default 1024).
	MaxParts int
	// Workers is the number of analyses run at once (default 2): analysis
	// memory grows with the trace, so this bounds the server's memory.
	Workers int
	// MaxAnalysisMemory is the memory budget of one analysis, estimated
	// while its files are read (ingest.Budget): a run past it fails,
	// naming the limit and the counts, before its memory is spent
	// (default DefaultAnalysisMemory: half the machine's memory, shared by
	// the workers).
	MaxAnalysisMemory int64
	// ChartWorkers is the number of charts drawn at once, apart from the
	// analysis workers (default: a quarter of the processors, at least
	// one): a timeline re-reads the stored trace, and drawing must leave
	// the processors to the analyses.
	ChartWorkers int
	// ChartTimeout bounds one chart request, waiting for a chart worker
	// included (default 60s).
	ChartTimeout time.Duration
	// ChartCacheBytes bounds the rendered charts kept on disk in
	// charts/ under DataDir (default 256 MiB).
	ChartCacheBytes int64
	// StallTimeout drops an upload that sends nothing for this long
	// (default 60s); an upload that keeps sending may take as long as it
	// needs.
	StallTimeout time.Duration
	// MaxUploads caps the uploads received at once (default 64): one more
	// is answered 503 with Retry-After.
	MaxUploads int
	// MinUploadRate is the least average rate, in bytes a second, of an
	// upload once UploadGrace has passed since it began (defaults 8 KiB/s
	// and 30s): a slower one is cut off (408).
	MinUploadRate int64
	UploadGrace   time.Duration
	// MinFreeDisk is the free space kept in reserve on the disks of the
	// data directory and the embedded stores (default 256 MiB; negative:
	// none): uploads are refused (507) below it, so that deletes and the
	// database's log always have room.
	MinFreeDisk int64
	// AllowedHosts are the names a request's Host header may give
	// (DefaultAllowedHosts; "*": any; ".example.com": every name below
	// it); empty: the loopback names.
	AllowedHosts []string
	// Logger receives the server's log; nil means slog.Default().
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.DataDir == "" {
		c.DataDir = "kinetoscope-data"
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 8 << 30
	}
	if c.MaxUncompressedBytes <= 0 {
		c.MaxUncompressedBytes = 64 << 30
	}
	if c.MaxRatio <= 0 {
		c.MaxRatio = 200
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.MaxAnalysisMemory <= 0 {
		c.MaxAnalysisMemory = DefaultAnalysisMemory(c.Workers)
	}
	if c.MaxUploads <= 0 {
		c.MaxUploads = 64
	}
	if c.MinUploadRate <= 0 {
		c.MinUploadRate = 8 << 10
	}
	if c.UploadGrace <= 0 {
		c.UploadGrace = 30 * time.Second
	}
	if c.MinFreeDisk == 0 {
		c.MinFreeDisk = 256 << 20
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = 1024
	}
	if c.MaxParts <= 0 {
		c.MaxParts = 1024
	}
	if c.ChartWorkers <= 0 {
		c.ChartWorkers = max(1, runtime.GOMAXPROCS(0)/4)
	}
	if c.ChartTimeout <= 0 {
		c.ChartTimeout = 60 * time.Second
	}
	if c.ChartCacheBytes <= 0 {
		c.ChartCacheBytes = 256 << 20
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = 60 * time.Second
	}
	if c.Meta == "" {
		c.Meta = "sqlite://" + filepath.Join(c.DataDir, "runs.db")
	}
	if c.Blobs == "" {
		c.Blobs = "file://" + filepath.Join(c.DataDir, "blobs")
	}
	if c.JobTimeout <= 0 {
		c.JobTimeout = 30 * time.Minute
	}
	if c.RescueMargin <= 0 {
		c.RescueMargin = time.Minute
	}
	if c.Replica == "" {
		c.Replica = replicaID()
	}
	if c.SweepAge <= 0 {
		c.SweepAge = 24 * time.Hour
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// analysisHook, when set (tests do: export_test.go), runs in place of a
// run's analysis, told the run's id and its files' names, with the real
// analysis to call (or not).
type analysisHook func(ctx context.Context, run string, files []string, analyse func() (*analyze.Report, error)) (*analyze.Report, error)

// Server is the Kinetoscope service.
type Server struct {
	cfg   Config
	meta  store.Meta
	blobs store.Blobs
	// queue queues the runs' analyses: in process (localQueue), or as
	// River jobs shared by the replicas of a server over PostgreSQL.
	queue analysisQueue
	// replica is cfg.Replica.
	replica string
	// watchMu guards watched, the profile directories followed.
	watchMu sync.Mutex
	watched map[string]web.WatchedDir
	// openapi is the OpenAPI document served (openAPIDocument).
	openapi []byte
	// guard checks Host and Origin (guardRequests).
	guard *hostGuard
	// uploads holds a token per upload being received (admitUpload).
	uploads chan struct{}
	// ballastMu orders the writes of the disk ballast (keepBallast).
	ballastMu sync.Mutex
	// analyze is the analysis the server runs.
	hook  analysisHook
	log   *slog.Logger
	echo  *echo.Echo
	stats *metrics
	// images keeps the charts drawn, on disk; charts bounds the charts
	// drawn at once.
	images *imageCache
	charts chan struct{}

	// blobMu orders the moment an upload records its run against deletes
	// within this process (lockBlobs; an advisory lock does between
	// replicas), so that a delete never removes a blob an upload is about
	// to reference. It is not held while an upload streams: the blobs an
	// upload has stored are held in the store meanwhile (hold).
	blobMu sync.Mutex
	// live holds the progress of runs being analysed, and stop the
	// functions that cancel their analyses (DELETE calls them).
	liveMu sync.Mutex
	live   map[string]*store.Progress
	stop   map[string]context.CancelFunc

	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	// closeMu guards closed against wg.Add: once Close has begun, no
	// request or analysis starts.
	closeMu sync.Mutex
	closed  bool
	// wg counts the requests being answered and the analyses queued or
	// running; Close waits for them before it closes the store.
	wg sync.WaitGroup
}

// Open opens (or creates) the stores cfg.Meta and cfg.Blobs name (by
// default the embedded ones in cfg.DataDir) and returns a server over
// them; runs left unfinished by a previous process are queued again.
func Open(cfg Config) (*Server, error) {
	return open(cfg, nil)
}

// open is Open with the analysis f in place of the driver's (nil: the
// driver's).
func open(cfg Config, hook analysisHook) (*Server, error) {
	cfg.defaults()
	if err := prepareDataDir(cfg); err != nil {
		return nil, err
	}
	ctx := context.Background()
	meta, err := store.OpenMeta(ctx, cfg.Meta)
	if err != nil {
		return nil, err
	}
	blobs, err := store.OpenBlobs(ctx, cfg.Blobs)
	if err != nil {
		meta.Close()
		return nil, err
	}
	s, err := newServer(cfg, meta, blobs, hook)
	if err != nil {
		meta.Close()
		return nil, err
	}
	return s, nil
}

// New returns a server over the given stores.
func New(cfg Config, meta store.Meta, blobs store.Blobs) (*Server, error) {
	return newServer(cfg, meta, blobs, nil)
}

func newServer(cfg Config, meta store.Meta, blobs store.Blobs, hook analysisHook) (*Server, error) {
	cfg.defaults()
	if cfg.ReadToken != "" && cfg.Token == "" {
		return nil, errors.New("a read-only token needs a token for writes too")
	}
	if err := errors.Join(checkToken("token", cfg.Token), checkToken("read-only token", cfg.ReadToken)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, meta: meta, blobs: blobs, hook: hook, log: cfg.Logger, replica: cfg.Replica,
		stats: newMetrics(), live: map[string]*store.Progress{}, stop: map[string]context.CancelFunc{},
		sem: make(chan struct{}, cfg.Workers), charts: make(chan struct{}, cfg.ChartWorkers), ctx: ctx, cancel: cancel,
		guard: newHostGuard(cfg.AllowedHosts), uploads: make(chan struct{}, cfg.MaxUploads),
	}
	images, err := openImageCache(filepath.Join(cfg.DataDir, "charts"), cfg.ChartCacheBytes)
	if err != nil {
		cancel()
		return nil, err
	}
	s.images = images
	// Versions before 2026-12 laid runs out in a work directory; the
	// pipeline now streams them from the blob store.
	if err := os.RemoveAll(filepath.Join(cfg.DataDir, "work")); err != nil {
		cancel()
		return nil, fmt.Errorf("remove the old work dir: %w", err)
	}
	if err := s.routes(); err != nil {
		cancel()
		return nil, err
	}
	ids, err := meta.Unfinished(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if err := s.startQueue(ctx, ids); err != nil {
		cancel()
		return nil, err
	}
	go s.sweep()
	s.log.Info("kinetoscope stores", "db", storeName(meta, cfg.Meta), "blobs", storeName(blobs, cfg.Blobs), "replica", s.replica)
	return s, nil
}

// startQueue opens the analysis queue the stores call for (River jobs in
// the database over PostgreSQL, else in process), queues the runs a
// previous process left unfinished and starts taking analyses.
func (s *Server) startQueue(ctx context.Context, unfinished []string) error {
	s.queue = localQueue{s}
	if pg, ok := s.meta.(*store.Postgres); ok {
		q, err := openRiver(s.ctx, s, pg)
		if err != nil {
			return err
		}
		s.queue = q // before the first job runs: analyses read it
	}
	return s.queue.resume(ctx, unfinished)
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// ConfigureHTTP sets hs's handler and timeouts. Read and write timeouts are
// short; the upload and download handlers extend their own deadlines for as
// long as data keeps flowing (see StallTimeout).
func (s *Server) ConfigureHTTP(hs *http.Server) {
	hs.Handler = s.echo
	hs.ReadHeaderTimeout = 10 * time.Second
	hs.ReadTimeout = 2 * time.Minute
	hs.WriteTimeout = 2 * time.Minute
	hs.IdleTimeout = 2 * time.Minute
	hs.MaxHeaderBytes = 64 << 10
}

// DataDir returns the server's data directory.
func (s *Server) DataDir() string { return s.cfg.DataDir }

// Outputs lists the formats and charts the service offers, from driver's
// table of outputs, for the web page.
func (s *Server) Outputs() web.Outputs {
	var o web.Outputs
	for _, f := range driver.Formats() {
		out := web.Output{Name: f.Name, Summary: f.Summary}
		if f.Report != nil {
			o.ReportFormats = append(o.ReportFormats, out)
		}
		if f.Diff != nil {
			o.DiffFormats = append(o.DiffFormats, out)
		}
	}
	for _, k := range driver.ChartKinds() {
		out := web.Output{Name: k.Name, Summary: k.Summary}
		if k.Input == driver.FromDiff {
			o.DiffCharts = append(o.DiffCharts, out)
		} else {
			o.RunCharts = append(o.RunCharts, out)
		}
	}
	return o
}

// Close stops the background analyses (an unfinished run is analysed again
// on the next start), cuts off the transfers still in progress (an upload
// cut off leaves no run), waits for the handlers to return and closes the
// store. Requests that arrive afterwards are answered 503.
func (s *Server) Close() error {
	s.closeMu.Lock()
	s.closed = true
	s.closeMu.Unlock()
	var qerr error
	if s.queue != nil { // nil when the server failed to open
		qerr = s.queue.stop()
	}
	s.cancel()
	s.wg.Wait()
	return errors.Join(qerr, s.meta.Close())
}

// begin counts one more request or analysis that Close must wait for; it
// reports false once Close has begun.
func (s *Server) begin() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}
