package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

// Postgres is a Meta kept in a PostgreSQL database, shared by every
// replica of a team deployment. It behaves as SQLite does, method for
// method; times are kept as Unix nanoseconds and reports as bytea.
type Postgres struct {
	pool *pgxpool.Pool
	// where names the database in errors and logs: its URL without the
	// password.
	where string
}

// OpenPostgres connects to the database at url (postgres://... or
// postgresql://..., or any connection string pgx accepts) and applies the
// pending migrations of migrations/postgres. Replicas that open the same
// database at once take turns under an advisory lock, so each migration
// runs once.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	where := redactURL(url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", where, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", where, err)
	}
	locker, err := postgresLocker()
	if err != nil {
		pool.Close()
		return nil, err
	}
	// Closing this *sql.DB leaves the pool open.
	db := stdlib.OpenDBFromPool(pool)
	err = migrate(ctx, goose.DialectPostgres, db, "postgres", locker)
	db.Close()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s: %w", where, err)
	}
	return &Postgres{pool: pool, where: "postgres " + where}, nil
}

// redactURL returns a database URL fit for an error message: without its
// password.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return "(connection string)"
	}
	return u.Redacted()
}

// fail marks err as the database's unavailability when it is one (see
// pgUnavailable), so that the server answers 503, not 400 or 500.
func (p *Postgres) fail(err error) error { return pgUnavailable(p.where, err) }

// Where names the database: its URL without the password.
func (p *Postgres) Where() string { return p.where }

// Probe implements Prober: the database answers a ping within
// ProbeTimeout.
func (p *Postgres) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if err := p.pool.Ping(ctx); err != nil {
		if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
			return &UnavailableError{Store: p.where, Err: fmt.Errorf("no answer within %s: %w", ProbeTimeout, err)}
		}
		return &UnavailableError{Store: p.where, Err: err}
	}
	return nil
}

// Pool returns the connection pool, for other users of the same database
// (a job queue). Close closes it.
func (p *Postgres) Pool() *pgxpool.Pool { return p.pool }

// Close implements Meta.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}

// Create implements Meta.
func (p *Postgres) Create(ctx context.Context, r *Run) error {
	return p.CreateWith(ctx, r, nil)
}

// CreateWith is Create that also runs then in the same transaction: the
// run is recorded only if then succeeds, and then's writes (a job that
// analyses the run, say) only with the run.
func (p *Postgres) CreateWith(ctx context.Context, r *Run, then func(pgx.Tx) error) error {
	prog, err := json.Marshal(r.Progress)
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, p.fail(err))
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var b pgx.Batch
		b.Queue(`INSERT INTO runs (id, name, status, progress, error, link, created, updated) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			r.ID, r.Name, string(r.Status), prog, r.Error, r.Link, r.Created.UnixNano(), r.Updated.UnixNano())
		for i, f := range r.Files {
			b.Queue(`INSERT INTO run_files (run_id, pos, name, sha256, size, kind, assigned_rank) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				r.ID, i, f.Name, f.SHA256, f.Size, f.Format, f.Rank)
		}
		for k, v := range r.Labels {
			b.Queue(`INSERT INTO run_labels (run_id, key, value) VALUES ($1, $2, $3)`, r.ID, k, v)
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		if then != nil {
			return then(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, p.fail(err))
	}
	return nil
}

// Lock takes the session-level advisory lock key, waiting for it as long
// as ctx allows, and returns the function that releases it: a lock that
// every process sharing the database honours.
func (p *Postgres) Lock(ctx context.Context, key int64) (unlock func(), err error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("advisory lock: %w", p.fail(err))
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key); err != nil {
		conn.Release()
		return nil, fmt.Errorf("advisory lock: %w", p.fail(err))
	}
	return func() {
		if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key); err != nil {
			// The lock goes with the session: drop the connection.
			conn.Conn().Close(context.Background())
		}
		conn.Release()
	}, nil
}

// runColumns are the columns scanRunPG reads, in order.
const runColumns = `id, name, status, progress, error, link, created, updated`

// scanRunPG reads one row of runColumns.
func scanRunPG(row pgx.Row) (*Run, error) {
	var r Run
	var st string
	var prog []byte
	var created, updated int64
	if err := row.Scan(&r.ID, &r.Name, &st, &prog, &r.Error, &r.Link, &created, &updated); err != nil {
		return nil, err
	}
	r.Status = Status(st)
	if err := json.Unmarshal(prog, &r.Progress); err != nil {
		return nil, fmt.Errorf("progress of run %s: %w", r.ID, err)
	}
	r.Created = time.Unix(0, created).UTC()
	r.Updated = time.Unix(0, updated).UTC()
	return &r, nil
}

