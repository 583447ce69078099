package api

import (
	"context"
	"fmt"
	"sync"
	"time"

	"kinetoscope/api/store"
)

// On a team deployment a run's analysis runs on one replica while any
// replica answers for the run: the analysing replica writes the run's
// progress to the database every heartbeatEvery (its name included), so
// that every replica shows how far it has come, and a run whose progress
// has not been written for staleBeats heartbeats says that its replica
// stopped answering, and when another takes the analysis over.

// staleBeats is how many heartbeats a replica may miss before the runs it
// analyses say it stopped answering.
const staleBeats = 4

// heartbeatEvery is how often the analysing replica writes a run's
// progress: every 5 s, or a twentieth of the job timeout when that is
// shorter (tests).
func (s *Server) heartbeatEvery() time.Duration {
	return min(5*time.Second, s.cfg.JobTimeout/20)
}

// rescueSlack is how long past JobTimeout + RescueMargin a dead
// replica's job may wait for River to give it to another replica: its
// rescuer looks every 30 s (on the leader, elected again within 15 s when
// the dead replica led), then its scheduler makes the job available within
// 5 s and a replica fetches it within 1 s.
const rescueSlack = 40 * time.Second

// heartbeat writes the run's progress (lp) every heartbeatEvery until the
// returned function is called, which waits for the last write: on the
// team backend only (one process has its runs' progress in memory).
func (s *Server) heartbeat(ctx context.Context, id string, lp *liveProgress) (stop func()) {
	if !s.queue.shared() {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.heartbeatEvery())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p := lp.snapshot()
			if err := s.meta.SetStatus(ctx, id, store.StatusRunning, p, ""); err != nil && ctx.Err() == nil {
				s.log.Warn("analysis: write progress", "run", id, "err", err)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// noteStalled sets r's Progress.Stalled when r is running on a replica
// that has not written its progress for staleBeats heartbeats.
func (s *Server) noteStalled(r *store.Run) {
	if !s.queue.shared() || r.Status != store.StatusRunning {
		return
	}
	if _, here := s.liveOf(r.ID); here {
		return
	}
	silent := time.Since(r.Updated)
	if silent < staleBeats*s.heartbeatEvery() {
		return
	}
	who := "the replica analysing it"
	if r.Progress.Replica != "" {
		who = "replica " + r.Progress.Replica
	}
	r.Progress.Stalled = fmt.Sprintf("%s stopped answering: no progress for %s (since %s); another replica takes the analysis over "+
		"once --job-timeout (%s) and %s have passed since it started, within %s more",
		who, silent.Round(time.Second), r.Updated.Format(time.RFC3339), s.cfg.JobTimeout, s.cfg.RescueMargin, rescueSlack)
}
