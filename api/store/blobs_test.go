package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/s3test"
)

// blobStore is what the shared suite tests: the methods of Blobs that
// both Dir and S3 have.
type blobStore interface {
	Put(ctx context.Context, r io.Reader) (sha string, size int64, err error)
	Open(ctx context.Context, sha string) (Blob, error)
	Has(ctx context.Context, sha string) (bool, error)
	Delete(ctx context.Context, sha string) error
}

// holdings is everything a blob store holds: its blobs' keys
// (sha256/ab/abc...), its temporary files or objects, and its incomplete
// multipart uploads (key and id).
type holdings struct {
	blobs, tmp, uploads []string
}

// blobBackend opens an empty store of one kind for a test, with a
// function that lists what the store holds.
type blobBackend struct {
	name string
	open func(tb testing.TB) (blobStore, func(tb testing.TB) holdings)
}

// blobBackends are the stores the shared suite runs on.
var blobBackends = []blobBackend{
	{"Dir", func(tb testing.TB) (blobStore, func(testing.TB) holdings) {
		root := tb.TempDir()
		d, err := OpenDir(root)
		if err != nil {
			tb.Fatal(err)
		}
		return d, func(tb testing.TB) holdings { return dirHoldings(tb, root) }
	}},
	{"S3", func(tb testing.TB) (blobStore, func(testing.TB) holdings) {
		s := openTestS3(tb)
		return s, func(tb testing.TB) holdings { return s3Holdings(tb, s.bucket) }
	}},
}