// snapshot runs fn in a read-only transaction that sees one state of the
// database, so that a run and its files and labels agree.
func (p *Postgres) snapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// Get implements Meta.
func (p *Postgres) Get(ctx context.Context, id string) (*Run, error) {
	var r *Run
	err := p.snapshot(ctx, func(tx pgx.Tx) error {
		var err error
		r, err = scanRunPG(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
		if err != nil {
			return err
		}
		return fillPG(ctx, tx, []*Run{r})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, p.fail(err))
	}
	return r, nil
}

// fillPG loads the files and labels of runs, two queries for all of them.
func fillPG(ctx context.Context, tx pgx.Tx, runs []*Run) error {
	if len(runs) == 0 {
		return nil
	}
	byID := make(map[string]*Run, len(runs))
	ids := make([]string, len(runs))
	for i, r := range runs {
		r.Files = []File{}
		r.Labels = map[string]string{}
		byID[r.ID] = r
		ids[i] = r.ID
	}
	rows, err := tx.Query(ctx, `SELECT run_id, name, sha256, size, kind, assigned_rank FROM run_files WHERE run_id = ANY($1) ORDER BY run_id, pos`, ids)
	if err != nil {
		return fmt.Errorf("files of runs: %w", err)
	}
	var id string
	var f File
	_, err = pgx.ForEachRow(rows, []any{&id, &f.Name, &f.SHA256, &f.Size, &f.Format, &f.Rank}, func() error {
		byID[id].Files = append(byID[id].Files, f)
		f.Rank = nil // the next row gets an int of its own: pgx writes into the one f.Rank points to
		return nil
	})
	if err != nil {
		return fmt.Errorf("files of runs: %w", err)
	}
	rows, err = tx.Query(ctx, `SELECT run_id, key, value FROM run_labels WHERE run_id = ANY($1)`, ids)
	if err != nil {
		return fmt.Errorf("labels of runs: %w", err)
	}
	var k, v string
	_, err = pgx.ForEachRow(rows, []any{&id, &k, &v}, func() error {
		byID[id].Labels[k] = v
		return nil
	})
	if err != nil {
		return fmt.Errorf("labels of runs: %w", err)
	}
	return nil
}

// List implements Meta.
func (p *Postgres) List(ctx context.Context, opt ListOptions) ([]*Run, int, error) {
	where, args := listFilter(opt, postgresDialect)
	limit := opt.Limit
	if limit <= 0 {
		limit = 50
	}
	offset := max(opt.Offset, 0) // SQLite takes a negative offset as 0; PostgreSQL refuses it
	var runs []*Run
	var total int
	err := p.snapshot(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM runs`+where, args...).Scan(&total); err != nil {
			return fmt.Errorf("count runs: %w", err)
		}
		n := len(args)
		q := `SELECT ` + runColumns + ` FROM runs` + where +
			` ORDER BY created DESC, id LIMIT $` + strconv.Itoa(n+1) + ` OFFSET $` + strconv.Itoa(n+2)
		rows, err := tx.Query(ctx, q, append(args, limit, offset)...)
		if err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRunPG(rows)
			if err != nil {
				return fmt.Errorf("list runs: %w", err)
			}
			runs = append(runs, r)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list runs: %w", err)
		}
		return fillPG(ctx, tx, runs)
	})
	if err != nil {
		return nil, 0, p.fail(err)
	}
	return runs, total, nil
}

// SetStatus implements Meta. A run that is done keeps its status: the
// call changes nothing and returns nil.
func (p *Postgres) SetStatus(ctx context.Context, id string, st Status, pr Progress, errText string) error {
	prog, err := json.Marshal(pr)
	if err != nil {
		return fmt.Errorf("update run %s: %w", id, p.fail(err))
	}
	return p.update(ctx, id, `UPDATE runs SET status = $2, progress = $3, error = $4, updated = $5 WHERE id = $1 AND status <> 'done'`,
		id, string(st), prog, errText, time.Now().UnixNano())
}

// SetReport implements Meta. A run that is already done keeps its first
// report: the call changes nothing and returns nil.
func (p *Postgres) SetReport(ctx context.Context, id string, report []byte, pr Progress) error {
	prog, err := json.Marshal(pr)
	if err != nil {
		return fmt.Errorf("update run %s: %w", id, p.fail(err))
	}
	return p.update(ctx, id, `UPDATE runs SET status = 'done', progress = $2, error = '', report = $3, updated = $4 WHERE id = $1 AND status <> 'done'`,
		id, prog, report, time.Now().UnixNano())
}

// SetLink implements Meta.
func (p *Postgres) SetLink(ctx context.Context, id, link string) error {
	tag, err := p.pool.Exec(ctx, `UPDATE runs SET link = $2, updated = $3 WHERE id = $1`, id, link, time.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("set the link of run %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return nil
}

// update runs q, an UPDATE of run id that skips a run already done. Two
// replicas updating at once are serialised by the row lock, and the second
// sees the first's status, so a report is written once. It returns
// ErrNotFound when no run has the id, and nil when the run is done.
func (p *Postgres) update(ctx context.Context, id, q string, args ...any) error {
	tag, err := p.pool.Exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("update run %s: %w", id, p.fail(err))
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var exists bool
	if err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("update run %s: %w", id, p.fail(err))
	}
	if !exists {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return nil // done already: write-once
}

// Report implements Meta.
func (p *Postgres) Report(ctx context.Context, id string) ([]byte, error) {
	var rep []byte
	err := p.pool.QueryRow(ctx, `SELECT report FROM runs WHERE id = $1`, id).Scan(&rep)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && rep == nil) {
		return nil, fmt.Errorf("report of run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("report of run %s: %w", id, p.fail(err))
	}
	return rep, nil
}

// Delete implements Meta. Deletes of runs that share a blob take turns on
// that blob (an advisory lock on its hash), so that exactly one of them
// returns it as an orphan.
func (p *Postgres) Delete(ctx context.Context, id string) ([]string, error) {
	var orphans []string
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT DISTINCT sha256 FROM run_files WHERE run_id = $1 ORDER BY sha256`, id)
		if err != nil {
			return err
		}
		hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		// In one order everywhere, so that two deletes cannot deadlock.
		slices.Sort(hashes)
		for _, h := range hashes {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, h); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `DELETE FROM runs WHERE id = $1`, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		rows, err = tx.Query(ctx,
			`SELECT h FROM unnest($1::text[]) AS h WHERE NOT EXISTS (SELECT 1 FROM run_files WHERE sha256 = h)
			 AND NOT EXISTS (SELECT 1 FROM blob_holds WHERE sha256 = h AND expires > $2) ORDER BY h`, hashes, time.Now().UnixNano())
		if err != nil {
			return err
		}
		orphans, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("delete run %s: %w", id, p.fail(err))
	}
	if len(orphans) == 0 {
		orphans = nil // as SQLite returns none
	}
	return orphans, nil
}

