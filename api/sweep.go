package api

import (
	"context"
	"fmt"
	"time"

	"kinetoscope/api/store"
)

// The sweep removes what interrupted work leaves in the blob store, at
// start and then every sweepEvery: an object store's incomplete uploads
// and temporary objects (store.S3.Sweep), and, in either blob store, the
// blobs that no run references and no upload holds, once older than
// cfg.SweepAge. Such blobs are left by an upload whose process was killed
// after it stored a file (its hold expires), by an upload refused during
// a database outage (it could neither record its run nor drop its
// blobs), and by a delete while a dead upload held the run's blobs.

// storeName names a store in the start log: where it says it is (the
// database's URL without its password, the bucket and its endpoint), else
// the URL it was opened from.
func storeName(st any, url string) string {
	if w, ok := st.(interface{ Where() string }); ok {
		return w.Where()
	}
	return url
}

// sweepEvery is the pause between two sweeps.
const sweepEvery = time.Hour

// sweepBatch is how many blobs one hold of the blob lock checks.
const sweepBatch = 100

// sweep sweeps the blob store until the server closes.
func (s *Server) sweep() {
	for {
		if s3, ok := s.blobs.(*store.S3); ok {
			n, err := s3.Sweep(s.ctx, s.cfg.SweepAge)
			switch {
			case err != nil && s.ctx.Err() == nil:
				s.log.Warn("blob sweep", "err", err)
			case n > 0:
				s.log.Info("blob sweep: removed the leftovers of interrupted uploads", "removed", n)
			}
		}
		s.dropDeletedCharts(s.ctx)
		n, err := s.sweepOrphans(s.ctx)
		switch {
		case err != nil && s.ctx.Err() == nil:
			s.log.Warn("blob sweep: unreferenced blobs", "err", err, "removed", n)
		case n > 0:
			s.log.Info("blob sweep: removed blobs that no run references", "removed", n)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(sweepEvery):
		}
	}
}

// sweepOrphans deletes the blobs older than cfg.SweepAge that no run
// references and no upload holds, and returns how many. It checks and
// deletes under the blob lock, as a run's delete does, so that an upload
// recording a run at the same time finds its blob gone (and answers 503)
// rather than records a run without it.
func (s *Server) sweepOrphans(ctx context.Context) (int, error) {
	l, ok := s.blobs.(store.Lister)
	if !ok {
		return 0, nil
	}
	var batch []string
	removed := 0
	flush := func() error {
		n, err := s.dropUnreferenced(ctx, batch)
		removed += n
		batch = batch[:0]
		return err
	}
	err := l.ListBlobs(ctx, time.Now().Add(-s.cfg.SweepAge), func(sha string) error {
		if batch = append(batch, sha); len(batch) == sweepBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return removed, err
}

// dropUnreferenced deletes the blobs of hashes that no run references
// and no upload holds, under the blob lock, and returns how many.
func (s *Server) dropUnreferenced(ctx context.Context, hashes []string) (int, error) {
	if len(hashes) == 0 {
		return 0, nil
	}
	unlock, err := s.lockBlobs(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	for _, h := range hashes {
		used, err := s.meta.Referenced(ctx, h)
		if err != nil {
			return n, fmt.Errorf("blob %s: %w", h, err)
		}
		if used {
			continue
		}
		if err := s.blobs.Delete(ctx, h); err != nil {
			return n, err
		}
		s.log.Info("blob sweep: removed a blob no run references", "sha256", h, "replica", s.replica)
		n++
	}
	return n, nil
}
