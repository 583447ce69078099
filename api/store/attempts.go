package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrUnfinished is returned by Reset for a run still queued or running:
// its analysis is not over, so there is nothing to redo yet.
var ErrUnfinished = errors.New("its analysis is not over")

// The analysis lifecycle beyond SetStatus and SetReport, on both
// databases: StartAnalysis counts the attempts a run's analysis took
// (runs.attempts), HandBack uncounts one that a shutdown interrupted, and
// Reset queues a finished run to be analysed again.

// StartAnalysis implements Meta: the run is running with progress p,
// and its attempts count one more.
func (s *SQLite) StartAnalysis(ctx context.Context, id string, p Progress) (int, error) {
	prog, _ := json.Marshal(p)
	var n int
	err := s.db.QueryRowContext(ctx, `UPDATE runs SET status = ?, progress = ?, error = '', updated = ?, attempts = attempts + 1
		WHERE id = ? AND status IN (?, ?) RETURNING attempts`,
		string(StatusRunning), string(prog), time.Now().UnixNano(), id, string(StatusQueued), string(StatusRunning)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, s.finishedOrMissing(ctx, id)
	}
	if err != nil {
		return 0, fmt.Errorf("start the analysis of run %s: %w", id, err)
	}
	return n, nil
}

// finishedOrMissing returns ErrNotFound when no run has the id, else nil.
func (s *SQLite) finishedOrMissing(ctx context.Context, id string) error {
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	if !exists {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return nil
}

// HandBack implements Meta.
func (s *SQLite) HandBack(ctx context.Context, id string, p Progress) error {
	prog, _ := json.Marshal(p)
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, progress = ?, updated = ?, attempts = max(attempts - 1, 0)
		WHERE id = ? AND status = ?`, string(StatusQueued), string(prog), time.Now().UnixNano(), id, string(StatusRunning)); err != nil {
		return fmt.Errorf("hand back the analysis of run %s: %w", id, err)
	}
	return nil
}

// Reset implements Meta.
func (s *SQLite) Reset(ctx context.Context, id string, p Progress) error {
	prog, _ := json.Marshal(p)
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, progress = ?, error = '', report = NULL, attempts = 0, updated = ?
		WHERE id = ? AND status IN (?, ?)`, string(StatusQueued), string(prog), time.Now().UnixNano(), id, string(StatusDone), string(StatusFailed))
	if err != nil {
		return fmt.Errorf("reset run %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	if err := s.finishedOrMissing(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("run %s: %w", id, ErrUnfinished)
}

// StartAnalysis implements Meta.
func (p *Postgres) StartAnalysis(ctx context.Context, id string, pr Progress) (int, error) {
	prog, err := json.Marshal(pr)
	if err != nil {
		return 0, fmt.Errorf("start the analysis of run %s: %w", id, err)
	}
	var n int
	err = p.pool.QueryRow(ctx, `UPDATE runs SET status = 'running', progress = $2, error = '', updated = $3, attempts = attempts + 1
		WHERE id = $1 AND status IN ('queued', 'running') RETURNING attempts`, id, prog, time.Now().UnixNano()).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, p.finishedOrMissing(ctx, p.pool, id)
	}
	if err != nil {
		return 0, fmt.Errorf("start the analysis of run %s: %w", id, p.fail(err))
	}
	return n, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// finishedOrMissing returns ErrNotFound when no run has the id, else nil.
func (p *Postgres) finishedOrMissing(ctx context.Context, q querier, id string) error {
	var exists bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("run %s: %w", id, p.fail(err))
	}
	if !exists {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return nil
}

// HandBack implements Meta.
func (p *Postgres) HandBack(ctx context.Context, id string, pr Progress) error {
	prog, err := json.Marshal(pr)
	if err != nil {
		return fmt.Errorf("hand back the analysis of run %s: %w", id, err)
	}
	if _, err := p.pool.Exec(ctx, `UPDATE runs SET status = 'queued', progress = $2, updated = $3, attempts = greatest(attempts - 1, 0)
		WHERE id = $1 AND status = 'running'`, id, prog, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("hand back the analysis of run %s: %w", id, p.fail(err))
	}
	return nil
}

// Reset implements Meta.
func (p *Postgres) Reset(ctx context.Context, id string, pr Progress) error {
	return p.ResetWith(ctx, id, pr, nil)
}

// ResetWith is Reset that also runs then in the same transaction (the
// job that analyses the run again): the run is reset only if then
// succeeds.
func (p *Postgres) ResetWith(ctx context.Context, id string, pr Progress, then func(pgx.Tx) error) error {
	prog, err := json.Marshal(pr)
	if err != nil {
		return fmt.Errorf("reset run %s: %w", id, err)
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE runs SET status = 'queued', progress = $2, error = '', report = NULL, attempts = 0, updated = $3
			WHERE id = $1 AND status IN ('done', 'failed')`, id, prog, time.Now().UnixNano())
		if err != nil {
			return p.fail(err)
		}
		if tag.RowsAffected() == 0 {
			if err := p.finishedOrMissing(ctx, tx, id); err != nil {
				return err
			}
			return ErrUnfinished
		}
		if then != nil {
			return then(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reset run %s: %w", id, p.fail(err))
	}
	return nil
}
