package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go)
)

// SQLite is a Meta kept in one SQLite database file.
type SQLite struct {
	db *sql.DB
}

// OpenSQLite opens (creating if needed) the database at path and applies
// the pending migrations of migrations/sqlite. A database made before
// migrations were versioned takes version 1 as already there.
func OpenSQLite(path string) (*SQLite, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, and this rules out
	// "database is locked" between our own connections.
	db.SetMaxOpenConns(1)
	if err := migrate(context.Background(), goose.DialectSQLite3, db, "sqlite", nil); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &SQLite{db: db}, nil
}

// Close implements Meta.
func (s *SQLite) Close() error { return s.db.Close() }

// Create implements Meta.
func (s *SQLite) Create(ctx context.Context, r *Run) error {
	prog, _ := json.Marshal(r.Progress)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO runs (id, name, status, progress, error, link, created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Name, string(r.Status), string(prog), r.Error, r.Link, r.Created.UnixNano(), r.Updated.UnixNano()); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	for i, f := range r.Files {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO run_files (run_id, pos, name, sha256, size, kind, assigned_rank) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			r.ID, i, f.Name, f.SHA256, f.Size, f.Format, f.Rank); err != nil {
			return fmt.Errorf("create run %s: file %s: %w", r.ID, f.Name, err)
		}
	}
	for k, v := range r.Labels {
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)`, r.ID, k, v); err != nil {
			return fmt.Errorf("create run %s: label %s: %w", r.ID, k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// Get implements Meta.
func (s *SQLite) Get(ctx context.Context, id string) (*Run, error) {
	row := s.db.QueryRowContext(ctx, `SELECT id, name, status, progress, error, link, created, updated FROM runs WHERE id = ?`, id)
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	if err := s.fill(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

type scanner interface{ Scan(...any) error }

func scanRun(sc scanner) (*Run, error) {
	var r Run
	var st, prog string
	var created, updated int64
	if err := sc.Scan(&r.ID, &r.Name, &st, &prog, &r.Error, &r.Link, &created, &updated); err != nil {
		return nil, err
	}
	r.Status = Status(st)
	if err := json.Unmarshal([]byte(prog), &r.Progress); err != nil {
		return nil, fmt.Errorf("progress of run %s: %w", r.ID, err)
	}
	r.Created = time.Unix(0, created).UTC()
	r.Updated = time.Unix(0, updated).UTC()
	return &r, nil
}

// fill loads a run's files and labels.
func (s *SQLite) fill(ctx context.Context, r *Run) error {
	rows, err := s.db.QueryContext(ctx, `SELECT name, sha256, size, kind, assigned_rank FROM run_files WHERE run_id = ? ORDER BY pos`, r.ID)
	if err != nil {
		return fmt.Errorf("files of run %s: %w", r.ID, err)
	}
	r.Files = []File{}
	for rows.Next() {
		var f File
		if err := rows.Scan(&f.Name, &f.SHA256, &f.Size, &f.Format, &f.Rank); err != nil {
			rows.Close()
			return fmt.Errorf("files of run %s: %w", r.ID, err)
		}
		r.Files = append(r.Files, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("files of run %s: %w", r.ID, err)
	}
	rows, err = s.db.QueryContext(ctx, `SELECT key, value FROM run_labels WHERE run_id = ?`, r.ID)
	if err != nil {
		return fmt.Errorf("labels of run %s: %w", r.ID, err)
	}
	defer rows.Close()
	r.Labels = map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return fmt.Errorf("labels of run %s: %w", r.ID, err)
		}
		r.Labels[k] = v
	}
	return rows.Err()
}

// List implements Meta.
func (s *SQLite) List(ctx context.Context, opt ListOptions) ([]*Run, int, error) {
	where, args := listFilter(opt, sqliteDialect)
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM runs`+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count runs: %w", err)
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT id, name, status, progress, error, link, created, updated FROM runs` + where +
		` ORDER BY created DESC, id LIMIT ? OFFSET ?`
	rows, err := s.db.QueryContext(ctx, q, append(args, limit, opt.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list runs: %w", err)
	}
	var runs []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list runs: %w", err)
	}
	for _, r := range runs {
		if err := s.fill(ctx, r); err != nil {
			return nil, 0, err
		}
	}
	return runs, total, nil
}

// SetStatus implements Meta. A run that is done keeps its status: the
// call changes nothing and returns nil.
func (s *SQLite) SetStatus(ctx context.Context, id string, st Status, p Progress, errText string) error {
	prog, _ := json.Marshal(p)
	return s.update(ctx, id, `UPDATE runs SET status = ?, progress = ?, error = ?, updated = ? WHERE id = ? AND status <> ?`,
		string(st), string(prog), errText, time.Now().UnixNano(), id, string(StatusDone))
}

// SetReport implements Meta. A run that is already done keeps its first
// report: the call changes nothing and returns nil.
func (s *SQLite) SetReport(ctx context.Context, id string, report []byte, p Progress) error {
	prog, _ := json.Marshal(p)
	return s.update(ctx, id, `UPDATE runs SET status = ?, progress = ?, error = '', report = ?, updated = ? WHERE id = ? AND status <> ?`,
		string(StatusDone), string(prog), report, time.Now().UnixNano(), id, string(StatusDone))
}

// SetLink implements Meta.
func (s *SQLite) SetLink(ctx context.Context, id, link string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE runs SET link = ?, updated = ? WHERE id = ?`, link, time.Now().UnixNano(), id)
	if err != nil {
		return fmt.Errorf("set the link of run %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("run %s: %w", id, cmp.Or(err, ErrNotFound))
	}
	return nil
}

