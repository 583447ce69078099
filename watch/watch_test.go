package watch

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// sample is one real rank file: its compressed and its JSON bytes.
type sample struct {
	gz, json []byte
}

// loadSamples reads the real eager run's two rank files.
func loadSamples(t *testing.T) [2]sample {
	t.Helper()
	dir := testkit.Real(t, "eager")
	names, err := filepath.Glob(filepath.Join(dir, "*rank[01].*.pt.trace.json.gz"))
	if err != nil || len(names) != 2 {
		t.Fatalf("eager rank files: %v %v", names, err)
	}
	var out [2]sample
	for i, n := range names {
		gz, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		js, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = sample{gz: gz, json: js}
	}
	return out
}

// step is one thing the writer does.
type step struct {
	name  string // file name in the directory
	rank  int    // which sample
	plain bool   // write the JSON, not the gzip
	// compress writes name+".gz" after name, slowly, then removes name.
	compress bool
	// cut writes only this fraction of the file and leaves it.
	cut   float64
	pause time.Duration // before the step
}

// writer writes steps into dir slowly, recording which files are done.
type writer struct {
	dir     string
	samples [2]sample
	mu      sync.Mutex
	done    map[string]bool // paths written to their last byte (or cut)
}

// isDone reports whether the writer has finished with path.
func (w *writer) isDone(p string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done[p]
}

func (w *writer) markDone(p string) {
	w.mu.Lock()
	w.done[p] = true
	w.mu.Unlock()
}

// run does every step; it reports the first error on errc.
func (w *writer) run(steps []step, errc chan<- error) {
	for _, s := range steps {
		time.Sleep(s.pause)
		if err := w.do(s); err != nil {
			errc <- err
			return
		}
	}
	errc <- nil
}

func (w *writer) do(s step) error {
	data := w.samples[s.rank].gz
	if s.plain {
		data = w.samples[s.rank].json
	}
	if s.cut > 0 {
		data = data[:int(float64(len(data))*s.cut)]
	}
	p := filepath.Join(w.dir, s.name)
	if err := slowWrite(p, data); err != nil {
		return err
	}
	w.markDone(p)
	if !s.compress {
		return nil
	}
	if err := slowWrite(p+".gz", w.samples[s.rank].gz); err != nil {
		return err
	}
	w.markDone(p + ".gz")
	return os.Remove(p)
}

// slowWrite writes data to p in chunks with pauses longer than the
// watcher's interval, so that it sees the file stop and go on.
func slowWrite(p string, data []byte) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	const chunks = 8
	n := (len(data) + chunks - 1) / chunks
	for i := 0; i < len(data); i += n {
		if _, err := f.Write(data[i:min(i+n, len(data))]); err != nil {
			f.Close()
			return err
		}
		time.Sleep(40 * time.Millisecond)
	}
	return f.Close()
}

// wantSet is a set the watcher must report.
type wantSet struct {
	files     []string // base names, by rank
	missing   []int
	truncated []string
}

func TestWatch(t *testing.T) {
	const (
		r0 = "dp0_tp0_rank0.111.pt.trace.json"
		r1 = "dp0_tp1_rank1.222.pt.trace.json"
	)
	tests := []struct {
		name  string
		steps []step
		want  []wantSet
	}{
		{
			name: "json compressed then removed, second rank long after",
			steps: []step{
				{name: r0, rank: 0, plain: true, compress: true},
				{name: r1 + ".gz", rank: 1, pause: 300 * time.Millisecond},
			},
			want: []wantSet{{files: []string{r0 + ".gz", r1 + ".gz"}}},
		},
		{
			name: "second rank left truncated",
			steps: []step{
				{name: r0 + ".gz", rank: 0},
				{name: r1 + ".gz", rank: 1, cut: 0.6},
			},
			want: []wantSet{{files: []string{r0 + ".gz"}, missing: []int{1}, truncated: []string{r1 + ".gz"}}},
		},
		{
			name: "plain json truncated",
			steps: []step{
				{name: r0, rank: 0, plain: true, cut: 0.5},
				{name: r1, rank: 1, plain: true},
			},
			want: []wantSet{{files: []string{r1}, missing: []int{0}, truncated: []string{r0}}},
		},
		{
			name: "second profile in the same directory",
			steps: []step{
				{name: r0 + ".gz", rank: 0},
				{name: r1 + ".gz", rank: 1},
				{name: "dp0_tp0_rank0.333.pt.trace.json.gz", rank: 0, pause: 100 * time.Millisecond},
				{name: "dp0_tp1_rank1.444.pt.trace.json.gz", rank: 1},
			},
			want: []wantSet{
				{files: []string{r0 + ".gz", r1 + ".gz"}},
				{files: []string{"dp0_tp0_rank0.333.pt.trace.json.gz", "dp0_tp1_rank1.444.pt.trace.json.gz"}},
			},
		},
	}
	samples := loadSamples(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			wr := &writer{dir: dir, samples: samples, done: map[string]bool{}}
			got := watchWhile(t, wr, tt.steps, len(tt.want))
			checkSets(t, dir, got, tt.want)
		})
	}
}

