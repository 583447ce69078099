package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// sampleTraces returns every real sample's and public trace's path: the
// trace files of every directory of sampletraces/real.
func sampleTraces(t *testing.T) []string {
	t.Helper()
	dir, err := sampletraces.RealDir(sampletraces.RealVariants()[0])
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(dir), "*", "*.json.gz"))
	if err != nil || len(files) < len(sampletraces.RealVariants()) {
		t.Fatalf("%d traces under %s: %v", len(files), filepath.Dir(dir), err)
	}
	return append(publicTraces(t), files...)
}

// readWith reads text (named name) in blocks of bs bytes, its events
// parsed in chunks by pool's workers when pool is not nil (and then, for
// an even bs, its size known, read at offsets on several goroutines),
// sequentially otherwise.
func readWith(text []byte, name string, bs int, pool *parsePool) (*Trace, error) {
	opt := Options{ParseWorkers: 1}
	var size int64
	if pool != nil {
		opt.ParseWorkers, opt.pool = pool.workers, pool
		if bs%2 == 0 { // its size known: read at offsets on several goroutines
			size = int64(len(text))
		}
	}
	return readTrace(bytes.NewReader(text), name, size, opt, bs)
}

// traceDiff names the first field of two traces that differs, or "".
func traceDiff(a, b *Trace) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := range va.NumField() {
		if va.Type().Field(i).Name == "Shapes" { // the ops, not how their memory was handed out
			sa, sb := a.Shapes, b.Shapes
			if !reflect.DeepEqual(sa.Ops, sb.Ops) || !reflect.DeepEqual(sa.Types, sb.Types) || sa.Inputs != sb.Inputs || sa.Dims != sb.Dims {
				return "Shapes"
			}
			continue
		}
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return va.Type().Field(i).Name
		}
	}
	return ""
}

// oneLineLayout writes doc as compact JSON on a single line.
func oneLineLayout(doc []byte) []byte {
	return relayout(doc, func(int, byte) string { return "" })
}

// TestParallelParseSameTrace reads every real sample and public trace, in
// Kineto's layout (one member a line), as compact JSON with one event a
// line, as compact JSON on one line and with random whitespace between
// its tokens (tabs, line breaks), with its events parsed in chunks
// of random sizes on several workers, and checks that the whole Trace is
// the sequential parse's, field for field, and that most of the text was
// indeed parsed in chunks.
func TestParallelParseSameTrace(t *testing.T) {
	seed := uint64(len(t.Name()))
	r := rand.New(rand.NewPCG(seed, 28))
	for _, p := range sampleTraces(t) {
		kineto := gunzipFile(t, p)
		name := filepath.Base(strings.TrimSuffix(p, ".gz"))
		layouts := []struct {
			name string
			text []byte
		}{{"Kineto", kineto}, {"compact, one event a line", compactLayout(kineto)}, {"compact, one line", oneLineLayout(kineto)},
			{"random whitespace", randomLayout(kineto, r.Uint64())}}
		for _, l := range layouts {
			want, err := readWith(l.text, name, blockSize, nil)
			if err != nil {
				t.Fatalf("%s, %s layout: %v", p, l.name, err)
			}
			for range 2 {
				bs, workers := 1024+r.IntN(128<<10), 2+r.IntN(3)
				pool := newParsePool(workers, nil)
				got, err := readWith(l.text, name, bs, pool)
				pool.close()
				what := fmt.Sprintf("%s, %s layout, %d-byte chunks, %d workers", filepath.Base(p), l.name, bs, workers)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if d := traceDiff(got, want); d != "" {
					t.Errorf("%s: %s differs from the sequential parse's", what, d)
				}
				if share := float64(pool.stats.Bytes.Load()) / float64(len(l.text)); len(l.text) > 8*bs && share < 0.5 {
					t.Errorf("%s: only %.0f%% of the text was parsed in chunks", what, 100*share)
				}
			}
		}
	}
}

