package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a Blobs kept in a bucket of an S3-compatible object store, under
// the same keys as Dir: sha256/ab/abcdef... for the blobs, tmp/ for
// uploads in progress.
//
// Put streams its input as a multipart upload of bounded parts (memory
// stays bounded and nothing touches the local disk), then copies the
// finished temporary object to its content key on the server. A process
// killed mid-upload leaves an incomplete multipart upload or a tmp/
// object; OpenS3 does not remove them: the server calls Sweep at start
// and periodically, with an age longer than any upload takes (say 24h).
// A blob is at most 10,000 parts of 16 MiB: 156 GiB.
type S3 struct {
	client   *minio.Client
	core     *minio.Core
	bucket   string
	endpoint string
	// partSize is the multipart part size of Put: the memory one upload
	// holds, and a blob's size is at most 10,000 parts.
	partSize uint64
	// copyPartSize is the largest object copied to its content key by one
	// CopyObject request (S3's limit is 5 GiB); larger ones are copied by
	// a multipart copy of parts of at most this size.
	copyPartSize int64
}

const (
	s3TmpPrefix  = "tmp/"
	s3BlobPrefix = "sha256/"
	// s3PartSize is Put's part size: 16 MiB parts allow blobs of up to
	// 156 GiB.
	s3PartSize = 16 << 20
	// s3MaxRetries is how many times minio-go retries a failed request.
	s3MaxRetries = 4
	// s3MaxCopySize is S3's limit for a single CopyObject request and
	// for one part of a multipart copy.
	s3MaxCopySize = 5 << 30
)

// OpenS3 returns the blob store in an S3-compatible bucket named by url:
//
//	s3://BUCKET?endpoint=HOST:PORT&region=REGION[&insecure=true][&create=true]
//
// endpoint is required; insecure=true talks plain HTTP instead of HTTPS;
// create=true creates the bucket when it does not exist (else a missing
// bucket is an error). Addressing is path-style (http://HOST:PORT/BUCKET),
// which every S3-compatible server supports. Credentials come from the
// environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, if set,
// AWS_SESSION_TOKEN.
//
// OpenS3 does not sweep what interrupted uploads left behind: call Sweep.
func OpenS3(ctx context.Context, rawurl string) (*S3, error) {
	return openS3(ctx, rawurl, nil)
}

