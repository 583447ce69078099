package store

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/s3test"
)

// failingTransport answers the requests that fail selects with an S3
// error (400, which minio-go does not retry) instead of sending them.
type failingTransport struct {
	rt   http.RoundTripper
	fail func(*http.Request) bool
	hits atomic.Int32
}

// RoundTrip implements http.RoundTripper.
func (f *failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.fail(r) {
		f.hits.Add(1)
		if r.Body != nil {
			r.Body.Close()
		}
		body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InjectedFailure</Code><Message>injected by the test</Message></Error>`
		return &http.Response{
			StatusCode: http.StatusBadRequest, Status: "400 Bad Request",
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        http.Header{"Content-Type": {"application/xml"}},
			Body:          io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)),
			Request:       r,
		}, nil
	}
	return f.rt.RoundTrip(r)
}

// Request kinds of a Put, for failingTransport.
func isPartUpload(n string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == n && r.Header.Get("X-Amz-Copy-Source") == ""
	}
}

func isComplete(prefix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Query().Has("uploadId") && strings.Contains(r.URL.Path, "/"+prefix)
	}
}

func isCopy(r *http.Request) bool {
	return r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" && !r.URL.Query().Has("partNumber")
}

func isCopyPart(n string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" && r.URL.Query().Get("partNumber") == n
	}
}

func isStat(r *http.Request) bool {
	return r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/sha256/")
}

// TestS3PutFailures makes each request of a Put fail in turn, on the
// streamed upload and on the server-side copy, single and multipart: a
// failed Put leaves no blob, no temporary object and no incomplete upload.
func TestS3PutFailures(t *testing.T) {
	data := genBytes(7, 12<<20) // three 5 MiB parts
	for _, tc := range []struct {
		name      string
		fail      func(*http.Request) bool
		multicopy bool // copy in 5 MiB parts
	}{
		{"first part upload", isPartUpload("1"), false},
		{"third part upload", isPartUpload("3"), false},
		{"complete upload", isComplete("tmp/"), false},
		{"stat of the blob key", isStat, false},
		{"copy", isCopy, false},
		{"second part of a multipart copy", isCopyPart("2"), true},
		{"complete of a multipart copy", isComplete("sha256/"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := minio.DefaultTransport(false)
			testkit.Must(t, err)
			ft := &failingTransport{rt: tr, fail: tc.fail}
			s, err := openS3(context.Background(), s3test.New(t), ft)
			testkit.Must(t, err)
			s.partSize = 5 << 20
			if tc.multicopy {
				s.copyPartSize = 5 << 20
			}
			sha, _, err := s.Put(context.Background(), bytes.NewReader(data))
			if err == nil || !strings.Contains(err.Error(), "injected by the test") || ft.hits.Load() == 0 {
				t.Errorf("Put = %q, %v after %d injected failures; want the injected failure", sha, err, ft.hits.Load())
			}
			if h := s3Holdings(t, s.bucket); len(h.blobs)+len(h.tmp)+len(h.uploads) != 0 {
				t.Errorf("bucket holds %+v after the failed Put, want nothing", h)
			}
		})
	}
}

// TestS3MultipartCopy stores a blob larger than the copy part size, as
// the copy of a blob over 5 GiB does: by a multipart copy of ranges.
func TestS3MultipartCopy(t *testing.T) {
	ctx := context.Background()
	tr, err := minio.DefaultTransport(false)
	testkit.Must(t, err)
	var parts atomic.Int32 // the copy-part requests
	copies := &failingTransport{rt: tr, fail: func(r *http.Request) bool {
		if r.Header.Get("X-Amz-Copy-Source") != "" && r.URL.Query().Has("partNumber") {
			parts.Add(1)
		}
		return false
	}}
	s, err := openS3(ctx, s3test.New(t), copies)
	testkit.Must(t, err)
	s.partSize, s.copyPartSize = 5<<20, 6<<20
	data := genBytes(8, 20<<20+3)
	sha, n, err := s.Put(ctx, bytes.NewReader(data))
	if err != nil || sha != shaOf(data) || n != int64(len(data)) {
		t.Fatalf("Put: %s %d %v", sha, n, err)
	}
	if got := parts.Load(); got != 4 {
		t.Errorf("copied in %d parts, want 4 (20 MiB in parts of at most 6 MiB)", got)
	}
	b, err := s.Open(ctx, sha)
	testkit.Must(t, err)
	defer b.Close()
	if got, err := io.ReadAll(b); err != nil || !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes (%v), want %d equal bytes", len(got), err, len(data))
	}
	if h := s3Holdings(t, s.bucket); !slices.Equal(h.blobs, []string{blobKey(sha)}) || len(h.tmp)+len(h.uploads) != 0 {
		t.Errorf("bucket holds %+v, want the blob only", h)
	}
}

// TestS3Sweep leaves what is younger than olderThan and removes the
// incomplete uploads and temporary objects that are older, and nothing
// else.
func TestS3Sweep(t *testing.T) {
	ctx := context.Background()
	s := openTestS3(t)
	sha, _, err := s.Put(ctx, strings.NewReader("kept"))
	testkit.Must(t, err)
	// What a process killed mid-upload leaves: an incomplete upload with
	// a part, and a finished temporary object not yet copied.
	id, err := s.core.NewMultipartUpload(ctx, s.bucket, "tmp/killed-upload", minio.PutObjectOptions{})
	testkit.Must(t, err)
	_, err = s.core.PutObjectPart(ctx, s.bucket, "tmp/killed-upload", id, 1, bytes.NewReader(genBytes(9, 1<<20)), 1<<20, minio.PutObjectPartOptions{})
	testkit.Must(t, err)
	_, err = s.client.PutObject(ctx, s.bucket, "tmp/killed-before-copy", strings.NewReader("tmp"), 3, minio.PutObjectOptions{})
	testkit.Must(t, err)
	// And a multipart copy (of a blob over 5 GiB) killed before completion.
	copyKey := blobKey(strings.Repeat("ab", 32))
	copyID, err := s.core.NewMultipartUpload(ctx, s.bucket, copyKey, minio.PutObjectOptions{})
	testkit.Must(t, err)
	// Not the store's: a sweep leaves them.
	otherID, err := s.core.NewMultipartUpload(ctx, s.bucket, "other/upload", minio.PutObjectOptions{})
	testkit.Must(t, err)
	_, err = s.client.PutObject(ctx, s.bucket, "other/object", strings.NewReader("x"), 1, minio.PutObjectOptions{})
	testkit.Must(t, err)

	all := holdings{
		blobs:   []string{"other/object", blobKey(sha)},
		tmp:     []string{"tmp/killed-before-copy"},
		uploads: []string{"other/upload " + otherID, copyKey + " " + copyID, "tmp/killed-upload " + id},
	}
	swept := holdings{blobs: all.blobs, uploads: all.uploads[:1]}
	time.Sleep(1100 * time.Millisecond) // S3 times are in whole seconds
	for _, tc := range []struct {
		olderThan   time.Duration
		wantRemoved int
		want        holdings
	}{
		{time.Hour, 0, all},
		{0, 3, swept},
		{0, 0, swept},
	} {
		n, err := s.Sweep(ctx, tc.olderThan)
		if err != nil || n != tc.wantRemoved {
			t.Errorf("Sweep(%v) = %d, %v; want %d removed", tc.olderThan, n, err, tc.wantRemoved)
		}
		h := s3Holdings(t, s.bucket)
		slices.Sort(h.blobs)
		slices.Sort(h.uploads)
		if !slices.Equal(h.blobs, tc.want.blobs) || !slices.Equal(h.tmp, tc.want.tmp) || !slices.Equal(h.uploads, tc.want.uploads) {
			t.Errorf("after Sweep(%v) the bucket holds\n%+v\nwant\n%+v", tc.olderThan, h, tc.want)
		}
	}
}

func TestOpenS3(t *testing.T) {
	ctx := context.Background()
	good := s3test.New(t) // sets the credentials
	u, err := url.Parse(good)
	testkit.Must(t, err)
	endpoint := u.Query().Get("endpoint")
	for _, tc := range []struct {
		name    string
		url     string
		noCreds bool
		want    string // in the error; "" for success
	}{
		{"existing bucket", good, false, ""},
		{"missing bucket", "s3://no-such-bucket?endpoint=" + endpoint + "&insecure=true&region=us-east-1", false, `bucket "no-such-bucket" does not exist at ` + endpoint},
		{"created bucket", "s3://created-bucket?endpoint=" + endpoint + "&insecure=true&region=us-east-1&create=true", false, ""},
		{"no endpoint", "s3://b?region=us-east-1", false, "endpoint=HOST:PORT is required"},
		{"no bucket", "s3://?endpoint=" + endpoint, false, "no bucket"},
		{"path after the bucket", "s3://b/dir?endpoint=" + endpoint, false, `unexpected path "/dir"`},
		{"unknown option", "s3://b?endpoint=" + endpoint + "&secure=false", false, `unknown option "secure"`},
		{"bad boolean", "s3://b?endpoint=" + endpoint + "&insecure=maybe", false, "insecure"},
		{"credentials in the URL", "s3://key:secret@b?endpoint=" + endpoint, false, "credentials do not belong in the URL"},
		{"no credentials", good, true, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{"wrong scheme", "file:///tmp", false, `scheme is "file"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.noCreds {
				t.Setenv("AWS_ACCESS_KEY_ID", "")
				t.Setenv("AWS_ACCESS_KEY", "")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "")
			}
			s, err := OpenS3(ctx, tc.url)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("OpenS3(%s): %v", tc.url, err)
				}
				if _, _, err := s.Put(ctx, strings.NewReader("x")); err != nil {
					t.Errorf("Put to %s: %v", tc.url, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("OpenS3(%s) = %v, want an error containing %q", tc.url, err, tc.want)
			}
		})
	}
}