// update runs q, an UPDATE of run id that skips a run already done. It
// returns ErrNotFound when no run has the id, and nil when the run is done.
func (s *SQLite) update(ctx context.Context, id, q string, args ...any) error {
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("update run %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("update run %s: %w", id, err)
	}
	if n > 0 {
		return nil
	}
	var exists bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`, id).Scan(&exists); err != nil {
		return fmt.Errorf("update run %s: %w", id, err)
	}
	if !exists {
		return fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	return nil // done already: write-once
}

// Report implements Meta.
func (s *SQLite) Report(ctx context.Context, id string) ([]byte, error) {
	var rep []byte
	err := s.db.QueryRowContext(ctx, `SELECT report FROM runs WHERE id = ?`, id).Scan(&rep)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && rep == nil) {
		return nil, fmt.Errorf("report of run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("report of run %s: %w", id, err)
	}
	return rep, nil
}

// Delete implements Meta.
func (s *SQLite) Delete(ctx context.Context, id string) ([]string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("delete run %s: %w", id, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT sha256 FROM run_files WHERE run_id = ? ORDER BY sha256`, id)
	if err != nil {
		return nil, fmt.Errorf("delete run %s: %w", id, err)
	}
	var hashes []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			rows.Close()
			return nil, fmt.Errorf("delete run %s: %w", id, err)
		}
		hashes = append(hashes, h)
	}
	rows.Close()
	res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("delete run %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	var orphans []string
	for _, h := range hashes {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM run_files WHERE sha256 = ?) + (SELECT count(*) FROM blob_holds WHERE sha256 = ? AND expires > ?)`,
			h, h, time.Now().UnixNano()).Scan(&n); err != nil {
			return nil, fmt.Errorf("delete run %s: %w", id, err)
		}
		if n == 0 {
			orphans = append(orphans, h)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("delete run %s: %w", id, err)
	}
	return orphans, nil
}

// Unfinished implements Meta.
func (s *SQLite) Unfinished(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM runs WHERE status IN (?, ?) ORDER BY created`,
		string(StatusQueued), string(StatusRunning))
	if err != nil {
		return nil, fmt.Errorf("unfinished runs: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("unfinished runs: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Counts implements Meta.
func (s *SQLite) Counts(ctx context.Context) (map[Status]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, count(*) FROM runs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	defer rows.Close()
	m := map[Status]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count runs: %w", err)
		}
		m[Status(st)] = n
	}
	return m, rows.Err()
}

// Referenced implements Meta.
func (s *SQLite) Referenced(ctx context.Context, sha string) (bool, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM run_files WHERE sha256 = ?) + (SELECT count(*) FROM blob_holds WHERE sha256 = ? AND expires > ?)`,
		sha, sha, time.Now().UnixNano()).Scan(&n); err != nil {
		return false, fmt.Errorf("blob %s references: %w", sha, err)
	}
	return n > 0, nil
}

// Hold implements Meta; it also drops the holds that expired.
func (s *SQLite) Hold(ctx context.Context, sha, holder string, expires time.Time) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM blob_holds WHERE expires <= ?`, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("hold blob %s: %w", sha, err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO blob_holds (sha256, holder, expires) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
		sha, holder, expires.UnixNano()); err != nil {
		return fmt.Errorf("hold blob %s: %w", sha, err)
	}
	return nil
}

// Release implements Meta.
func (s *SQLite) Release(ctx context.Context, holder string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM blob_holds WHERE holder = ?`, holder); err != nil {
		return fmt.Errorf("release the blobs of %s: %w", holder, err)
	}
	return nil
}
