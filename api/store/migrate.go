package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrations holds the versioned schema of each backend, one goose SQL
// file per version: migrations/sqlite/NNNNN_*.sql and
// migrations/postgres/NNNNN_*.sql. A schema change adds a file to both.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// migrationLockID is the PostgreSQL advisory lock that one replica holds
// while it migrates, so that replicas starting at once apply each version
// once. It is Kinetoscope's own, not goose's default, so that another
// goose-migrated application on the same database does not wait on it.
const migrationLockID int64 = 0x6b696e65746f // "kineto"

// migrate applies the pending migrations of migrations/DIR to db.
// locker, when not nil, serialises concurrent migrations of one database.
func migrate(ctx context.Context, dialect goose.Dialect, db *sql.DB, dir string, locker lock.SessionLocker) error {
	fsys, err := fs.Sub(migrations, "migrations/"+dir)
	if err != nil {
		return fmt.Errorf("migrations of %s: %w", dir, err)
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if locker != nil {
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(dialect, db, fsys, opts...)
	if err != nil {
		return fmt.Errorf("migrations of %s: %w", dir, err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate %s schema: %w", dir, err)
	}
	return nil
}

// postgresLocker returns the session lock held while migrating a
// PostgreSQL database: retried every second for up to ten minutes, as
// long as another replica may take to migrate.
func postgresLocker() (lock.SessionLocker, error) {
	l, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 600))
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	return l, nil
}