// watchWhile runs the writer and polls a watcher of its directory until it
// has reported n sets after the writer finished, or a generous deadline.
func watchWhile(t *testing.T, wr *writer, steps []step, n int) []*SetReport {
	t.Helper()
	var bad []string
	w := New(wr.dir, Options{Interval: 10 * time.Millisecond, Settle: 700 * time.Millisecond,
		OnFile: func(f File) {
			if f.State == Truncated && !wr.isDone(f.Path) {
				bad = append(bad, f.Path+" reported truncated while being written")
			}
			if f.State == Unreadable {
				bad = append(bad, f.Path+" reported unreadable: "+f.Problem)
			}
		}})
	errc := make(chan error, 1)
	go wr.run(steps, errc)
	var sets []*SetReport
	writing := true
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		got, err := w.Poll(time.Now())
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, got...)
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
			writing = false
		default:
		}
		if !writing && len(sets) >= n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if writing {
		t.Fatal("the writer did not finish in time")
	}
	for _, b := range bad {
		t.Error(b)
	}
	return sets
}

// checkSets compares the reported sets with want, and each report with
// driver.Analyze on the same files (ingest.FromPaths).
func checkSets(t *testing.T, dir string, got []*SetReport, want []wantSet) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d sets, want %d", len(got), len(want))
	}
	for i, s := range got {
		w := want[i]
		if s.Err != nil {
			t.Fatalf("set %d: %v", i+1, s.Err)
		}
		if g, x := bases(s.Files), w.files; !slices.Equal(g, x) {
			t.Errorf("set %d files %v, want %v", i+1, g, x)
		}
		if g, x := bases(s.Truncated), w.truncated; !slices.Equal(g, x) {
			t.Errorf("set %d truncated %v, want %v", i+1, g, x)
		}
		if !slices.Equal(s.Missing, w.missing) {
			t.Errorf("set %d missing %v, want %v", i+1, s.Missing, w.missing)
		}
		sameReport(t, s)
	}
}

// sameReport checks that the set's report is driver.Analyze's on its files.
func sameReport(t *testing.T, s *SetReport) {
	t.Helper()
	ref, err := driver.Analyze(ingest.FromPaths(s.Files), driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := driver.EncodeReport(s.Run.Report)
	if err != nil {
		t.Fatal(err)
	}
	b, err := driver.EncodeReport(ref.Report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("set %d: report differs from driver.Analyze on %v", s.Index, s.Files)
	}
}

func bases(ps []string) []string {
	var out []string
	for _, p := range ps {
		out = append(out, filepath.Base(p))
	}
	return out
}

// check tells a file cut short (still being written) from a broken one and
// from a complete one, whatever the cut: in the gzip stream, in the JSON
// text, or a complete document that is not a trace.
func TestCheckStates(t *testing.T) {
	s := loadSamples(t)[0]
	for _, tc := range []struct {
		name    string
		content []byte
		want    State
	}{
		{"rank0.json.gz", s.gz, Complete},
		{"rank0.json", s.json, Complete},
		{"cut.json.gz", s.gz[:len(s.gz)/2], Waiting},
		{"cut-trailer.json.gz", s.gz[:len(s.gz)-4], Waiting},
		{"cut.json", s.json[:len(s.json)/3], Waiting},
		{"empty.json", nil, Waiting},
		{"broken.json", []byte(`{"traceEvents": [{"ph": "X", "ts": tru}]}`), Unreadable},
		{"cpu-only.json", []byte(`{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]}`), Unreadable},
	} {
		p := filepath.Join(t.TempDir(), tc.name)
		if err := os.WriteFile(p, tc.content, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		f := &fileState{File: File{Path: p}}
		f.observe(st, time.Now())
		f.check()
		if f.State != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, f.State, f.Problem, tc.want)
		}
	}
}