// Unfinished implements Meta.
func (p *Postgres) Unfinished(ctx context.Context) ([]string, error) {
	rows, err := p.pool.Query(ctx, `SELECT id FROM runs WHERE status IN ($1, $2) ORDER BY created`,
		string(StatusQueued), string(StatusRunning))
	if err != nil {
		return nil, fmt.Errorf("unfinished runs: %w", p.fail(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("unfinished runs: %w", p.fail(err))
	}
	if len(ids) == 0 {
		ids = nil
	}
	return ids, nil
}

// Counts implements Meta.
func (p *Postgres) Counts(ctx context.Context) (map[Status]int, error) {
	rows, err := p.pool.Query(ctx, `SELECT status, count(*) FROM runs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", p.fail(err))
	}
	m := map[Status]int{}
	var st string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		m[Status(st)] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count runs: %w", p.fail(err))
	}
	return m, nil
}

// Referenced implements Meta.
func (p *Postgres) Referenced(ctx context.Context, sha string) (bool, error) {
	var used bool
	if err := p.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM run_files WHERE sha256 = $1)
		OR EXISTS (SELECT 1 FROM blob_holds WHERE sha256 = $1 AND expires > $2)`, sha, time.Now().UnixNano()).Scan(&used); err != nil {
		return false, fmt.Errorf("blob %s references: %w", sha, p.fail(err))
	}
	return used, nil
}

// Hold implements Meta; it also drops the holds that expired.
func (p *Postgres) Hold(ctx context.Context, sha, holder string, expires time.Time) error {
	var b pgx.Batch
	b.Queue(`DELETE FROM blob_holds WHERE expires <= $1`, time.Now().UnixNano())
	b.Queue(`INSERT INTO blob_holds (sha256, holder, expires) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, sha, holder, expires.UnixNano())
	if err := p.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("hold blob %s: %w", sha, p.fail(err))
	}
	return nil
}

// Release implements Meta.
func (p *Postgres) Release(ctx context.Context, holder string) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM blob_holds WHERE holder = $1`, holder); err != nil {
		return fmt.Errorf("release the blobs of %s: %w", holder, p.fail(err))
	}
	return nil
}