// openS3 is OpenS3 with an HTTP transport (nil: minio-go's default), so
// that tests can inject server failures.
func openS3(ctx context.Context, rawurl string, transport http.RoundTripper) (*S3, error) {
	cfg, err := parseS3URL(rawurl)
	if err != nil {
		return nil, err
	}
	creds := credentials.NewEnvAWS()
	if v, err := creds.Get(); err != nil || v.AccessKeyID == "" || v.SecretAccessKey == "" {
		return nil, fmt.Errorf("s3 blob store %s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", cfg.endpoint)
	}
	client, err := minio.New(cfg.endpoint, &minio.Options{
		Creds:        creds,
		Secure:       !cfg.insecure,
		Region:       cfg.region,
		BucketLookup: minio.BucketLookupPath,
		Transport:    transport,
		// minio-go's default, 10 retries, holds a request 6-16 s against
		// a stopped server; 4 ride out a blip and answer an outage in
		// about 1.5 s.
		MaxRetries: s3MaxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 blob store %s: %w", cfg.endpoint, err)
	}
	s := &S3{
		client:       client,
		core:         &minio.Core{Client: client},
		bucket:       cfg.bucket,
		endpoint:     cfg.endpoint,
		partSize:     s3PartSize,
		copyPartSize: s3MaxCopySize,
	}
	ok, err := client.BucketExists(ctx, cfg.bucket)
	if err != nil {
		return nil, fmt.Errorf("s3 blob store: bucket %q at %s: %w", cfg.bucket, cfg.endpoint, err)
	}
	if !ok {
		if !cfg.create {
			return nil, fmt.Errorf("s3 blob store: bucket %q does not exist at %s (add &create=true to the URL to create it)", cfg.bucket, cfg.endpoint)
		}
		if err := client.MakeBucket(ctx, cfg.bucket, minio.MakeBucketOptions{Region: cfg.region}); err != nil {
			return nil, fmt.Errorf("s3 blob store: create bucket %q at %s: %w", cfg.bucket, cfg.endpoint, err)
		}
	}
	return s, nil
}

// s3Config is a parsed s3:// URL.
type s3Config struct {
	bucket, endpoint, region string
	insecure, create         bool
}

// parseS3URL parses s3://BUCKET?endpoint=...&region=...&insecure=...&create=...
func parseS3URL(rawurl string) (s3Config, error) {
	var cfg s3Config
	u, err := url.Parse(rawurl)
	if err != nil {
		return cfg, fmt.Errorf("s3 blob store URL: %w", err)
	}
	if u.Scheme != "s3" {
		return cfg, fmt.Errorf("s3 blob store URL %q: scheme is %q, want s3", rawurl, u.Scheme)
	}
	if u.Host == "" {
		return cfg, fmt.Errorf("s3 blob store URL %q: no bucket (want s3://BUCKET?endpoint=HOST:PORT)", rawurl)
	}
	if u.Path != "" && u.Path != "/" {
		return cfg, fmt.Errorf("s3 blob store URL %q: unexpected path %q after the bucket", rawurl, u.Path)
	}
	if u.User != nil {
		return cfg, fmt.Errorf("s3 blob store URL %q: credentials do not belong in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", u.Redacted())
	}
	cfg.bucket = u.Host
	q := u.Query()
	for k, v := range q {
		if len(v) != 1 {
			return cfg, fmt.Errorf("s3 blob store URL %q: %s given %d times", rawurl, k, len(v))
		}
		var err error
		switch k {
		case "endpoint":
			cfg.endpoint = v[0]
		case "region":
			cfg.region = v[0]
		case "insecure":
			cfg.insecure, err = strconv.ParseBool(v[0])
		case "create":
			cfg.create, err = strconv.ParseBool(v[0])
		default:
			return cfg, fmt.Errorf("s3 blob store URL %q: unknown option %q (want endpoint, region, insecure, create)", rawurl, k)
		}
		if err != nil {
			return cfg, fmt.Errorf("s3 blob store URL %q: %s: %w", rawurl, k, err)
		}
	}
	if cfg.endpoint == "" {
		return cfg, fmt.Errorf("s3 blob store URL %q: endpoint=HOST:PORT is required", rawurl)
	}
	return cfg, nil
}

// key returns a blob's object key, or ErrNotFound for a malformed hash.
func (s *S3) key(sha string) (string, error) {
	if len(sha) != 64 {
		return "", fmt.Errorf("blob %q: %w", sha, ErrNotFound)
	}
	if _, err := hex.DecodeString(sha); err != nil {
		return "", fmt.Errorf("blob %q: %w", sha, ErrNotFound)
	}
	return s3BlobPrefix + sha[:2] + "/" + sha, nil
}

// Put implements Blobs: it streams r as a multipart upload to a temporary
// object while hashing it, then copies that object to its content key on
// the server (unless the key exists: same content) and deletes it. A Put
// that fails at any point aborts its multipart upload and removes its
// temporary object, so no blob appears.
func (s *S3) Put(ctx context.Context, r io.Reader) (sha string, size int64, err error) {
	var rnd [16]byte
	rand.Read(rnd[:])
	tmp := s3TmpPrefix + hex.EncodeToString(rnd[:])
	defer func() {
		if err != nil {
			s.removeTmp(ctx, tmp, true)
		}
	}()
	hr := &hashReader{r: ctxReader{ctx, r}, h: sha256.New()}
	opts := minio.PutObjectOptions{PartSize: s.partSize, ContentType: "application/octet-stream"}
	// An empty input is one PUT whose (empty) payload is signed in its
	// header: over plain HTTP, minio-go signs a body chunk by chunk
	// (aws-chunked), and versitygw v1.8.0 misreads an empty chunked body,
	// answering a second request that was never sent.
	var first [1]byte
	var info minio.UploadInfo
	switch n, rerr := io.ReadFull(hr, first[:]); {
	case rerr == io.EOF:
		empty := opts
		empty.DisableContentSha256 = true
		info, err = s.core.PutObject(ctx, s.bucket, tmp, bytes.NewReader(nil), 0, "", hex.EncodeToString(hr.h.Sum(nil)), empty)
	case rerr != nil:
		err = rerr
	default:
		info, err = s.client.PutObject(ctx, s.bucket, tmp, io.MultiReader(bytes.NewReader(first[:n]), hr), -1, opts)
	}
	if err != nil {
		if hr.err != nil {
			err = hr.err // the reader's own error, not minio's wrapping of it
		} else {
			err = s.unavailable(err)
		}
		return "", hr.n, fmt.Errorf("s3 blob store %s: upload after %d bytes: %w", s.bucket, hr.n, err)
	}
	if info.Size != hr.n {
		return "", hr.n, fmt.Errorf("s3 blob store %s: uploaded %d bytes, the server stored %d", s.bucket, hr.n, info.Size)
	}
	sha = hex.EncodeToString(hr.h.Sum(nil))
	key, _ := s.key(sha)
	switch _, err = s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{}); {
	case err == nil: // already stored: same content
	case isNotFound(err):
		if err = s.copy(ctx, tmp, key, hr.n); err != nil {
			return "", hr.n, fmt.Errorf("s3 blob store %s: copy %s to %s: %w", s.bucket, tmp, key, s.unavailable(err))
		}
	default:
		return "", hr.n, fmt.Errorf("s3 blob store %s: stat %s: %w", s.bucket, key, s.unavailable(err))
	}
	// The blob is stored: a temporary object that cannot be removed now is
	// Sweep's to remove, and no reason to fail the Put.
	s.removeTmp(ctx, tmp, false)
	return sha, hr.n, nil
}

