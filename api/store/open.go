package store

import (
	"context"
	"fmt"
	"strings"
)

// MetaSchemes lists the URL forms OpenMeta accepts, for messages.
const MetaSchemes = "sqlite://PATH, postgres://... or postgresql://..."

// OpenMeta opens the metadata store a URL names: sqlite://PATH for an
// SQLite file (PATH relative, as in sqlite://runs.db, or absolute, as in
// sqlite:///var/lib/kinetoscope/runs.db), or a PostgreSQL URL
// (postgres://user:password@host:port/db?sslmode=..., or postgresql://).
// The schema is migrated to the current version before it returns.
func OpenMeta(ctx context.Context, url string) (Meta, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		if strings.ContainsAny(url, "@=") { // may hold a password: not repeated
			return nil, fmt.Errorf("database URL without a scheme: want %s", MetaSchemes)
		}
		return nil, fmt.Errorf("database URL %q has no scheme: want %s", url, MetaSchemes)
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		if rest == "" {
			return nil, fmt.Errorf("database URL %q names no file: want sqlite://PATH", url)
		}
		return OpenSQLite(rest)
	case "postgres", "postgresql":
		return OpenPostgres(ctx, url)
	}
	return nil, fmt.Errorf("database URL scheme %q is not supported: want %s", scheme, MetaSchemes)
}

// OpenBlobs opens the blob store that url names:
//
//	file://DIR                   a directory (Dir); file:///abs or file://rel
//	s3://BUCKET?endpoint=...     a bucket of an S3-compatible store (see OpenS3)
func OpenBlobs(ctx context.Context, url string) (Blobs, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("blob store URL %q: no scheme (want file://DIR or s3://BUCKET?endpoint=HOST:PORT)", url)
	}
	switch scheme {
	case "file":
		if rest == "" {
			return nil, fmt.Errorf("blob store URL %q: no directory (want file://DIR)", url)
		}
		return OpenDir(rest)
	case "s3":
		return OpenS3(ctx, url)
	default:
		return nil, fmt.Errorf("blob store URL %q: unknown scheme %q (want file or s3)", url, scheme)
	}
}
