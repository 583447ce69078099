package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ReadError is a stored blob that could not be read: the blob store failed
// (an S3 outage, a disk error), not the blob's content. A parse error of
// a trace never is one, so that an analysis can tell "try again later"
// from "this trace is bad".
type ReadError struct {
	// Blob names the blob (its key) and Store the store it is in.
	Blob, Store string
	Err         error
}

// Error says which blob could not be read from which store, and why.
func (e *ReadError) Error() string {
	return fmt.Sprintf("read %s from %s: %v", e.Blob, e.Store, e.Err)
}

// Unwrap returns the store's error.
func (e *ReadError) Unwrap() error { return e.Err }

// UnavailableError is a store that did not answer, or answered with a
// failure of its own (a connection refused, a timeout, an S3 server
// error, PostgreSQL shutting down): neither the request's fault nor the
// data's, and worth trying again later.
type UnavailableError struct {
	// Store names the store: "postgres HOST/DB", "s3 bucket B at HOST".
	Store string
	Err   error
}

// Error names the store and its error.
func (e *UnavailableError) Error() string { return e.Store + " is unavailable: " + e.Err.Error() }

// Unwrap returns the store's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable reports whether err says that a store failed rather than
// the request or the data: an UnavailableError or a ReadError.
func Unavailable(err error) bool {
	var ue *UnavailableError
	var re *ReadError
	return errors.As(err, &ue) || errors.As(err, &re)
}

// ProbeTimeout bounds Probe: the first contact with a store of a request,
// so that an outage is answered in about this long, not after a client's
// retries (minio-go's take 6-16 s against a stopped S3 server).
const ProbeTimeout = 2 * time.Second

// Prober is a store that can say quickly whether it answers.
type Prober interface {
	// Probe returns an UnavailableError unless the store answers within
	// ProbeTimeout.
	Probe(ctx context.Context) error
}

// pgUnavailable wraps err in an UnavailableError of the database named
// where when it is a failure to reach PostgreSQL or of the server itself
// (classes 08 connection exception, 53 insufficient resources, 57
// operator intervention: a shutdown), and returns other errors (SQL
// errors, no rows, a cancelled request) as they are.
func pgUnavailable(where string, err error) error {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || errors.Is(err, ErrNotFound) || errors.Is(err, context.Canceled) {
		return err
	}
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "08", "53", "57":
			return &UnavailableError{Store: where, Err: err}
		}
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return &UnavailableError{Store: where, Err: err}
	}
	return err
}