// copy copies the object src of size bytes to dst on the server: by one
// CopyObject request up to copyPartSize, else by a multipart copy, which
// it aborts when it fails.
func (s *S3) copy(ctx context.Context, src, dst string, size int64) error {
	if size <= s.copyPartSize {
		_, err := s.client.CopyObject(ctx,
			minio.CopyDestOptions{Bucket: s.bucket, Object: dst},
			minio.CopySrcOptions{Bucket: s.bucket, Object: src})
		return err
	}
	id, err := s.core.NewMultipartUpload(ctx, s.bucket, dst, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return err
	}
	parts, err := s.copyParts(ctx, src, dst, id, size)
	if err == nil {
		_, err = s.core.CompleteMultipartUpload(ctx, s.bucket, dst, id, parts, minio.PutObjectOptions{})
	}
	if err != nil {
		actx, cancel := cleanupContext(ctx)
		defer cancel()
		if aerr := s.core.AbortMultipartUpload(actx, s.bucket, dst, id); aerr != nil {
			return fmt.Errorf("%w (and abort of multipart copy %s: %v)", err, id, aerr)
		}
	}
	return err
}

// copyParts copies src into the multipart upload id of dst in equal parts
// of at most copyPartSize.
func (s *S3) copyParts(ctx context.Context, src, dst, id string, size int64) ([]minio.CompletePart, error) {
	n := (size + s.copyPartSize - 1) / s.copyPartSize
	partLen := (size + n - 1) / n
	var parts []minio.CompletePart
	for i, off := 1, int64(0); off < size; i, off = i+1, off+partLen {
		length := min(partLen, size-off)
		p, err := s.core.CopyObjectPart(ctx, s.bucket, src, s.bucket, dst, id, i, off, length, nil)
		if err != nil {
			return nil, fmt.Errorf("copy part %d (bytes %d-%d): %w", i, off, off+length-1, err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// removeTmp removes the temporary object tmp, even when ctx is already
// cancelled, after aborting its multipart uploads when uploads is set.
// minio-go aborts a streamed upload that fails (a reader error, a failed
// request, a cancelled context); this also covers an abort that it could
// not send.
func (s *S3) removeTmp(ctx context.Context, tmp string, uploads bool) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if uploads {
		s.client.RemoveIncompleteUpload(ctx, s.bucket, tmp)
	}
	s.client.RemoveObject(ctx, s.bucket, tmp, minio.RemoveObjectOptions{})
}

// cleanupContext returns a context for cleaning up after ctx failed: not
// cancelled with it, but bounded.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// hashReader hashes and counts what it reads and keeps the reader's error.
type hashReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error
}

// Read reads from r, hashing and counting the bytes.
func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	h.n += int64(n)
	if err != nil && err != io.EOF {
		h.err = err
	}
	return n, err
}

// isNotFound reports whether err is S3's answer for a missing key.
func isNotFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket
}

// Open implements Blobs: the blob reads sequentially as one stream of the
// object, and ReadAt as one ranged request a call (safe for concurrent
// use). The blob can be read while ctx lasts.
func (s *S3) Open(ctx context.Context, sha string) (Blob, error) {
	key, err := s.key(sha)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.readError(key, err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		if isNotFound(err) {
			return nil, fmt.Errorf("blob %s: %w", sha, ErrNotFound)
		}
		return nil, s.readError(key, err)
	}
	return &s3Blob{s: s, ctx: ctx, key: key, obj: obj, size: st.Size}, nil
}