// openTestS3 returns an S3 store over a fresh bucket of the test server.
func openTestS3(tb testing.TB) *S3 {
	tb.Helper()
	s, err := OpenS3(context.Background(), s3test.New(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// dirHoldings lists the files of a Dir.
func dirHoldings(tb testing.TB, root string) holdings {
	tb.Helper()
	var h holdings
	for _, sub := range []string{"sha256", "tmp"} {
		err := filepath.WalkDir(filepath.Join(root, sub), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if sub == "tmp" {
				h.tmp = append(h.tmp, filepath.ToSlash(rel))
			} else {
				h.blobs = append(h.blobs, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return h
}

// s3Holdings lists a bucket of the test server through a client of its
// own (not the store's, which a test may have made fail).
func s3Holdings(tb testing.TB, bucket string) holdings {
	tb.Helper()
	c, err := s3test.Client()
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	var h holdings
	for o := range c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			tb.Fatalf("list %s: %v", bucket, o.Err)
		}
		if len(o.Key) > len(s3TmpPrefix) && o.Key[:len(s3TmpPrefix)] == s3TmpPrefix {
			h.tmp = append(h.tmp, o.Key)
		} else {
			h.blobs = append(h.blobs, o.Key)
		}
	}
	for u := range c.ListIncompleteUploads(ctx, bucket, "", true) {
		if u.Err != nil {
			tb.Fatalf("list uploads of %s: %v", bucket, u.Err)
		}
		h.uploads = append(h.uploads, u.Key+" "+u.UploadID)
	}
	return h
}

// genReader streams size pseudo-random bytes of a seed without holding
// them, hashing what it produced.
type genReader struct {
	rng  *rand.ChaCha8
	left int64
	hash interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func newGenReader(seed uint64, size int64) *genReader {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	return &genReader{rng: rand.NewChaCha8(s), left: size, hash: sha256.New()}
}

// Read implements io.Reader.
func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left)]
	g.rng.Read(p)
	g.hash.Write(p)
	g.left -= int64(len(p))
	return len(p), nil
}

// sha returns the hash of what the reader produced.
func (g *genReader) sha() string { return hex.EncodeToString(g.hash.Sum(nil)) }

// genBytes returns size pseudo-random bytes.
func genBytes(seed uint64, size int) []byte {
	b, _ := io.ReadAll(newGenReader(seed, int64(size)))
	return b
}

func shaOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// blobKey is a blob's key in both stores.
func blobKey(sha string) string { return "sha256/" + sha[:2] + "/" + sha }

var errReset = errors.New("connection reset")

// failAfter returns n bytes of r, then errReset: an interrupted upload.
func failAfter(r io.Reader, n int64) io.Reader {
	return io.MultiReader(io.LimitReader(r, n), errorReader{errReset})
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// cancelAfter cancels its context once n bytes were read through it.
type cancelAfter struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= int64(n); c.n <= 0 {
		c.cancel()
	}
	return n, err
}

func TestBlobsPutOpen(t *testing.T) {
	big := genBytes(1, 40<<20+12345) // three parts of S3's 16 MiB
	for _, be := range blobBackends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			bs, held := be.open(t)
			for _, tc := range []struct {
				name string
				data []byte
			}{
				{"empty", nil},
				{"hello", []byte("hello")},
				{"40MB", big},
			} {
				sha, n, err := bs.Put(ctx, bytes.NewReader(tc.data))
				if err != nil || n != int64(len(tc.data)) || sha != shaOf(tc.data) {
					t.Fatalf("Put %s: %s %d %v, want %s %d", tc.name, sha, n, err, shaOf(tc.data), len(tc.data))
				}
				if ok, err := bs.Has(ctx, sha); !ok || err != nil {
					t.Errorf("Has %s: %v %v", tc.name, ok, err)
				}
				b, err := bs.Open(ctx, sha)
				if err != nil {
					t.Fatalf("Open %s: %v", tc.name, err)
				}
				if b.Size() != int64(len(tc.data)) {
					t.Errorf("Size %s: %d, want %d", tc.name, b.Size(), len(tc.data))
				}
				size := len(tc.data)
				for _, ra := range []struct{ off, len int }{
					{0, 10}, {size / 2, 100000}, {size - 5, 10}, {size, 1}, {1, size - 1},
				} {
					if ra.off < 0 || ra.len <= 0 {
						continue // too small a blob for this read
					}
					want := max(0, min(ra.len, size-ra.off)) // fewer than asked: io.EOF
					p := make([]byte, ra.len)
					n, err := b.ReadAt(p, int64(ra.off))
					// io.ReaderAt: fewer bytes than asked for come with
					// io.EOF; all of them, up to the end, with nil or io.EOF.
					wantErr := err == nil && want == ra.len || err == io.EOF && ra.off+ra.len >= size
					if n != want || !wantErr || !bytes.Equal(p[:n], tc.data[min(ra.off, size):min(ra.off, size)+n]) {
						t.Errorf("%s: ReadAt(%d bytes at %d) = %d, %v; want %d, %v and the blob's bytes", tc.name, ra.len, ra.off, n, err, want, map[bool]string{true: "io.EOF", false: "nil or io.EOF"}[want < ra.len])
					}
				}
				// A sequential read after ReadAt starts at the beginning.
				got, err := io.ReadAll(b)
				if err != nil || !bytes.Equal(got, tc.data) {
					t.Errorf("%s: read %d bytes (%v), want %d equal bytes", tc.name, len(got), err, len(tc.data))
				}
				if err := b.Close(); err != nil {
					t.Errorf("Close %s: %v", tc.name, err)
				}
			}
			// The same content again: the same blob, stored once.
			if sha, _, err := bs.Put(ctx, bytes.NewReader([]byte("hello"))); err != nil || sha != shaOf([]byte("hello")) {
				t.Fatalf("second Put of hello: %s %v", sha, err)
			}
			h := held(t)
			want := []string{blobKey(shaOf(nil)), blobKey(shaOf([]byte("hello"))), blobKey(shaOf(big))}
			slices.Sort(want)
			slices.Sort(h.blobs)
			if !slices.Equal(h.blobs, want) || len(h.tmp) != 0 || len(h.uploads) != 0 {
				t.Errorf("store holds %+v, want blobs %v only", h, want)
			}

			missing := shaOf([]byte("never stored"))
			for _, sha := range []string{missing, "../../etc/passwd", "", "zz" + missing[2:]} {
				if _, err := bs.Open(ctx, sha); !errors.Is(err, ErrNotFound) {
					t.Errorf("Open %q: %v, want ErrNotFound", sha, err)
				}
				if ok, err := bs.Has(ctx, sha); ok || err != nil {
					t.Errorf("Has %q: %v %v, want false", sha, ok, err)
				}
				if err := bs.Delete(ctx, sha); err != nil {
					t.Errorf("Delete %q: %v", sha, err)
				}
			}
			for _, data := range [][]byte{nil, []byte("hello"), big} {
				sha := shaOf(data)
				testkit.Must(t, bs.Delete(ctx, sha))
				if _, err := bs.Open(ctx, sha); !errors.Is(err, ErrNotFound) {
					t.Errorf("Open after Delete: %v, want ErrNotFound", err)
				}
				if ok, err := bs.Has(ctx, sha); ok || err != nil {
					t.Errorf("Has after Delete: %v %v", ok, err)
				}
				testkit.Must(t, bs.Delete(ctx, sha))
			}
			if h := held(t); len(h.blobs)+len(h.tmp)+len(h.uploads) != 0 {
				t.Errorf("store holds %+v after deleting every blob", h)
			}
		})
	}
}

func TestBlobsInterruptedPut(t *testing.T) {
	for _, be := range blobBackends {
		t.Run(be.name, func(t *testing.T) {
			bs, held := be.open(t)
			for _, tc := range []struct {
				name    string
				reader  func(cancel context.CancelFunc) io.Reader
				wantErr error
			}{
				{"reader error at once", func(context.CancelFunc) io.Reader { return errorReader{errReset} }, errReset},
				{"reader error after 5 bytes", func(context.CancelFunc) io.Reader { return failAfter(newGenReader(2, 1<<30), 5) }, errReset},
				{"reader error after 40MB", func(context.CancelFunc) io.Reader { return failAfter(newGenReader(3, 1<<30), 40<<20) }, errReset},
				{"context cancelled after 20MB", func(cancel context.CancelFunc) io.Reader {
					return &cancelAfter{r: newGenReader(4, 1<<30), n: 20 << 20, cancel: cancel}
				}, context.Canceled},
			} {
				ctx, cancel := context.WithCancel(context.Background())
				sha, _, err := bs.Put(ctx, tc.reader(cancel))
				cancel()
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("%s: Put = %q, %v; want an error wrapping %v", tc.name, sha, err, tc.wantErr)
				}
				if h := held(t); len(h.blobs)+len(h.tmp)+len(h.uploads) != 0 {
					t.Errorf("%s: store holds %+v after the failed Put, want nothing", tc.name, h)
				}
			}
		})
	}
}

