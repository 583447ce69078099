package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/api/store"
	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// enqueue analyses a run in the background, at most cfg.Workers at once.
// Once Close has begun it does nothing: the run stays queued in the store
// and is analysed on the next start. An attempt that a store failed is
// tried again after a pause (retryDelay), jobAttempts in all.
func (s *Server) enqueue(id string) {
	if !s.begin() {
		return
	}
	go func() {
		defer s.wg.Done()
		for attempt := 1; ; attempt++ {
			err := s.analyzeOnWorker(id, attempt >= jobAttempts)
			if err == nil || errors.Is(err, errHandedBack) {
				return
			}
			s.log.Warn("analysis: a store failed; trying again", "run", id, "attempt", attempt, "err", err)
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(retryDelay(attempt)):
			}
		}
	}()
}

// analyzeOnWorker analyses the run id on one of the in-process workers.
func (s *Server) analyzeOnWorker(id string, last bool) error {
	if err := s.acquireWorker(s.ctx); err != nil {
		return errHandedBack
	}
	defer s.releaseWorker()
	ctx, stop := s.startAnalysis(s.ctx, id)
	defer stop()
	return s.finishAttempt(ctx, id, s.analyzeRun(ctx, id), last)
}

// retryDelay is the pause before attempt+1 of an analysis that a store
// failed: 1 s, 4 s, 16 s, 64 s (River's policy is attempt^4 seconds).
func retryDelay(attempt int) time.Duration {
	return time.Second << (2 * min(attempt-1, 6))
}

// errHandedBack is analyzeRun's answer when the server shut down during
// the analysis: the run is queued again, and its attempt not counted.
var errHandedBack = errors.New("handed back: the server is shutting down")

// maxAnalysisStarts bounds the attempts at a run's analysis that the
// process did not live to finish: a run whose analysis started this many
// times without ending (the server killed while analysing it, by the
// out-of-memory killer say) is failed instead of tried again, so that one
// input never crash-loops the server.
const maxAnalysisStarts = 3

// finishAttempt records, on the last attempt at a run's analysis, the
// failure of one that a store failed (err, from analyzeRun): it fails the
// run saying why, rather than leave it queued for ever. It returns err
// when the analysis should be tried again.
func (s *Server) finishAttempt(ctx context.Context, id string, err error, last bool) error {
	if err == nil || errors.Is(err, errHandedBack) || !last {
		return err
	}
	why := fmt.Errorf("the analysis failed %d times because a store failed (not because of the trace): %w; "+
		"POST /api/v1/runs/%s/reanalyse to try again", jobAttempts, err, id)
	return s.record(context.WithoutCancel(ctx), id, nil, why, store.Progress{Stage: "failed"})
}

// startAnalysis returns the context of one run's analysis, which ends
// with parent or when the run is deleted (see stopAnalysis), and the
// function to call once the analysis is over.
func (s *Server) startAnalysis(parent context.Context, id string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	s.liveMu.Lock()
	s.stop[id] = cancel
	s.liveMu.Unlock()
	return ctx, func() {
		s.liveMu.Lock()
		delete(s.stop, id)
		delete(s.live, id)
		s.liveMu.Unlock()
		cancel()
	}
}

// stopAnalysis cancels the analysis of a run, if one is running.
func (s *Server) stopAnalysis(id string) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	if cancel, ok := s.stop[id]; ok {
		cancel()
	}
}

// analyzeRun analyses one stored run and records the report or the error.
// A run deleted meanwhile is left alone: its analysis is cancelled and
// nothing is recorded. It returns an error only when the analysis should
// be tried again: a store failed (the database, or the blob store while
// the files were read: then whatever the pipeline made of them is not
// recorded, since a file cut short reads as a corrupt trace), or the
// server is shutting down (errHandedBack: the run is queued again).
func (s *Server) analyzeRun(ctx context.Context, id string) error {
	run, err := s.meta.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		s.log.Info("analysis: run deleted before it started", "run", id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("analysis of run %s: %w", id, err)
	}
	if run.Status == store.StatusDone || run.Status == store.StatusFailed {
		return nil // a retried job whose first attempt got as far as recording
	}
	lp := &liveProgress{s: s, id: id, bytes: run.Size(), files: map[string]ingest.Progress{}}
	p := lp.setStage("reading")
	attempts, err := s.meta.StartAnalysis(ctx, id, p)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && attempts == 0:
		return nil // deleted, or finished meanwhile
	case err != nil:
		return fmt.Errorf("analysis of run %s: status: %w", id, err)
	case attempts > maxAnalysisStarts:
		s.log.Warn("analysis: not started again", "run", id, "attempts", attempts-1, "replica", s.replica)
		return s.record(ctx, id, nil, fmt.Errorf("the analysis started %d times and the server stopped each time before it ended "+
			"(killed while analysing this run: out of memory?); not tried again: POST /api/v1/runs/%s/reanalyse to try again",
			attempts-1, id), lp.snapshot())
	}
	start := time.Now()
	defer returnMemory()
	s.stats.analysisStarted()
	faults := &storeFaults{}
	stopBeat := s.heartbeat(ctx, id, lp)
	rep, err := s.runPipeline(ctx, run, lp, faults)
	stopBeat()
	s.stats.analysisDone(time.Since(start), err)
	if ctx.Err() != nil {
		return s.stopped(ctx, id, lp)
	}
	if ferr := faults.first(); ferr != nil {
		s.handBack(ctx, id, lp)
		return fmt.Errorf("analysis of run %s: %w", id, ferr)
	}
	s.log.Info("analysis over", "run", id, "seconds", time.Since(start).Seconds(), "err", err, "replica", s.replica)
	return s.record(ctx, id, rep, err, lp.snapshot())
}