func TestOpenBlobs(t *testing.T) {
	ctx := context.Background()
	s3url := s3test.New(t)
	endpoint := s3url[strings.Index(s3url, "?"):]
	dir := t.TempDir()
	for _, tc := range []struct {
		url  string
		want string // the store's type, or a part of the error
	}{
		{"file://" + dir, "*store.Dir"},
		{s3url, "*store.S3"},
		{"s3://missing" + endpoint, `bucket "missing" does not exist`},
		{"ftp://host/dir", `unknown scheme "ftp" (want file or s3)`},
		{"file://", "no directory"},
		{dir, "no scheme (want file://DIR or s3://BUCKET?endpoint=HOST:PORT)"},
	} {
		bs, err := OpenBlobs(ctx, tc.url)
		var got string
		if err != nil {
			got = err.Error()
		} else {
			got = fmt.Sprintf("%T", bs)
			sha, _, err := bs.Put(ctx, strings.NewReader("via OpenBlobs"))
			if ok, herr := bs.Has(ctx, sha); err != nil || !ok || herr != nil {
				t.Errorf("OpenBlobs(%s): Put %v, Has %v %v", tc.url, err, ok, herr)
			}
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("OpenBlobs(%s) = %s, want %s", tc.url, got, tc.want)
		}
	}
}

