// Package watch follows a vLLM profile directory while the profiler writes
// it: it tracks each trace file (appeared, growing, complete, truncated),
// decides completeness from the content (a gzip stream with its trailer, a
// JSON document that closes and that ingest reads), groups the complete
// rank files into sets by world size and rank, and analyses each set with
// driver.Analyze (its files given one by one, ingest.FromPaths) once every
// rank is there or the directory has been quiet for the settle time.
package watch

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"kinetoscope/driver"
)

// Options control a Watcher.
type Options struct {
	// Interval is the time between two looks at the directory; 0 means
	// one second.
	Interval time.Duration
	// Settle is how long the directory must stay quiet before a set that
	// lacks ranks is analysed with what is there, and before a file that
	// stopped growing with content that does not close is called
	// truncated; 0 means one minute.
	Settle time.Duration
	// After, when set, ignores the files last modified before it: the
	// traces of earlier profiles in the directory.
	After time.Time
	// Analyze are the options the sets are analysed with.
	Analyze driver.Options
	// OnFile, when set, is called with each file whose state changed, and
	// on every look for a growing file.
	OnFile func(File)
}

// SetReport is one set of rank files, analysed.
type SetReport struct {
	// Index counts the sets of the directory from 1.
	Index int `json:"index"`
	// WorldSize is the set's world size (1 when the traces have none).
	WorldSize int `json:"world_size"`
	// Files are the paths analysed, by rank.
	Files []string `json:"files"`
	// Missing are the ranks of the world with no complete file.
	Missing []int `json:"missing,omitempty"`
	// Start is when the profile began: the first GPU event of its
	// earliest rank, on the Unix clock; zero when the traces' clock is not
	// the epoch's or the set could not be analysed.
	Start time.Time `json:"start,omitzero"`
	// Truncated are files that stopped growing without closing; they are
	// not analysed.
	Truncated []string `json:"truncated,omitempty"`
	// Run is the analysis; nil when Err is set.
	Run *driver.Run `json:"-"`
	// Err is why the set could not be analysed.
	Err error `json:"-"`
}

// Complete reports whether every rank of the set was analysed.
func (s *SetReport) Complete() bool { return len(s.Missing) == 0 && len(s.Truncated) == 0 }

// Watcher follows one directory. It is not safe for concurrent use.
type Watcher struct {
	dir      string
	opt      Options
	files    map[string]*fileState // by path
	firstSee map[string]time.Time  // by trace key
	consumed map[string]bool       // trace keys already in a reported set
	quietAt  time.Time             // the last change of an unconsumed file
	sets     int
}

// New returns a Watcher of dir.
func New(dir string, opt Options) *Watcher {
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.Settle <= 0 {
		opt.Settle = time.Minute
	}
	return &Watcher{dir: dir, opt: opt, files: map[string]*fileState{},
		firstSee: map[string]time.Time{}, consumed: map[string]bool{}}
}

// Run looks at the directory every Interval and calls onSet with each set
// analysed, until ctx is done or onSet returns false.
func (w *Watcher) Run(ctx context.Context, onSet func(*SetReport) bool) error {
	t := time.NewTicker(w.opt.Interval)
	defer t.Stop()
	for {
		sets, err := w.Poll(time.Now())
		if err != nil {
			return err
		}
		for _, s := range sets {
			if !onSet(s) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Poll looks at the directory once, at time now, and returns the sets
// that became ready and were analysed.
func (w *Watcher) Poll(now time.Time) ([]*SetReport, error) {
	if err := w.scan(now); err != nil {
		return nil, err
	}
	return w.readySets(now), nil
}

// scan stats every trace file below the directory and moves each on.
func (w *Watcher) scan(now time.Time) error {
	seen := map[string]bool{}
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == w.dir {
				return err
			}
			return nil // a file removed between listing and stat
		}
		if d.IsDir() {
			if skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !isTraceName(d.Name()) {
			return nil
		}
		st, err := d.Info()
		if err != nil || ignored(d, st, w.opt.After) != "" {
			return nil
		}
		seen[p] = true
		w.look(p, st, now)
		return nil
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.dir, err)
	}
	for p := range w.files {
		if !seen[p] {
			delete(w.files, p)
			w.touch(p, now)
		}
	}
	return nil
}

// look moves one file on from a fresh stat.
func (w *Watcher) look(p string, st os.FileInfo, now time.Time) {
	f, ok := w.files[p]
	if !ok {
		f = &fileState{File: File{Path: p, State: Appeared, Rank: -1}, lastChange: now}
		f.Size, f.modTime = st.Size(), st.ModTime()
		w.files[p] = f
		if _, ok := w.firstSee[traceKey(p)]; !ok {
			w.firstSee[traceKey(p)] = now
		}
		w.touch(p, now)
		w.tell(f)
		return
	}
	if f.observe(st, now) {
		w.touch(p, now)
		w.tell(f)
		return
	}
	if f.settle(now, w.opt.Settle) {
		w.tell(f)
	}
}

// touch records a change of the file at p, unless its trace was reported.
func (w *Watcher) touch(p string, now time.Time) {
	if !w.consumed[traceKey(p)] {
		w.quietAt = now
	}
}

// tell passes a file's state to OnFile, unless its trace was reported.
func (w *Watcher) tell(f *fileState) {
	if w.opt.OnFile != nil && !w.consumed[traceKey(f.Path)] {
		w.opt.OnFile(f.File)
	}
}

// Files returns the state of every file not yet in a reported set, by
// path.
func (w *Watcher) Files() []File {
	var out []File
	for _, f := range w.files {
		if !w.consumed[traceKey(f.Path)] {
			out = append(out, f.File)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// trace is one trace: a .json, its .json.gz copy, or both.
type trace struct {
	key   string
	first time.Time
	files []*fileState
}

// traces returns the unconsumed traces by first sight.
func (w *Watcher) traces() []*trace {
	by := map[string]*trace{}
	for _, f := range w.files {
		k := traceKey(f.Path)
		if w.consumed[k] {
			continue
		}
		t := by[k]
		if t == nil {
			t = &trace{key: k, first: w.firstSee[k]}
			by[k] = t
		}
		t.files = append(t.files, f)
	}
	out := make([]*trace, 0, len(by))
	for _, t := range by {
		sort.Slice(t.files, func(i, j int) bool { return t.files[i].Path > t.files[j].Path }) // .gz first
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].first.Equal(out[j].first) {
			return out[i].first.Before(out[j].first)
		}
		return out[i].key < out[j].key
	})
	return out
}

// usable returns the file to analyse for t: its complete compressed copy,
// else its complete .json unless a compressed copy is still being written
// (vLLM's compressor removes the .json when it is done) and the
// directory has not settled; nil when none.
func (t *trace) usable(settled bool) *fileState {
	var done *fileState
	busy := false
	for _, f := range t.files {
		switch {
		case f.State == Complete && done == nil:
			done = f
		case f.State != Complete && f.State != Truncated && f.State != Unreadable:
			busy = true
		}
	}
	if done != nil && !strings.HasSuffix(strings.ToLower(done.Path), ".gz") && busy && !settled {
		return nil
	}
	return done
}

// truncated reports whether every file of t is truncated.
func (t *trace) truncated() bool {
	for _, f := range t.files {
		if f.State != Truncated {
			return false
		}
	}
	return true
}