// s3Blob is a Blob read from an S3 object. Its sequential reads use
// minio-go's Object; ReadAt does not, since an Object's ReadAt that reaches
// the end makes its later Reads return io.EOF at once (minio-go v7.4.1).
type s3Blob struct {
	s    *S3
	ctx  context.Context
	key  string
	obj  *minio.Object
	size int64
	read int64 // bytes Read so far
	// mu guards windows, the object's bytes fetched ahead for small
	// ReadAts (newest first): a zip member's decompressor reads 4 KiB at a
	// time, one ranged GET each without them.
	mu      sync.Mutex
	windows []readWindow
	gets    atomic.Int64 // ranged GETs sent, for tests
}

// readWindow is a range of the object fetched ahead.
type readWindow struct {
	off  int64
	data []byte
}

// Read-ahead of small ReadAts: a ReadAt shorter than readAheadBytes is
// served from (or fetches) a window of that many bytes; a blob keeps at
// most readAheadWindows of them, for readers at different offsets (a zip
// directory and a member, say).
const (
	readAheadBytes   = 1 << 20
	readAheadWindows = 4
)

// Read implements io.Reader. A stream that fails, or ends before the
// blob's size, is a ReadError: the store's fault, not the content's.
func (b *s3Blob) Read(p []byte) (int, error) {
	n, err := b.obj.Read(p)
	b.read += int64(n)
	switch {
	case err == io.EOF && b.read < b.size:
		err = b.s.readError(b.key, fmt.Errorf("the stream ended after %d of %d bytes: %w", b.read, b.size, io.ErrUnexpectedEOF))
	case err != nil && err != io.EOF:
		err = b.s.readError(b.key, fmt.Errorf("after %d bytes: %w", b.read, err))
	}
	return n, err
}

// ReadAt implements io.ReaderAt: a large read is one ranged GET of the
// bytes asked for, a small one comes from a window fetched ahead (see
// readAheadBytes).
func (b *s3Blob) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s at %d: negative offset", b.key, off)
	}
	if off >= b.size || len(p) == 0 {
		if off >= b.size && len(p) > 0 {
			return 0, io.EOF
		}
		return 0, nil
	}
	if len(p) >= readAheadBytes {
		return b.readRange(p, off)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	w, err := b.window(off)
	if err != nil {
		return 0, err
	}
	n := copy(p, w.data[off-w.off:])
	if n < len(p) {
		if off+int64(n) >= b.size {
			return n, io.EOF
		}
		// p runs past the window: the rest from the next one.
		m, err := b.readAtLocked(p[n:], off+int64(n))
		return n + m, err
	}
	return n, nil
}

// readAtLocked is ReadAt with mu held, for the part of a small read that
// runs into the next window.
func (b *s3Blob) readAtLocked(p []byte, off int64) (int, error) {
	w, err := b.window(off)
	if err != nil {
		return 0, err
	}
	n := copy(p, w.data[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// window returns a window holding the byte at off, fetching it when no
// window does; mu is held.
func (b *s3Blob) window(off int64) (*readWindow, error) {
	for i := range b.windows {
		if w := &b.windows[i]; off >= w.off && off < w.off+int64(len(w.data)) {
			if i > 0 { // newest first
				b.windows[0], b.windows[i] = b.windows[i], b.windows[0]
			}
			return &b.windows[0], nil
		}
	}
	data := make([]byte, min(readAheadBytes, b.size-off))
	if _, err := b.readRange(data, off); err != nil && err != io.EOF {
		return nil, err
	}
	if len(b.windows) < readAheadWindows {
		b.windows = append(b.windows, readWindow{})
	}
	copy(b.windows[1:], b.windows[:len(b.windows)-1])
	b.windows[0] = readWindow{off: off, data: data}
	return &b.windows[0], nil
}

// readRange fills p from the object at off with one ranged GET.
func (b *s3Blob) readRange(p []byte, off int64) (int, error) {
	b.gets.Add(1)
	n := min(int64(len(p)), b.size-off)
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return 0, fmt.Errorf("read %s at %d: %w", b.key, off, err)
	}
	body, _, _, err := b.s.core.GetObject(b.ctx, b.s.bucket, b.key, opts)
	if err != nil {
		return 0, b.s.readError(b.key, fmt.Errorf("%d bytes at %d: %w", n, off, err))
	}
	defer body.Close()
	m, err := io.ReadFull(body, p[:n])
	if err != nil {
		return m, b.s.readError(b.key, fmt.Errorf("%d bytes at %d: %w", n, off, err))
	}
	if m < len(p) {
		return m, io.EOF
	}
	return m, nil
}

// Close implements io.Closer.
func (b *s3Blob) Close() error { return b.obj.Close() }

// Size implements Blob.
func (b *s3Blob) Size() int64 { return b.size }

// Has implements Blobs.
func (s *S3) Has(ctx context.Context, sha string) (bool, error) {
	key, err := s.key(sha)
	if err != nil {
		return false, nil
	}
	_, err = s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("blob %s: %w", sha, s.unavailable(err))
	}
	return true, nil
}

// Where names the store: its bucket and endpoint.
func (s *S3) Where() string { return "s3 bucket " + s.bucket + " at " + s.endpoint }

// unavailable wraps an error of the S3 server (or of reaching it) in an
// UnavailableError naming the bucket.
func (s *S3) unavailable(err error) error {
	var ue *UnavailableError
	if errors.As(err, &ue) || errors.Is(err, context.Canceled) {
		return err
	}
	return &UnavailableError{Store: s.Where(), Err: err}
}

// readError wraps an error reading the object key in a ReadError.
func (s *S3) readError(key string, err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("read %s: %w", key, err)
	}
	return &ReadError{Blob: key, Store: s.Where(), Err: err}
}

