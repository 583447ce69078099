package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/api/store"
	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// enqueue analyses a run in the background, at most cfg.Workers at once.
// Once Close has begun it does nothing: the run stays queued in the store
// and is analysed on the next start.
func (s *Server) enqueue(id string) {
	if !s.begin() {
		return
	}
	go func() {
		defer s.wg.Done()
		if s.acquireWorker(s.ctx) != nil {
			return
		}
		defer s.releaseWorker()
		ctx, stop := s.startAnalysis(s.ctx, id)
		defer stop()
		s.analyzeRun(ctx, id)
	}()
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
// be tried again: the store failed, or ctx ended first (the server is
// shutting down; the run stays queued).
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
	p := lp.setPhase("reading")
	if err := s.meta.SetStatus(ctx, id, store.StatusRunning, p, ""); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("analysis of run %s: status: %w", id, err)
	}
	start := time.Now()
	defer returnMemory()
	s.stats.analysisStarted()
	rep, err := s.runPipeline(ctx, run, lp)
	s.stats.analysisDone(time.Since(start), err)
	if ctx.Err() != nil {
		// Shutting down (the run stays queued for the next start), or
		// the run was deleted.
		s.log.Info("analysis stopped", "run", id, "server_closing", s.ctx.Err() != nil)
		return fmt.Errorf("analysis of run %s stopped: %w", id, ctx.Err())
	}
	s.log.Info("analysis over", "run", id, "seconds", time.Since(start).Seconds(), "err", err, "replica", s.replica)
	return s.record(ctx, id, rep, err, lp.snapshot())
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
		p.Phase = "failed"
		err = s.meta.SetStatus(ctx, id, store.StatusFailed, p, err.Error())
	} else {
		p.Phase = "done"
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
func (s *Server) runPipeline(ctx context.Context, run *store.Run, lp *liveProgress) (rep *analyze.Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("analysis crashed: %v", r)
		}
	}()
	rep, err = s.analyze(s, ctx, run.ID, s.sources(ctx, run.Files), lp)
	if err != nil {
		return nil, err
	}
	rep.Source = run.Name
	return rep, nil
}

// sources returns the files as the pipeline reads them: streamed from the
// blob store, under their layoutNames (the rank file names of the report).
func (s *Server) sources(ctx context.Context, files []store.File) []ingest.Source {
	names := layoutNames(files)
	srcs := make([]ingest.Source, len(files))
	for i, f := range files {
		srcs[i] = ingest.Source{Name: names[i], Size: f.Size, Format: f.Kind, Open: func() (ingest.SourceReader, error) {
			b, err := s.blobs.Open(ctx, f.SHA256)
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("the stored file (sha256 %s) is %w", f.SHA256, errBlobMissing)
			}
			if err != nil {
				return nil, fmt.Errorf("stored file: %w", err)
			}
			return b, nil
		}}
	}
	return srcs
}

// layoutNames returns the names files get in a work directory: their
// analysisName, prefixed with their index when two would collide. They are
// the rank file names of the report (Rank.File).
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

// analysisName returns f's name with the extension its kind needs, since
// readers pick the format from the name.
func analysisName(f store.File) string {
	ext := ingest.FormatExt(f.Kind)
	if strings.HasSuffix(f.Name, ext) || (f.Kind == ingest.FormatTarGz && strings.HasSuffix(f.Name, ".tgz")) {
		return f.Name
	}
	return f.Name + ext
}

// analyzeSources runs the driver's pipeline on a run's files, with the
// server's read limits, publishing its progress to lp.
func (s *Server) analyzeSources(ctx context.Context, _ string, srcs []ingest.Source, lp *liveProgress) (*analyze.Report, error) {
	run, err := driver.AnalyzeSources(srcs, driver.Options{Context: ctx, MaxUncompressedBytes: s.cfg.MaxUncompressedBytes,
		MaxRatio: s.cfg.MaxRatio, Progress: lp.update, Analyzing: func() { lp.setPhase("analyzing") }, Budget: s.budget()})
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
	phase string
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

// setPhase records the phase (reading, analyzing) and publishes the run's
// progress.
func (l *liveProgress) setPhase(phase string) store.Progress {
	l.s.liveMu.Lock()
	defer l.s.liveMu.Unlock()
	l.phase = phase
	return l.publish()
}

// publish sums the files' progress into the run's; liveMu is held. The
// members of an archive report their own (uncompressed) bytes: once they
// add up to more than the stored size, their sizes are the total, so that
// the bytes read never pass it.
func (l *liveProgress) publish() store.Progress {
	sp := store.Progress{Phase: l.phase, TotalBytes: l.bytes}
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
