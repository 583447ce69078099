package api

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"kinetoscope/api/store"
)

// Every replica of a team deployment caches the charts it drew on its own
// disk (--data/charts/RUN_ID). A delete, answered by one replica, tells
// the others through PostgreSQL (NOTIFY on deleteChannel, the run's id as
// payload), and each drops its charts of the run at once; a replica that
// was not listening (down, reconnecting) drops the charts of runs that no
// longer exist when it listens again and at every sweep.

// deleteChannel is the PostgreSQL notification channel of deletes.
const deleteChannel = "kinetoscope_run_deleted"

// listenDeletes drops the cached charts of the runs other replicas
// delete, until the server closes: on a connection of its own, outside
// the pool, reconnecting after a failure.
func (s *Server) listenDeletes(pg *store.Postgres) {
	for s.ctx.Err() == nil {
		err := s.listenOnce(pg)
		if s.ctx.Err() != nil {
			return
		}
		s.log.Warn("listen for deletes (reconnecting)", "err", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// listenOnce listens for deletes on one connection until it fails.
func (s *Server) listenOnce(pg *store.Postgres) error {
	conn, err := pgx.ConnectConfig(s.ctx, pg.Pool().Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(s.ctx))
	if _, err := conn.Exec(s.ctx, "LISTEN "+deleteChannel); err != nil {
		return err
	}
	// What was deleted while no one listened here.
	s.dropDeletedCharts(s.ctx)
	for {
		n, err := conn.WaitForNotification(s.ctx)
		if err != nil {
			return err
		}
		s.images.dropRun(n.Payload)
	}
}

// dropDeletedCharts drops the cached charts of runs that no longer exist.
func (s *Server) dropDeletedCharts(ctx context.Context) {
	dirs, err := os.ReadDir(s.images.dir)
	if err != nil {
		s.log.Warn("chart cache: list", "err", err)
		return
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		_, err := s.meta.Get(ctx, d.Name())
		switch {
		case errors.Is(err, store.ErrNotFound):
			s.images.dropRun(d.Name())
		case err != nil:
			return // the database is away: next time
		}
	}
}