// stopped handles an analysis whose context ended first: the server is
// shutting down (the run is handed back, errHandedBack), the run was
// deleted (nil), or the job's timeout passed (the run fails, saying so:
// trying again would take as long).
func (s *Server) stopped(ctx context.Context, id string, lp *liveProgress) error {
	switch {
	case s.closing():
		s.log.Info("analysis handed back: the server is shutting down", "run", id, "replica", s.replica)
		s.handBack(ctx, id, lp)
		return errHandedBack
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return s.record(context.WithoutCancel(ctx), id, nil, fmt.Errorf(
			"the analysis took longer than the server's --job-timeout (%s): stopped", s.cfg.JobTimeout), lp.snapshot())
	}
	s.log.Info("analysis stopped: the run was deleted", "run", id)
	return nil
}

// handBack returns an interrupted analysis's run to the queue, its attempt
// uncounted.
func (s *Server) handBack(ctx context.Context, id string, lp *liveProgress) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	p := lp.snapshot()
	p.Stage = "queued"
	if err := s.meta.HandBack(ctx, id, p); err != nil {
		s.log.Warn("analysis: hand the run back (its attempt stays counted)", "run", id, "err", err)
	}
}

// storeFaults keeps the first store failure met while a run's files were
// read (a store.ReadError): the analysis of files read short proves
// nothing about them.
type storeFaults struct {
	mu  sync.Mutex
	err error
}

// note records err when it is a store's failure, and returns it.
func (f *storeFaults) note(err error) error {
	if f != nil && err != nil && store.Unavailable(err) {
		f.mu.Lock()
		if f.err == nil {
			f.err = err
		}
		f.mu.Unlock()
	}
	return err
}

// first returns the first failure noted, or nil.
func (f *storeFaults) first() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// faultyReader notes the store failures of a blob's reads.
type faultyReader struct {
	store.Blob
	faults *storeFaults
}

// Read implements io.Reader.
func (r faultyReader) Read(p []byte) (int, error) {
	n, err := r.Blob.Read(p)
	return n, r.faults.note(err)
}

// ReadAt implements io.ReaderAt.
func (r faultyReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.Blob.ReadAt(p, off)
	return n, r.faults.note(err)
}

// record stores the outcome of a run's analysis: its report, or the
// error that stopped it. A run deleted meanwhile is only logged; an error
// is the store's.
func (s *Server) record(ctx context.Context, id string, rep *analyze.Report, err error, p store.Progress) error {
	var js []byte
	if err == nil {
		if js, err = driver.EncodeReport(rep); err != nil {
			err = fmt.Errorf("encode report: %w", err)
		}
	}
	if err != nil {
		p.Stage = "failed"
		err = s.meta.SetStatus(ctx, id, store.StatusFailed, p, err.Error())
	} else {
		p.Stage = "done"
		err = s.meta.SetReport(ctx, id, js, p)
		err = s.reportNotStored(ctx, id, err, p)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.log.Info("analysis: run deleted while it was analysed", "run", id)
	case err != nil:
		s.log.Warn("analysis: record outcome", "run", id, "err", err)
		return fmt.Errorf("record the analysis of run %s: %w", id, err)
	}
	return nil
}

// runPipeline analyses the run's files, read from the blob store under
// their layoutNames.
func (s *Server) runPipeline(ctx context.Context, run *store.Run, lp *liveProgress, faults *storeFaults) (rep *analyze.Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("analysis crashed: %v", r)
		}
	}()
	in := s.input(ctx, run.Files, faults)
	analyse := func() (*analyze.Report, error) { return s.analyzeInput(ctx, in, fileRanks(run.Files), lp) }
	if s.hook != nil {
		names := make([]string, len(in.Sources))
		for i, src := range in.Sources {
			names[i] = src.Name
		}
		rep, err = s.hook(ctx, run.ID, names, analyse)
	} else {
		rep, err = analyse()
	}
	if err != nil {
		return nil, err
	}
	rep.Source = run.Name
	return rep, nil
}

