package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Dir is a Blobs kept in a directory: root/sha256/ab/abcdef... for the
// blobs, root/tmp for uploads in progress.
type Dir struct {
	root string
}

// OpenDir returns the blob directory at root, creating it if needed, and
// removes temporary files left by an interrupted process.
func OpenDir(root string) (*Dir, error) {
	d := &Dir{root: root}
	if err := os.RemoveAll(d.tmpDir()); err != nil {
		return nil, fmt.Errorf("clean %s: %w", d.tmpDir(), err)
	}
	for _, p := range []string{d.tmpDir(), filepath.Join(root, "sha256")} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("blob store: %w", err)
		}
	}
	return d, nil
}

func (d *Dir) tmpDir() string { return filepath.Join(d.root, "tmp") }

func (d *Dir) path(sha string) (string, error) {
	if len(sha) != 64 {
		return "", fmt.Errorf("blob %q: %w", sha, ErrNotFound)
	}
	if _, err := hex.DecodeString(sha); err != nil {
		return "", fmt.Errorf("blob %q: %w", sha, ErrNotFound)
	}
	return filepath.Join(d.root, "sha256", sha[:2], sha), nil
}

// Put implements Blobs: it writes to a temporary file, syncs it and renames
// it to its hash only when r ended cleanly.
func (d *Dir) Put(ctx context.Context, r io.Reader) (string, int64, error) {
	tmp, err := os.CreateTemp(d.tmpDir(), "upload-*")
	if err != nil {
		return "", 0, fmt.Errorf("blob store: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx, r})
	if err != nil {
		return "", n, fmt.Errorf("blob store: copy after %d bytes: %w", n, err)
	}
	if err := tmp.Sync(); err != nil {
		return "", n, fmt.Errorf("blob store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", n, fmt.Errorf("blob store: %w", err)
	}
	sha := hex.EncodeToString(h.Sum(nil))
	dst, _ := d.path(sha)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", n, fmt.Errorf("blob store: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", n, fmt.Errorf("blob store: %w", err)
	}
	ok = true
	return sha, n, nil
}

// Open implements Blobs.
func (d *Dir) Open(ctx context.Context, sha string) (Blob, error) {
	p, err := d.existing(sha)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, &ReadError{Blob: p, Store: d.Where(), Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &ReadError{Blob: p, Store: d.Where(), Err: err}
	}
	return fileBlob{f, st.Size(), d.Where()}, nil
}

// Where names the store: its directory.
func (d *Dir) Where() string { return "blob directory " + d.root }

// fileBlob is a Blob read from a local file; its read errors (but io.EOF)
// are ReadErrors.
type fileBlob struct {
	*os.File
	size  int64
	where string
}

// Read implements io.Reader.
func (b fileBlob) Read(p []byte) (int, error) {
	n, err := b.File.Read(p)
	return n, b.readError(err)
}

// ReadAt implements io.ReaderAt.
func (b fileBlob) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.File.ReadAt(p, off)
	return n, b.readError(err)
}

// readError wraps a read error but io.EOF in a ReadError.
func (b fileBlob) readError(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &ReadError{Blob: b.Name(), Store: b.where, Err: err}
}

// Size implements Blob.
func (b fileBlob) Size() int64 { return b.size }

// existing returns the path of the blob sha, or ErrNotFound.
func (d *Dir) existing(sha string) (string, error) {
	p, err := d.path(sha)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("blob %s: %w", sha, ErrNotFound)
	} else if err != nil {
		return "", fmt.Errorf("blob %s: %w", sha, err)
	}
	return p, nil
}

// Has implements Blobs.
func (d *Dir) Has(ctx context.Context, sha string) (bool, error) {
	_, err := d.existing(sha)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Delete implements Blobs.
func (d *Dir) Delete(ctx context.Context, sha string) error {
	p, err := d.path(sha)
	if err != nil {
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete blob %s: %w", sha, err)
	}
	return nil
}

// Lister is a Blobs that lists its blobs, for the sweep of those no run
// references.
type Lister interface {
	// ListBlobs calls fn with the hash of every blob last written before
	// before, until fn returns an error (which it returns).
	ListBlobs(ctx context.Context, before time.Time, fn func(sha string) error) error
}

// ListBlobs implements Lister: the files under sha256/ named by a hash.
func (d *Dir) ListBlobs(ctx context.Context, before time.Time, fn func(sha string) error) error {
	return filepath.WalkDir(filepath.Join(d.root, "sha256"), func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list blobs: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		if p, perr := d.path(e.Name()); perr != nil || p != path {
			return nil // not a blob
		}
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted meanwhile
			}
			return fmt.Errorf("list blobs: %w", err)
		}
		if !info.ModTime().Before(before) {
			return nil
		}
		return fn(e.Name())
	})
}

// ctxReader stops reading once its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read fails once the context is done, else reads.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
