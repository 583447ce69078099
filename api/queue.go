package api

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"kinetoscope/api/store"
)

// The analysis queue. The embedded server queues analyses in process
// (enqueue: a goroutine per run, cfg.Workers at once, unfinished runs
// queued again at the next start). A server over PostgreSQL queues them as
// River jobs in the same database, so that every replica takes jobs, a job
// whose replica died is retried by another, and a run is never queued
// without its job (both are written in one transaction).

// analyzeArgs is the River job that analyses one run. Jobs are unique by
// run: a run has at most one job queued, running or retrying.
type analyzeArgs struct {
	Run string `json:"run"`
}

// Kind implements river.JobArgs.
func (analyzeArgs) Kind() string { return "kinetoscope_analyze" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (analyzeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: jobAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// jobAttempts bounds the attempts at one run's analysis that a store
// failed (an S3 outage while the files were read, the database), on both
// queues; River counts a replica's death too. A shutdown hands its
// analyses back without costing one.
const jobAttempts = 5

// analyzeWorker runs analyzeArgs jobs.
type analyzeWorker struct {
	river.WorkerDefaults[analyzeArgs]
	s *Server
}

// Work implements river.Worker: it analyses the run and records the
// outcome. An analysis that fails records the failure and is not retried;
// one that a store failed returns the error, and River retries the job
// after a pause (on the last attempt the run fails, saying why); one cut
// off by the replica shutting down is snoozed: available again at once,
// its attempt not counted.
func (w *analyzeWorker) Work(ctx context.Context, job *river.Job[analyzeArgs]) error {
	if job.Attempt > 1 {
		w.s.stats.retried()
		w.s.log.Info("analysis: retrying a run", "run", job.Args.Run, "attempt", job.Attempt, "replica", w.s.replica)
	}
	ctx, stop := w.s.startAnalysis(ctx, job.Args.Run)
	defer stop()
	err := w.s.finishAttempt(ctx, job.Args.Run, w.s.analyzeRun(ctx, job.Args.Run), job.Attempt >= job.MaxAttempts)
	if errors.Is(err, errHandedBack) {
		return river.JobSnooze(0)
	}
	return err
}

// riverQueue is the analysis queue of a server over PostgreSQL.
type riverQueue struct {
	pg     *store.Postgres
	client *river.Client[pgx.Tx]
}

// riverMigrationLock is the advisory lock key that orders River's schema
// migrations between replicas starting at once.
const riverMigrationLock = 0x6b696e65746f7331 // "kinetos1"

// openRiver migrates River's tables in pg's database and returns the
// queue, not yet started.
func openRiver(ctx context.Context, s *Server, pg *store.Postgres) (*riverQueue, error) {
	driver := riverpgxv5.New(pg.Pool())
	if err := migrateRiver(ctx, pg, driver); err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &analyzeWorker{s: s})
	client, err := river.NewClient(driver, &river.Config{
		ID:                   s.replica,
		Queues:               map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: s.cfg.Workers}},
		Workers:              workers,
		JobTimeout:           s.cfg.JobTimeout,
		RescueStuckJobsAfter: s.cfg.JobTimeout + s.cfg.RescueMargin,
		Logger:               s.log,
	})
	if err != nil {
		return nil, fmt.Errorf("analysis queue: %w", err)
	}
	return &riverQueue{pg: pg, client: client}, nil
}

// migrateRiver applies River's migrations under a session advisory lock,
// so that two replicas starting at once do not race. (Not in one
// transaction: a migration adds an enum value that the next one uses.)
func migrateRiver(ctx context.Context, pg *store.Postgres, driver *riverpgxv5.Driver) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("analysis queue: migrations: %w", err)
	}
	unlock, err := pg.Lock(ctx, riverMigrationLock)
	if err != nil {
		return fmt.Errorf("analysis queue: migration lock: %w", err)
	}
	defer unlock()
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("analysis queue: migrate: %w", err)
	}
	return nil
}

// create records a new run and its analysis job in one transaction.
func (q *riverQueue) create(ctx context.Context, run *store.Run) error {
	return q.pg.CreateWith(ctx, run, func(tx pgx.Tx) error {
		if _, err := q.client.InsertTx(ctx, tx, analyzeArgs{Run: run.ID}, nil); err != nil {
			return fmt.Errorf("queue the analysis of run %s: %w", run.ID, err)
		}
		return nil
	})
}

// reset queues a finished run to be analysed again: the run is reset and
// its new job written in one transaction. The run's finished jobs are
// removed first (a completed job would keep the new one out: jobs are
// unique by run).
func (q *riverQueue) reset(ctx context.Context, id string, p store.Progress) error {
	return q.pg.ResetWith(ctx, id, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM river_job WHERE kind = $1 AND args->>'run' = $2 AND state IN ('completed', 'discarded', 'cancelled')`,
			analyzeArgs{}.Kind(), id); err != nil {
			return fmt.Errorf("drop the finished jobs of run %s: %w", id, err)
		}
		res, err := q.client.InsertTx(ctx, tx, analyzeArgs{Run: id}, nil)
		if err != nil {
			return fmt.Errorf("queue the analysis of run %s: %w", id, err)
		}
		if res.UniqueSkippedAsDuplicate {
			return fmt.Errorf("run %s: %w", id, errJobFinishing)
		}
		return nil
	})
}

// errJobFinishing is reset's answer for a finished run whose job has not
// yet ended: it recorded the run's outcome and is about to return.
var errJobFinishing = errors.New("the job of its last analysis is still ending")

// resetSoon is reset, tried again for a few seconds while the run's last
// job is still ending.
func (q *riverQueue) resetSoon(ctx context.Context, id string, p store.Progress) error {
	for try := 0; ; try++ {
		err := q.reset(ctx, id, p)
		if !errors.Is(err, errJobFinishing) || try == 50 {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// requeue makes sure every unfinished run has a job: runs recorded by an
// older version, or whose jobs were removed by hand. A run that has one
// is skipped (jobs are unique by run).
func (q *riverQueue) requeue(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if _, err := q.client.Insert(ctx, analyzeArgs{Run: id}, nil); err != nil {
			return fmt.Errorf("queue the analysis of run %s: %w", id, err)
		}
	}
	return nil
}

// queueStats is what the queue's table says, for /metrics: jobs by state,
// and jobs that needed more than one attempt.
type queueStats struct {
	States  map[string]int64
	Retried int64
}

// stats counts the jobs in the queue, every replica's.
func (q *riverQueue) stats(ctx context.Context) (queueStats, error) {
	st := queueStats{States: map[string]int64{}}
	for _, state := range rivertype.JobStates() {
		st.States[string(state)] = 0 // every state, so that dashboards see zeros
	}
	rows, err := q.pg.Pool().Query(ctx,
		`SELECT state::text, count(*), count(*) FILTER (WHERE attempt > 1) FROM river_job WHERE kind = $1 GROUP BY state`,
		analyzeArgs{}.Kind())
	if err != nil {
		return st, fmt.Errorf("queue stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n, retried int64
		if err := rows.Scan(&state, &n, &retried); err != nil {
			return st, fmt.Errorf("queue stats: %w", err)
		}
		st.States[state] = n
		st.Retried += retried
	}
	return st, rows.Err()
}

// stop stops taking jobs and cancels the ones running here: River retries
// them, on another replica or at the next start.
func (q *riverQueue) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.client.StopAndCancel(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stop the analysis queue: %w", err)
	}
	return nil
}

// closing reports whether Close (or CutOff) has begun.
func (s *Server) closing() bool {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.closed
}

// replicaID names this process among the replicas: the host name and the
// process id.
func replicaID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "host"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}
