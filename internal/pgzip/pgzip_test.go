package pgzip

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// sequentialGunzip is the reference: klauspost's reader over the whole
// file.
func sequentialGunzip(in []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// parallelGunzip reads in with a Reader of opt.
func parallelGunzip(in []byte, opt Options) ([]byte, error) {
	b, _, err := parallelStats(in, opt)
	return b, err
}

// parallelStats reads in with a Reader of opt, and says how.
func parallelStats(in []byte, opt Options) ([]byte, Stats, error) {
	r, err := NewReader(in, opt)
	if err != nil {
		return nil, Stats{}, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return b, r.Stats(), err
}

// sampleFiles returns every gzip sample and public trace of the
// repository.
func sampleFiles(tb testing.TB) []string {
	var files []string
	for _, pat := range []string{"../../sampletraces/real/*/*.gz", "../../sampletraces/public/*.gz", "../../sampletraces/*/*.gz"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		tb.Fatal("no sample traces found")
	}
	return files
}

// TestSamples decompresses every sample and public trace with several
// chunk sizes and worker counts, as klauspost does.
func TestSamples(t *testing.T) {
	for _, path := range sampleFiles(t) {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sequentialGunzip(in)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, opt := range []Options{{Workers: 1, ChunkSize: 1 << 20}, {Workers: 3, ChunkSize: 4096}, {Workers: 2, ChunkSize: 65536}} {
			got, st, err := parallelStats(in, opt)
			if err != nil {
				t.Errorf("%s %+v: %v", path, opt, err)
				continue
			}
			t.Logf("%s %+v: %+v", filepath.Base(path), opt, st)
			// Chunks of 64 KiB hold several blocks: most must be found.
			if opt.ChunkSize == 65536 && st.Chunks > 4 && st.Parallel < st.Chunks*3/4 {
				t.Errorf("%s %+v: only %d of %d chunks decoded in parallel (%+v)", path, opt, st.Parallel, st.Chunks, st)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %+v: %d bytes, want %d (first difference at %d)", path, opt, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

// firstDiff returns the first index where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// benchInput returns the largest public trace, compressed.
func benchInput(b *testing.B) []byte {
	in, err := os.ReadFile("../../sampletraces/public/hta-diff-control-a100.json.gz")
	if err != nil {
		b.Fatal(err)
	}
	return in
}

// BenchmarkGunzip is the baseline: klauspost's reader.
func BenchmarkGunzip(b *testing.B) {
	in := benchInput(b)
	want, _ := sequentialGunzip(in)
	b.SetBytes(int64(len(want)))
	for b.Loop() {
		if _, err := sequentialGunzip(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReader is the parallel reader with 1, 2 and 4 workers.
func BenchmarkReader(b *testing.B) {
	in := benchInput(b)
	want, _ := sequentialGunzip(in)
	for _, w := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			b.SetBytes(int64(len(want)))
			for b.Loop() {
				if _, err := parallelGunzip(in, Options{Workers: w}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCloseEarly closes readers at every stage of a read: Close returns
// (every goroutine ends) and a later Read fails or ends.
func TestCloseEarly(t *testing.T) {
	in, err := os.ReadFile("../../sampletraces/public/hta-diff-control-a100.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 100 << 10, 5 << 20} {
		r, err := NewReader(in, Options{Workers: 4, ChunkSize: 32 << 10})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			t.Fatalf("after %d bytes: %v", n, err)
		}
		r.Close()
		r.Close()
	}
}
