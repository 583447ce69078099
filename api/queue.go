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
// (localQueue: a goroutine per run, cfg.Workers at once, unfinished runs
// queued again at the next start). A server over PostgreSQL queues them as
// River jobs in the same database (riverQueue), so that every replica takes
// jobs, a job whose replica died is retried by another, and a run is never
// queued without its job (both are written in one transaction).

// analysisQueue is how a server queues its runs' analyses: the one place
// where the embedded server and a team deployment differ in it.
type analysisQueue interface {
	// resume queues the runs a previous process left unfinished and starts
	// taking analyses.
	resume(ctx context.Context, unfinished []string) error
	// create records a new run with its analysis queued; start, called
	// once the upload that made it is over, lets it begin.
	create(ctx context.Context, run *store.Run) error
	start(id string)
	// reset queues a finished run for a new analysis (then start).
	reset(ctx context.Context, id string, p store.Progress) error
	// lockBlobs orders recording a run against deleting unused blobs
	// among the processes that share the stores; release ends it.
	lockBlobs(ctx context.Context) (release func(), err error)
	// announceDelete tells the other processes that run id was deleted.
	announceDelete(ctx context.Context, id string)
	// shared says that other processes take this queue's analyses too: a
	// run's progress is then written as it goes (heartbeat) and names its
	// replica, and a run whose replica went silent is said to be.
	shared() bool
	// stats counts the queue's jobs for /metrics; nil when it keeps none.
	stats(ctx context.Context) (*queueStats, error)
	// stop stops taking analyses.
	stop() error
}

// localQueue is the analysis queue of the embedded server: in process.
type localQueue struct{ s *Server }

func (q localQueue) resume(ctx context.Context, unfinished []string) error {
	q.s.requeueUnfinished(ctx, unfinished)
	return nil
}
func (q localQueue) create(ctx context.Context, run *store.Run) error {
	return q.s.meta.Create(ctx, run)
}
func (q localQueue) start(id string) { q.s.enqueue(id) }
func (q localQueue) reset(ctx context.Context, id string, p store.Progress) error {
	return q.s.meta.Reset(ctx, id, p)
}
func (q localQueue) lockBlobs(context.Context) (func(), error)  { return func() {}, nil }
func (q localQueue) announceDelete(context.Context, string)     {}
func (q localQueue) shared() bool                               { return false }
func (q localQueue) stats(context.Context) (*queueStats, error) { return nil, nil }
func (q localQueue) stop() error                                { return nil }

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
	s      *Server
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
	return &riverQueue{s: s, pg: pg, client: client}, nil
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

// resetOnce queues a finished run to be analysed again: the run is reset
// and its new job written in one transaction. The run's finished jobs are
// removed first (a completed job would keep the new one out: jobs are
// unique by run).
func (q *riverQueue) resetOnce(ctx context.Context, id string, p store.Progress) error {
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

// errJobFinishing is resetOnce's answer for a finished run whose job has not
// yet ended: it recorded the run's outcome and is about to return.
var errJobFinishing = errors.New("the job of its last analysis is still ending")

// reset is resetOnce, tried again for a few seconds while the run's last
// job is still ending.
func (q *riverQueue) reset(ctx context.Context, id string, p store.Progress) error {
	for try := 0; ; try++ {
		err := q.resetOnce(ctx, id, p)
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
func (q *riverQueue) stats(ctx context.Context) (*queueStats, error) {
	st := queueStats{States: map[string]int64{}}
	for _, state := range rivertype.JobStates() {
		st.States[string(state)] = 0 // every state, so that dashboards see zeros
	}
	rows, err := q.pg.Pool().Query(ctx,
		`SELECT state::text, count(*), count(*) FILTER (WHERE attempt > 1) FROM river_job WHERE kind = $1 GROUP BY state`,
		analyzeArgs{}.Kind())
	if err != nil {
		return nil, fmt.Errorf("queue stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n, retried int64
		if err := rows.Scan(&state, &n, &retried); err != nil {
			return nil, fmt.Errorf("queue stats: %w", err)
		}
		st.States[state] = n
		st.Retried += retried
	}
	return &st, rows.Err()
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

// resume gives every unfinished run a job (those that have one keep it),
// starts taking jobs and listens for the other replicas' deletes.
func (q *riverQueue) resume(ctx context.Context, unfinished []string) error {
	if err := q.requeue(ctx, unfinished); err != nil {
		return err
	}
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("start the analysis queue: %w", err)
	}
	go q.s.listenDeletes(q.pg)
	return nil
}

// start does nothing: the job was written with the run.
func (q *riverQueue) start(string) {}

// shared says yes: every replica takes the queue's jobs.
func (q *riverQueue) shared() bool { return true }

// lockBlobs takes the advisory lock that orders, between the replicas,
// recording a run against deleting unused blobs.
func (q *riverQueue) lockBlobs(ctx context.Context) (func(), error) {
	return q.pg.Lock(ctx, blobLockKey)
}

// announceDelete tells the other replicas, through PostgreSQL, that run id
// was deleted: they drop its cached charts.
func (q *riverQueue) announceDelete(ctx context.Context, id string) {
	if _, err := q.pg.Pool().Exec(ctx, `SELECT pg_notify($1, $2)`, deleteChannel, id); err != nil {
		q.s.log.Warn("tell the other replicas of a delete (they drop its charts at their next sweep)", "run", id, "err", err)
	}
}