// TestParallelParseFalseBoundaries reads events whose text holds what
// looks like a boundary between events ("}, {" in strings and between
// objects nested in args), with a long top-level value after the events
// that holds more of them, in tiny chunks: the chunks cut there stop
// early, the text from there is read sequentially, and the Trace is the
// sequential parse's. Events of more categories than the builder counts
// by name check that the chunks' counts come in the order of the text.
func TestParallelParseFalseBoundaries(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"schemaVersion": 1, "traceEvents": [`)
	for i := range 400 {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, `{"ph": "X", "cat": "kernel", "name": "k<%d>}, {x", "pid": 0, "tid": 7, "ts": %d.5, "dur": 2, "args": {"correlation": %d, "stream": 7}}`, i, i, i)
		case 1:
			fmt.Fprintf(&b, `{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": %d, "dur": 1, "args": {"correlation": %d, "x": [{"a": 1}, {"b": "}, {"}, {"c": [{}, {}]}]}}`, i, i-1)
		case 2:
			fmt.Fprintf(&b, `{"name": "thread_name", "ph": "M", "pid": 1, "tid": %d, "args": {"name": "t}, {%d"}}`, i, i)
		case 3:
			fmt.Fprintf(&b, `{"ph":"X","cat":"user_annotation","name":"execute_model},{","pid":1,"tid":1,"ts":%d,"dur":3,"args":{"a":[{"b":{}},{"c":1}]}}`, i)
		}
	}
	for i := range 1300 { // categories of no known kind: more than the builder counts by name
		fmt.Fprintf(&b, ",\n  {\"ph\": \"X\", \"cat\": \"c%d\", \"name\": \"x\", \"pid\": 0, \"tid\": 0, \"ts\": 1, \"dur\": 1}", i%1200)
	}
	b.WriteString("],\n  \"deviceProperties\": [")
	for i := range 200 {
		if i > 0 {
			b.WriteString("}, ")
		}
		fmt.Fprintf(&b, `{"id": %d, "name": "GPU}, {"`, i)
	}
	b.WriteString("}],\n  \"traceName\": \"x\"\n}")
	text := []byte(b.String())
	want, err := readWith(text, "false.json", blockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want.GPU.Len() != 100 || want.Launches.Len() != 100 || len(want.Meta.Devices) != 200 || len(want.Counts.ByCategory) < maxCategories {
		t.Fatalf("the sequential parse kept %d kernels, %d launches, %d devices, %d categories",
			want.GPU.Len(), want.Launches.Len(), len(want.Meta.Devices), len(want.Counts.ByCategory))
	}
	for _, bs := range []int{97, 256, 1000, 4096, 9000} {
		pool := newParsePool(3, nil)
		got, err := readWith(text, "false.json", bs, pool)
		pool.close()
		if err != nil {
			t.Fatalf("%d-byte chunks: %v", bs, err)
		}
		if d := traceDiff(got, want); d != "" {
			t.Errorf("%d-byte chunks: %s differs from the sequential parse's", bs, d)
		}
		if pool.stats.Stopped.Load() == 0 || pool.stats.Chunks.Load() < 2 {
			t.Errorf("%d-byte chunks: %d chunks built, %d stopped early: the test does not test the resync", bs, pool.stats.Chunks.Load(), pool.stats.Stopped.Load())
		}
	}
}

// TestParallelParseErrors checks that a trace cut short or broken at a
// random place gives the sequential parse's error (byte offset and all)
// when parsed in chunks.
func TestParallelParseErrors(t *testing.T) {
	text := gunzipFile(t, realTraces(t, "eager")[0])
	r := rand.New(rand.NewPCG(2, 28))
	for range 12 {
		at := len(text)/8 + r.IntN(len(text)*7/8)
		cases := map[string][]byte{
			"cut":     text[:at],
			"garbage": append(append(append([]byte{}, text[:at]...), `"]]}x`...), text[at:]...),
		}
		for what, bad := range cases {
			_, want := readWith(bad, "bad.json", blockSize, nil)
			if want == nil {
				continue // garbage in a string
			}
			pool := newParsePool(2, nil)
			_, got := readWith(bad, "bad.json", 8192, pool)
			pool.close()
			if got == nil || got.Error() != want.Error() {
				t.Errorf("%s at %d: parsed in chunks %v; sequentially %v", what, at, got, want)
			}
		}
	}
}

// TestParallelParseSharedPool reads a directory of ranks four files at a
// time, their events parsed in chunks by one pool the files share, and
// checks that each trace is the one read alone and in order, and that
// the pool parsed chunks of them.
func TestParallelParseSharedPool(t *testing.T) {
	dir := t.TempDir()
	paths := append(realTraces(t, "eager"), realTraces(t, "nccl_simple")...)
	paths = append(paths, publicTrace(t, "hta-diff-control-a100.json.gz"))
	var found []dirEntry
	for _, p := range paths {
		text := gunzipFile(t, p)
		dst := filepath.Join(dir, strings.TrimSuffix(filepath.Base(p), ".gz"))
		if err := os.WriteFile(dst, text, 0o644); err != nil {
			t.Fatal(err)
		}
		found = append(found, dirEntry{path: dst, read: true, open: localSource(dst, 0).Open})
	}
	pool := newParsePool(3, nil)
	defer pool.close()
	c := &collector{set: &Set{Path: dir}, many: true, opt: Options{ParseWorkers: 3, pool: pool}}
	c.readFiles(found, 4)
	for _, e := range found {
		if e.err != nil {
			t.Fatalf("%s: %v", e.path, e.err)
		}
		want, err := ReadFile(e.path, Options{ParseWorkers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d := traceDiff(e.trace, want); d != "" {
			t.Errorf("%s: %s differs from the sequential parse's", e.path, d)
		}
	}
	if pool.stats.Chunks.Load() < int64(len(found)) {
		t.Errorf("the shared pool built %d chunks of %d files", pool.stats.Chunks.Load(), len(found))
	}
}

// TestParallelParseBudgetAndProgress checks that a budget stops a read
// whose events are parsed in chunks with a *BudgetError, as it stops the
// parse in order, and that the progress of such a read ends at the
// trace's own counts.
func TestParallelParseBudgetAndProgress(t *testing.T) {
	text := testkit.DistinctKernels(60000)
	full, err := readWith(text, "probe.json", blockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	need := Estimate(full.KeptEvents(), int64(full.Strings.Len()), 1)
	for _, limit := range []int64{need / 2, need} {
		pool := newParsePool(3, nil)
		b := &Budget{Limit: limit}
		var last Progress
		opt := Options{Budget: b, ParseWorkers: 3, pool: pool, Progress: func(p Progress) { last = p }}
		tr, err := readTrace(bytes.NewReader(text), "probe.json", int64(len(text)), opt, 64<<10)
		pool.close()
		var be *BudgetError
		switch {
		case limit < need && !errors.As(err, &be):
			t.Errorf("budget %d of %d: %v, want a *BudgetError", limit, need, err)
		case limit >= need && err != nil:
			t.Errorf("budget %d of %d: %v", limit, need, err)
		case limit >= need && (!last.Done || last.Events != full.Counts.Events || traceDiff(tr, full) != ""):
			t.Errorf("budget %d of %d: last progress %+v, %s differs; want %d events", limit, need, last, traceDiff(tr, full), full.Counts.Events)
		}
		if pool.stats.Chunks.Load() == 0 {
			t.Errorf("budget %d: no chunk built", limit)
		}
	}
}