// Small ReadAts (a zip member's decompressor reads 4 KiB at a time) come
// from windows fetched ahead, one ranged GET a window, with the same bytes
// as the object's; reads that span windows, large reads and reads at the
// end return what io.ReaderAt promises.
func TestS3ReadAhead(t *testing.T) {
	ctx := context.Background()
	s, err := OpenS3(ctx, s3test.New(t))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 5*readAheadBytes+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	sha, _, err := s.Put(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	bl, err := s.Open(ctx, sha)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	b := bl.(*s3Blob)
	got, err := io.ReadAll(bufio.NewReaderSize(io.NewSectionReader(b, 0, b.Size()), 4096))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("sequential 4 KiB reads: %d bytes, %v; equal %v", len(got), err, bytes.Equal(got, data))
	}
	if n, most := b.gets.Load(), int64(len(data)/readAheadBytes+1); n > most {
		t.Errorf("%d ranged GETs for %d bytes read 4 KiB at a time, want at most %d", n, len(data), most)
	}
	for _, tc := range []struct {
		off, n int64
		eof    bool
	}{
		{readAheadBytes - 10, 100, false},           // spans two windows
		{3 * readAheadBytes, readAheadBytes, false}, // large: its own GET
		{int64(len(data)) - 50, 100, true},          // past the end
		{int64(len(data)) - 50, 50, false},          // to the end exactly
		{7, 1, false},
	} {
		p := make([]byte, tc.n)
		n, err := b.ReadAt(p, tc.off)
		want := min(tc.n, int64(len(data))-tc.off)
		if int64(n) != want || !bytes.Equal(p[:n], data[tc.off:tc.off+want]) || (err == io.EOF) != tc.eof || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d bytes, EOF %v", tc.n, tc.off, n, err, want, tc.eof)
		}
	}
}