func TestBlobsConcurrentPut(t *testing.T) {
	data := genBytes(5, 20<<20)
	for _, be := range blobBackends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			bs, held := be.open(t)
			var wg sync.WaitGroup
			shas := make([]string, 2)
			errs := make([]error, 2)
			for i := range shas {
				wg.Go(func() { shas[i], _, errs[i] = bs.Put(ctx, bytes.NewReader(data)) })
			}
			wg.Wait()
			for i := range shas {
				if errs[i] != nil || shas[i] != shaOf(data) {
					t.Errorf("Put %d: %s %v, want %s", i, shas[i], errs[i], shaOf(data))
				}
			}
			if h := held(t); !slices.Equal(h.blobs, []string{blobKey(shaOf(data))}) || len(h.tmp)+len(h.uploads) != 0 {
				t.Errorf("store holds %+v, want one blob", h)
			}
			b, err := bs.Open(ctx, shaOf(data))
			testkit.Must(t, err)
			defer b.Close()
			if got, err := io.ReadAll(b); err != nil || !bytes.Equal(got, data) {
				t.Errorf("read back %d bytes, %v", len(got), err)
			}
		})
	}
}

// TestBlobsLargePut streams 300 MB through Put and checks that the heap
// stays far below that (the upload holds one part, not the file) and that
// the blob reads back with the same hash.
func TestBlobsLargePut(t *testing.T) {
	if testing.Short() {
		t.Log("short: 30 MB instead of 300 MB")
	}
	const limit = 80 << 20 // heap growth allowed, far below the size
	size := int64(300 << 20)
	if testing.Short() {
		size = 30 << 20
	}
	for _, be := range blobBackends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			bs, held := be.open(t)
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapInuse
			done := make(chan struct{})
			peak := make(chan uint64)
			go func() {
				var top uint64
				var ms runtime.MemStats
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					runtime.ReadMemStats(&ms)
					top = max(top, ms.HeapInuse)
					select {
					case <-done:
						peak <- top
						return
					case <-tick.C:
					}
				}
			}()
			g := newGenReader(6, size)
			t0 := time.Now()
			sha, n, err := bs.Put(ctx, g)
			elapsed := time.Since(t0)
			close(done)
			top := <-peak
			if err != nil || n != size || sha != g.sha() {
				t.Fatalf("Put: %s %d %v, want %s %d", sha, n, err, g.sha(), size)
			}
			growth := int64(top) - int64(base)
			t.Logf("Put %d MB in %s: heap in use grew by %.1f MB at most", size>>20, elapsed.Round(time.Millisecond), float64(growth)/(1<<20))
			if growth > limit {
				t.Errorf("heap in use grew by %d MB during a %d MB Put, want at most %d MB", growth>>20, size>>20, limit>>20)
			}
			b, err := bs.Open(ctx, sha)
			testkit.Must(t, err)
			defer b.Close()
			h := sha256.New()
			if m, err := io.Copy(h, b); err != nil || m != size || hex.EncodeToString(h.Sum(nil)) != sha {
				t.Errorf("read back %d bytes (%v) hashing to %x, want %d bytes hashing to %s", m, err, h.Sum(nil), size, sha)
			}
			if h := held(t); len(h.blobs) != 1 || len(h.tmp)+len(h.uploads) != 0 {
				t.Errorf("store holds %+v, want one blob", h)
			}
		})
	}
}

// benchmarkPut measures Put's throughput on 256 MB streams.
func benchmarkPut(b *testing.B, be blobBackend) {
	const size = 256 << 20
	bs, _ := be.open(b)
	ctx := context.Background()
	b.SetBytes(size)
	for i := uint64(0); b.Loop(); i++ {
		// A new content each time: a repeated one would skip the copy.
		g := newGenReader(100+i, size)
		if sha, _, err := bs.Put(ctx, g); err != nil || sha != g.sha() {
			b.Fatalf("Put: %s %v", sha, err)
		}
	}
}

// BenchmarkS3Put is Put's throughput to the test S3 server (versitygw,
// POSIX backend, on this machine), 256 MB an upload.
func BenchmarkS3Put(b *testing.B) { benchmarkPut(b, blobBackends[1]) }

// BenchmarkDirPut is BenchmarkS3Put's baseline: the same uploads to Dir.
func BenchmarkDirPut(b *testing.B) { benchmarkPut(b, blobBackends[0]) }
