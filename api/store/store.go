// Package store keeps Kinetoscope's runs: their metadata, status and
// reports in a database (Meta), and the uploaded trace files as
// content-addressed blobs (Blobs).
//
// The two halves are interfaces so that a shared deployment can put the
// metadata in PostgreSQL (Postgres) and the blobs in an S3-compatible object
// store; the embedded implementations are SQLite (modernc.org/sqlite, pure
// Go) and a directory of files named by their SHA-256. OpenMeta picks the
// metadata store from a URL. Both databases' schemas are versioned goose
// migrations (migrations/), applied when the store opens.
package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotFound is returned for a run or blob that does not exist.
var ErrNotFound = errors.New("not found")

// Status is a run's state.
type Status string

// Run states. A run is created only once its files are complete, so it is
// never half uploaded.
const (
	StatusQueued  Status = "queued"  // stored, waiting for analysis
	StatusRunning Status = "running" // being analysed
	StatusDone    Status = "done"    // report available
	StatusFailed  Status = "failed"  // analysis failed; Error says why
)

// File is one uploaded file of a run.
type File struct {
	Name   string `json:"name"`   // the uploaded name, cleaned
	SHA256 string `json:"sha256"` // hex content hash: the blob key
	Size   int64  `json:"size"`
	// Format is the file's format as ingest names it (ingest.Source.Format):
	// json, gzip, tar, tar.gz or zip; "kind" in the JSON.
	Format string `json:"kind"`
	// Rank is the rank the upload assigned to the file (a rank field
	// FILE=N), over what its distributedInfo.rank and its name say; nil
	// for none.
	Rank *int `json:"rank,omitempty"`
}

// Progress is how far a run's analysis has come.
type Progress struct {
	Stage      string `json:"phase"`       // queued, reading, analyzing, done, failed
	Bytes      int64  `json:"bytes_read"`  // bytes read so far
	TotalBytes int64  `json:"bytes_total"` // the run's files' size
	Events     int64  `json:"events"`
	// Replica names the replica analysing the run (a team deployment:
	// it writes its progress to the database every few seconds).
	Replica string `json:"replica,omitempty"`
	// Stalled, when set, says that the replica analysing the run stopped
	// answering (its progress is no longer written), and what happens
	// next; set by the server answering, never stored.
	Stalled string `json:"stalled,omitempty"`
}

// Run is one uploaded profiling run.
type Run struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels"`
	Status   Status            `json:"status"`
	Progress Progress          `json:"progress"`
	Error    string            `json:"error,omitempty"`
	Files    []File            `json:"files"`
	// Link is the link between the GPUs that the run's collective
	// bandwidth is held against (analyze's Options.Link: nvlink4,
	// pcie5x16, a GB/s figure); "" for the one the GPU name tells.
	Link    string    `json:"link"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Size returns the total size of the run's files.
func (r *Run) Size() int64 {
	var n int64
	for _, f := range r.Files {
		n += f.Size
	}
	return n
}

// ListOptions selects a page of runs, newest first.
type ListOptions struct {
	Labels map[string]string // every pair must match
	// Status, when set, keeps the runs of that status; Name the runs whose
	// name contains it.
	Status Status
	Name   string
	Limit  int
	Offset int
}

// Meta stores runs, their status and reports.
type Meta interface {
	// Create adds a run whose files are already stored as blobs.
	Create(ctx context.Context, r *Run) error
	// Get returns a run by id, or ErrNotFound.
	Get(ctx context.Context, id string) (*Run, error)
	// List returns a page of runs and the number of runs that match.
	List(ctx context.Context, opt ListOptions) ([]*Run, int, error)
	// SetStatus records a run's status, progress and error text. A run
	// that is done is never changed: the call returns nil (with several
	// replicas, a retried analysis may finish after the first one).
	SetStatus(ctx context.Context, id string, st Status, p Progress, errText string) error
	// SetReport stores the analysis report (JSON) and marks the run done.
	// Reports are written once: on a run already done it changes nothing
	// and returns nil, and the first report stays.
	SetReport(ctx context.Context, id string, report []byte, p Progress) error
	// SetLink changes the link a run's bandwidth is held against (see
	// Run.Link), whatever its status: its stored report stays as it was
	// made. It returns ErrNotFound when no run has the id.
	SetLink(ctx context.Context, id, link string) error
	// Report returns the stored report JSON, or ErrNotFound.
	Report(ctx context.Context, id string) ([]byte, error)
	// Delete removes a run and returns the blob hashes that no run uses and
	// no upload holds any more.
	Delete(ctx context.Context, id string) (orphans []string, err error)
	// Referenced reports whether any run uses the blob, or an upload holds
	// it (see Hold).
	Referenced(ctx context.Context, sha string) (bool, error)
	// Hold records that the upload holder stored the blob sha and is about
	// to record a run with it: until Release(holder), or until expires if
	// its process dies first, the blob counts as referenced (Referenced,
	// Delete), whichever process asks.
	Hold(ctx context.Context, sha, holder string, expires time.Time) error
	// Release ends every hold of holder.
	Release(ctx context.Context, holder string) error
	// StartAnalysis marks a queued or running run running with progress
	// p and counts one more attempt at its analysis; it returns the
	// attempts counted, 0 for a run already done or failed (nothing to
	// do), or ErrNotFound. An attempt whose process died stays counted.
	StartAnalysis(ctx context.Context, id string, p Progress) (attempts int, err error)
	// HandBack returns a running run to the queue with progress p, and
	// uncounts the attempt: its analysis was interrupted by a shutdown,
	// not by the run.
	HandBack(ctx context.Context, id string, p Progress) error
	// Reset queues a done or failed run to be analysed again (its report
	// and error dropped, its attempts zero), or returns ErrUnfinished for
	// a run still queued or running, or ErrNotFound.
	Reset(ctx context.Context, id string, p Progress) error
	// Unfinished returns the ids of runs still queued or running, oldest
	// first, so that they can be analysed again after a restart.
	Unfinished(ctx context.Context) ([]string, error)
	// Counts returns the number of runs in each status.
	Counts(ctx context.Context) (map[Status]int, error)
	// Close releases the store.
	Close() error
}

// Blob is a stored blob opened for reading, from the start or at any
// offset (a zip archive's directory is at its end).
type Blob interface {
	io.ReadCloser
	io.ReaderAt
	// Size returns the blob's length in bytes.
	Size() int64
}

// Blobs stores file contents under their SHA-256.
type Blobs interface {
	// Put stores r's contents and returns its hash and size. The blob
	// appears only when r ended without error: a failed Put leaves nothing.
	Put(ctx context.Context, r io.Reader) (sha string, size int64, err error)
	// Open returns the blob's contents, or ErrNotFound.
	Open(ctx context.Context, sha string) (Blob, error)
	// Has reports whether the blob exists.
	Has(ctx context.Context, sha string) (bool, error)
	// Delete removes a blob; a missing blob is not an error.
	Delete(ctx context.Context, sha string) error
}