// Probe implements Prober: the bucket answers within ProbeTimeout.
func (s *S3) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if _, err := s.client.BucketExists(ctx, s.bucket); err != nil {
		if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("no answer within %s: %w", ProbeTimeout, err)
		}
		return s.unavailable(err)
	}
	return nil
}

// Delete implements Blobs.
func (s *S3) Delete(ctx context.Context, sha string) error {
	key, err := s.key(sha)
	if err != nil {
		return nil
	}
	err = s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete blob %s: %w", sha, s.unavailable(err))
	}
	return nil
}

// ListBlobs implements Lister: the objects under sha256/ named by a hash.
func (s *S3) ListBlobs(ctx context.Context, before time.Time, fn func(sha string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the listing when fn fails
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s3BlobPrefix, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("list the blobs of s3 bucket %s: %w", s.bucket, s.unavailable(o.Err))
		}
		sha := o.Key[strings.LastIndexByte(o.Key, '/')+1:]
		if key, err := s.key(sha); err != nil || key != o.Key || !o.LastModified.Before(before) {
			continue
		}
		if err := fn(sha); err != nil {
			return err
		}
	}
	return nil
}

// Sweep removes what interrupted uploads left: it aborts the incomplete
// multipart uploads of blob and temporary keys, and deletes the tmp/
// objects, that are older than olderThan. olderThan must exceed the
// longest upload in progress (of this or any other process using the
// bucket), or Sweep breaks it. It returns how many it removed.
func (s *S3) Sweep(ctx context.Context, olderThan time.Duration) (removed int, err error) {
	cutoff := time.Now().Add(-olderThan)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the listings when Sweep returns early
	var errs []error
	// Put's streamed uploads are under tmp/, its multipart copies (of
	// blobs over 5 GiB) under sha256/.
	for _, prefix := range []string{s3TmpPrefix, s3BlobPrefix} {
		for u := range s.client.ListIncompleteUploads(ctx, s.bucket, prefix, true) {
			if u.Err != nil {
				return removed, fmt.Errorf("sweep s3 bucket %s: list multipart uploads of %s: %w", s.bucket, prefix, u.Err)
			}
			if !strings.HasPrefix(u.Key, prefix) || u.Initiated.After(cutoff) {
				continue
			}
			if err := s.core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID); err != nil {
				errs = append(errs, fmt.Errorf("abort upload %s of %s: %w", u.UploadID, u.Key, err))
				continue
			}
			removed++
		}
	}
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s3TmpPrefix, Recursive: true}) {
		if o.Err != nil {
			return removed, fmt.Errorf("sweep s3 bucket %s: list %s: %w", s.bucket, s3TmpPrefix, o.Err)
		}
		if o.LastModified.After(cutoff) {
			continue
		}
		if err := s.client.RemoveObject(ctx, s.bucket, o.Key, minio.RemoveObjectOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", o.Key, err))
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("sweep s3 bucket %s: %w", s.bucket, err)
	}
	return removed, nil
}