// input returns the files as the pipeline reads them: streamed from the
// blob store, under their layoutNames (the rank file names of the report),
// the input named by those names joined with spaces. The store's failures
// to open or read them are noted in faults (nil: not noted).
func (s *Server) input(ctx context.Context, files []store.File, faults *storeFaults) ingest.Input {
	names := layoutNames(files)
	srcs := make([]ingest.Source, len(files))
	for i, f := range files {
		srcs[i] = ingest.Source{Name: names[i], Size: f.Size, Format: f.Format, Open: func() (ingest.SourceReader, error) {
			b, err := s.blobs.Open(ctx, f.SHA256)
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("the stored file (sha256 %s) is %w", f.SHA256, errBlobMissing)
			}
			if err != nil {
				return nil, faults.note(fmt.Errorf("stored file: %w", err))
			}
			return faultyReader{b, faults}, nil
		}}
	}
	return ingest.Input{Name: strings.Join(names, " "), Sources: srcs}
}

// layoutNames returns the names a run's files go by in its analysis, the
// rank file names of the report (Rank.File): their analysisName, prefixed
// with their index when two would collide.
func layoutNames(files []store.File) []string {
	seen := map[string]bool{}
	names := make([]string, len(files))
	for i, f := range files {
		name := analysisName(f)
		if seen[name] {
			name = fmt.Sprintf("%d-%s", i, name)
		}
		seen[name] = true
		names[i] = name
	}
	return names
}

// analysisName returns f's name with the extension of its format when it
// lacks one (an upload named "rank0" is "rank0.json.gz" in the report), so
// that the report names each file as what it was read as.
func analysisName(f store.File) string {
	ext := ingest.FormatExt(f.Format)
	if strings.HasSuffix(f.Name, ext) || (f.Format == ingest.FormatTarGz && strings.HasSuffix(f.Name, ".tgz")) {
		return f.Name
	}
	return f.Name + ext
}

// analyzeInput runs the driver's pipeline on a run's files, with the
// server's read limits and the ranks the upload assigned to them,
// publishing its progress to lp.
func (s *Server) analyzeInput(ctx context.Context, in ingest.Input, ranks ingest.RankAssignments, lp *liveProgress) (*analyze.Report, error) {
	run, err := driver.Analyze(in, driver.Options{
		Options: ingest.Options{Context: ctx, MaxUncompressedBytes: s.cfg.MaxUncompressedBytes,
			MaxRatio: s.cfg.MaxRatio, Progress: lp.update, Budget: s.budget(), Ranks: ranks},
		Analyzing: func() { lp.setStage("analyzing") }})
	if err != nil {
		return nil, err
	}
	return run.Report, nil
}

// liveProgress aggregates a run's progress over its files.
type liveProgress struct {
	s     *Server
	id    string
	bytes int64
	files map[string]ingest.Progress
	stage string
}

// update records the progress of one file's read.
func (l *liveProgress) update(p ingest.Progress) {
	l.s.liveMu.Lock()
	defer l.s.liveMu.Unlock()
	if p.Path != "" {
		l.files[p.Path] = p
	}
	l.publish()
}

// setStage records the stage (reading, analyzing) and publishes the run's
// progress.
func (l *liveProgress) setStage(stage string) store.Progress {
	l.s.liveMu.Lock()
	defer l.s.liveMu.Unlock()
	l.stage = stage
	return l.publish()
}

// publish sums the files' progress into the run's; liveMu is held. The
// members of an archive report their own (uncompressed) bytes: once they
// add up to more than the stored size, their sizes are the total, so that
// the bytes read never pass it.
func (l *liveProgress) publish() store.Progress {
	sp := store.Progress{Stage: l.stage, TotalBytes: l.bytes}
	if l.s.queue.shared() {
		sp.Replica = l.s.replica
	}
	var members int64
	for _, f := range l.files {
		sp.Bytes += f.Bytes
		sp.Events += f.Events
		if strings.Contains(f.Path, "!") {
			members += max(f.TotalBytes, f.Bytes)
		}
	}
	sp.TotalBytes = max(sp.TotalBytes, members)
	sp.Bytes = min(sp.Bytes, sp.TotalBytes)
	l.s.live[l.id] = &sp
	return sp
}

func (l *liveProgress) snapshot() store.Progress {
	l.s.liveMu.Lock()
	defer l.s.liveMu.Unlock()
	return l.publish()
}

// liveOf returns the in-memory progress of a run being analysed.
func (s *Server) liveOf(id string) (store.Progress, bool) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	p, ok := s.live[id]
	if !ok {
		return store.Progress{}, false
	}
	return *p, true
}
