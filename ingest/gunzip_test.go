package ingest

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"kinetoscope/sampletraces"
)

// sampleGzipFiles returns every gzip trace of sampletraces/real and the
// public traces.
func sampleGzipFiles(t *testing.T) []string {
	t.Helper()
	dir, err := sampletraces.RealDir("eager")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(dir), "*", "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no real traces: %v", err)
	}
	return append(files, publicTraces(t)...)
}

// TestParallelGzipSamples reads every sample and public trace with the
// parallel reader forced on (3 workers, whatever the cores) and with
// klauspost's: the same trace, byte counts included.
func TestParallelGzipSamples(t *testing.T) {
	for _, p := range sampleGzipFiles(t) {
		want, err := ReadFile(p, Options{GzipWorkers: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p, Options{GzipWorkers: 3})
		if err != nil {
			t.Fatalf("parallel: %v", err)
		}
		if gm, wm := modelOf(got), modelOf(want); !reflect.DeepEqual(gm, wm) {
			t.Errorf("%s: the parallel reader's model differs%s", p, firstDiff(gm, wm))
		}
		if got.Counts.Bytes != want.Counts.Bytes || got.Counts.UncompressedBytes != want.Counts.UncompressedBytes {
			t.Errorf("%s: read %d bytes (%d uncompressed), klauspost %d (%d)", p,
				got.Counts.Bytes, got.Counts.UncompressedBytes, want.Counts.Bytes, want.Counts.UncompressedBytes)
		}
	}
}

// TestParallelGzipDir reads a profile directory with the parallel reader
// forced on: the same set as with klauspost's.
func TestParallelGzipDir(t *testing.T) {
	dir, err := sampletraces.RealDir("nccl_simple")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Open(dir, Options{GzipWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Open(dir, Options{GzipWorkers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Traces) != len(want.Traces) || len(got.Traces) < 2 || len(got.Errors) != 0 {
		t.Fatalf("%d traces, %d errors; klauspost: %d traces", len(got.Traces), len(got.Errors), len(want.Traces))
	}
	for i := range got.Traces {
		if !reflect.DeepEqual(modelOf(got.Traces[i]), modelOf(want.Traces[i])) {
			t.Errorf("%s: the parallel reader's model differs", got.Traces[i].Path)
		}
	}
}

// TestParallelGzipErrors checks that a damaged file fails with the
// parallel reader as with klauspost's, with the same error: the output
// before the damage is the same, and past it none.
func TestParallelGzipErrors(t *testing.T) {
	in, err := os.ReadFile(publicTrace(t, "hta-diff-control-a100.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	flip := append([]byte(nil), in...)
	flip[len(flip)/2] ^= 0x55
	crc := append([]byte(nil), in...)
	crc[len(crc)-8] ^= 1
	for _, c := range []struct {
		name string
		in   []byte
	}{{"truncated", in[:len(in)*3/4]}, {"bit flip", flip}, {"wrong CRC", crc}, {"trailer cut", in[:len(in)-4]},
		{"bad method", append([]byte{0x1f, 0x8b, 7}, in[3:]...)}, {"header only", in[:10]},
		{"reserved flag", append([]byte{0x1f, 0x8b, 8, 0x80}, in[4:]...)}, {"second member bad", append(append([]byte(nil), in...), 0x1f, 0x8b, 9)}} {
		p := filepath.Join(t.TempDir(), "bad.json.gz")
		if err := os.WriteFile(p, c.in, 0o644); err != nil {
			t.Fatal(err)
		}
		_, werr := ReadFile(p, Options{GzipWorkers: 1})
		_, gerr := ReadFile(p, Options{GzipWorkers: 3})
		if werr == nil || gerr == nil {
			t.Errorf("%s: klauspost: %v, parallel: %v; want both to fail", c.name, werr, gerr)
			continue
		}
		if gerr.Error() != werr.Error() {
			t.Errorf("%s: parallel: %v\nklauspost: %v", c.name, gerr, werr)
		}
	}
}

// TestGzipWorkers is the decision's table: the option where set, else
// the parallel reader only for a large file on more than two cores.
func TestGzipWorkers(t *testing.T) {
	procs := runtimeProcs()
	for _, c := range []struct {
		size    int64
		opt     Options
		sharing int
		want    int
	}{
		{1 << 30, Options{GzipWorkers: 1}, 1, 1},
		{1 << 10, Options{GzipWorkers: 5}, 1, 5},
		{1 << 10, Options{}, 1, 1},
		{0, Options{}, 1, 1},
		{1 << 30, Options{}, 1, cond(procs > 2, procs-1, 1)},
		{1 << 30, Options{}, 8, cond(procs/8 > 2, procs/8-1, 1)},
		{2 << 30, Options{}, 1, 1},
	} {
		if got := gzipWorkers(c.size, c.opt, c.sharing); got != c.want {
			t.Errorf("gzipWorkers(%d, %+v, %d) on %d cores = %d, want %d", c.size, c.opt, c.sharing, procs, got, c.want)
		}
	}
}

// cond returns a if ok, else b.
func cond(ok bool, a, b int) int {
	if ok {
		return a
	}
	return b
}

// runtimeProcs returns GOMAXPROCS.
func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// TestParallelGzipProgress checks the progress of a read with the
// parallel reader: compressed bytes that never go back, and at the end
// the file's size, as with klauspost's.
func TestParallelGzipProgress(t *testing.T) {
	p := publicTrace(t, "hta-diff-control-a100.json.gz")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		var got []Progress
		if _, err := ReadFile(p, Options{GzipWorkers: workers, Progress: func(pr Progress) { got = append(got, pr) }}); err != nil {
			t.Fatal(err)
		}
		if len(got) < 3 {
			t.Fatalf("%d workers: %d progress calls", workers, len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i].Bytes < got[i-1].Bytes || got[i].Bytes > st.Size() {
				t.Errorf("%d workers: progress %d bytes after %d (file %d)", workers, got[i].Bytes, got[i-1].Bytes, st.Size())
			}
		}
		if last := got[len(got)-1]; !last.Done || last.Bytes != st.Size() {
			t.Errorf("%d workers: last progress %+v, want done at %d bytes", workers, last, st.Size())
		}
	}
}

// TestParseWorkers is the decision's table: the option where set, else
// chunks only for a large text (a gzip file counting as parseGzipRatio
// times its size) on more than two cores: on 2 and 16 cores, and on the
// cores the test has.
func TestParseWorkers(t *testing.T) {
	for _, n := range []int{2, 16, runtimeProcs()} {
		old := runtime.GOMAXPROCS(n)
		parseWorkersTable(t)
		runtime.GOMAXPROCS(old)
	}
}

// parseWorkersTable checks parseWorkers on the cores the process has.
func parseWorkersTable(t *testing.T) {
	procs := runtimeProcs()
	many := cond(procs > 2, procs-1, 1)
	for _, c := range []struct {
		size    int64
		gz      bool
		opt     Options
		sharing int
		want    int
	}{
		{1 << 30, false, Options{ParseWorkers: 1}, 1, 1},
		{1 << 10, false, Options{ParseWorkers: 5}, 1, 5},
		{1 << 10, false, Options{}, 1, 1},
		{0, false, Options{}, 1, 1},
		{minParallelParse - 1, false, Options{}, 1, 1},
		{minParallelParse, false, Options{}, 1, many},
		{minParallelParse / parseGzipRatio, true, Options{}, 1, many},
		{minParallelParse/parseGzipRatio - 1, true, Options{}, 1, 1},
		{1 << 30, true, Options{}, 8, cond(procs/8 > 2, procs/8-1, 1)},
		{8 << 30, false, Options{}, 1, many},
	} {
		if got := parseWorkers(c.size, c.gz, c.opt, c.sharing); got != c.want {
			t.Errorf("parseWorkers(%d, %v, %+v, %d) on %d cores = %d, want %d", c.size, c.gz, c.opt, c.sharing, procs, got, c.want)
		}
	}
}
