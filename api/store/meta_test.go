package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
)

// opener opens the test's database: each call a new handle on the same
// data, closed when the test ends.
type opener func(t *testing.T) Meta

// backends are the Meta implementations every metaTest runs on. Each
// gives the test its own empty database.
var backends = []struct {
	name string
	db   func(t *testing.T) opener
}{
	{"sqlite", func(t *testing.T) opener {
		path := filepath.Join(t.TempDir(), "runs.db")
		return func(t *testing.T) Meta {
			db, err := OpenSQLite(path)
			testkit.Must(t, err)
			t.Cleanup(func() { db.Close() })
			return db
		}
	}},
	{"postgres", func(t *testing.T) opener {
		url := pgtest.New(t)
		return func(t *testing.T) Meta {
			db, err := OpenPostgres(t.Context(), url)
			testkit.Must(t, err)
			t.Cleanup(func() { db.Close() })
			return db
		}
	}},
}

// metaTests are the behaviours of a Meta, each run on every backend.
var metaTests = []struct {
	name string
	fn   func(t *testing.T, open opener)
}{
	{"lifecycle", testLifecycle},
	{"round trip", testRoundTrip},
	{"list", testList},
	{"list default limit", testListDefaultLimit},
	{"not found", testNotFound},
	{"report bytes", testReportBytes},
	{"report written once", testReportOnce},
	{"status of a done run", testStatusOnce},
	{"counts and unfinished", testCounts},
	{"concurrent runs", testConcurrentRuns},
	{"concurrent reports of one run", testConcurrentReports},
	{"concurrent deletes of a shared blob", testConcurrentDeletes},
	{"held blobs", testHolds},
	{"attempts", testAttempts},
	{"reset", testReset},
	{"link of a run", testLink},
	{"ranks of files", testFileRanks},
}

func TestMeta(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range metaTests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.db(t)) })
			}
		})
	}
}

// runAt returns a queued run created at base plus sec seconds.
func runAt(id, name string, sec int, labels map[string]string, files ...File) *Run {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(sec) * time.Second)
	return &Run{ID: id, Name: name, Labels: labels, Status: StatusQueued, Files: files, Created: at, Updated: at}
}

func ids(runs []*Run) string {
	var s []string
	for _, r := range runs {
		s = append(s, r.ID)
	}
	return strings.Join(s, " ")
}

func file(c byte, size int64) File {
	return File{Name: string(c) + ".json.gz", SHA256: strings.Repeat(string(c), 64), Size: size, Format: "gzip"}
}

func testLifecycle(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	shared, own := file('a', 10), file('b', 20)
	testkit.Must(t, db.Create(ctx, newRun("r1", map[string]string{"gpu": "h100", "tp": "8"}, shared)))
	time.Sleep(time.Millisecond)
	testkit.Must(t, db.Create(ctx, newRun("r2", map[string]string{"gpu": "h100"}, shared, own)))
	testkit.Must(t, db.SetStatus(ctx, "r1", StatusRunning, Progress{Stage: "reading", Bytes: 5}, ""))
	testkit.Must(t, db.SetReport(ctx, "r2", []byte(`{"ranks":[]}`), Progress{Stage: "done"}))
	if err := db.Create(ctx, newRun("r1", nil)); err == nil {
		t.Error("a second run with the same id was created")
	}
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, "r2 r1"},
		{map[string]string{"gpu": "h100"}, "r2 r1"},
		{map[string]string{"gpu": "h100", "tp": "8"}, "r1"},
		{map[string]string{"gpu": "mi300"}, ""},
	} {
		runs, total, err := db.List(ctx, ListOptions{Labels: tc.labels})
		testkit.Must(t, err)
		if got := ids(runs); got != tc.want || total != len(runs) {
			t.Errorf("List %v: %q (total %d), want %q", tc.labels, got, total, tc.want)
		}
	}
	if un, err := db.Unfinished(ctx); err != nil || len(un) != 1 || un[0] != "r1" {
		t.Errorf("Unfinished: %v %v", un, err)
	}
	if _, err := db.Report(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("report of unfinished run: %v", err)
	}
	for _, tc := range []struct {
		sha  string
		want bool
	}{{shared.SHA256, true}, {own.SHA256, true}, {strings.Repeat("c", 64), false}} {
		if used, err := db.Referenced(ctx, tc.sha); err != nil || used != tc.want {
			t.Errorf("Referenced %.8s: %v %v, want %v", tc.sha, used, err, tc.want)
		}
	}
	// Deleting r2 frees only its own blob; r1 still uses the shared one.
	orphans, err := db.Delete(ctx, "r2")
	testkit.Must(t, err)
	if len(orphans) != 1 || orphans[0] != own.SHA256 {
		t.Errorf("orphans of r2: %v", orphans)
	}
	if used, err := db.Referenced(ctx, own.SHA256); err != nil || used {
		t.Errorf("Referenced after its run's Delete: %v %v", used, err)
	}
	testkit.Must(t, db.Close())

	db = open(t)
	r, err := db.Get(ctx, "r1")
	testkit.Must(t, err)
	if r.Status != StatusRunning || r.Progress.Bytes != 5 || r.Labels["tp"] != "8" || len(r.Files) != 1 {
		t.Errorf("r1 after reopening: %+v", r)
	}
	if _, err := db.Get(ctx, "r2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted run: %v", err)
	}
	orphans, err = db.Delete(ctx, "r1")
	if err != nil || len(orphans) != 1 || orphans[0] != shared.SHA256 {
		t.Errorf("orphans of the last run using a blob: %v %v", orphans, err)
	}
}

// testRoundTrip: Get and List return what Create stored, to the
// nanosecond, files in their order.
func testRoundTrip(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	want := &Run{
		ID: "rt", Name: "llama 70B, step 1200 — ünïcode", Status: StatusFailed,
		Labels:   map[string]string{"gpu": "h100", "empty": "", "k=v": "a,b"},
		Progress: Progress{Stage: "failed", Bytes: 1 << 40, TotalBytes: 1<<40 + 1, Events: 123456789},
		Error:    "rank 3: truncated",
		Files:    []File{file('z', 3), file('a', 1<<35), file('m', 0)},
		Link:     "pcie5x16",
		Created:  time.Unix(0, 1735787045123456789).UTC(),
		Updated:  time.Unix(0, 1735787046987654321).UTC(),
	}
	testkit.Must(t, db.Create(ctx, want))
	got, err := db.Get(ctx, "rt")
	testkit.Must(t, err)
	sameRun(t, "Get", got, want)
	runs, _, err := db.List(ctx, ListOptions{})
	testkit.Must(t, err)
	if len(runs) != 1 {
		t.Fatalf("List: %d runs", len(runs))
	}
	sameRun(t, "List", runs[0], want)

	// A run without labels or files has empty ones, not nil.
	testkit.Must(t, db.Create(ctx, runAt("bare", "bare", 0, nil)))
	bare, err := db.Get(ctx, "bare")
	testkit.Must(t, err)
	if bare.Labels == nil || bare.Files == nil || len(bare.Labels)+len(bare.Files) != 0 {
		t.Errorf("run without labels or files: %#v %#v", bare.Labels, bare.Files)
	}
}

func sameRun(t *testing.T, what string, got, want *Run) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Status != want.Status || got.Error != want.Error || got.Link != want.Link ||
		got.Progress != want.Progress || !maps.Equal(got.Labels, want.Labels) || !slices.Equal(got.Files, want.Files) ||
		!got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testList(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	// Newest first; "b1" and "b2" are created at the same time and come
	// in id order.
	for _, r := range []*Run{
		runAt("a", "llama-7b", 0, map[string]string{"gpu": "h100", "team": "x"}),
		runAt("b2", "llama-70b_100%", 1, map[string]string{"gpu": "h100"}),
		runAt("b1", "mixtral", 1, map[string]string{"gpu": "mi300", "team": "x"}),
		runAt("c", "Llama-7b", 2, map[string]string{"gpu": "h100", "team": "y"}),
		runAt("d", "gpt", 3, nil),
	} {
		testkit.Must(t, db.Create(ctx, r))
	}
	testkit.Must(t, db.SetStatus(ctx, "b2", StatusFailed, Progress{Stage: "failed"}, "boom"))
	testkit.Must(t, db.SetReport(ctx, "c", []byte("{}"), Progress{Stage: "done"}))
	testkit.Must(t, db.SetReport(ctx, "a", []byte("{}"), Progress{Stage: "done"}))
	for _, tc := range []struct {
		name  string
		opt   ListOptions
		want  string
		total int
	}{
		{"all", ListOptions{}, "d c b1 b2 a", 5},
		{"page", ListOptions{Limit: 2, Offset: 1}, "c b1", 5},
		{"last page", ListOptions{Limit: 2, Offset: 4}, "a", 5},
		{"past the end", ListOptions{Limit: 2, Offset: 9}, "", 5},
		{"negative offset", ListOptions{Limit: 1, Offset: -3}, "d", 5},
		{"label", ListOptions{Labels: map[string]string{"team": "x"}}, "b1 a", 2},
		{"labels", ListOptions{Labels: map[string]string{"team": "x", "gpu": "h100"}}, "a", 1},
		{"label absent", ListOptions{Labels: map[string]string{"team": "z"}}, "", 0},
		{"status", ListOptions{Status: StatusDone}, "c a", 2},
		{"status queued", ListOptions{Status: StatusQueued}, "d b1", 2},
		{"status and label", ListOptions{Status: StatusDone, Labels: map[string]string{"team": "y"}}, "c", 1},
		{"name part", ListOptions{Name: "llama"}, "b2 a", 2},
		{"name is case-sensitive", ListOptions{Name: "Llama"}, "c", 1},
		{"name is not a pattern", ListOptions{Name: "_100%"}, "b2", 1},
		{"name wildcard is literal", ListOptions{Name: "%"}, "b2", 1},
		{"name and status, paged", ListOptions{Name: "lama", Status: StatusDone, Limit: 1, Offset: 1}, "a", 2},
	} {
		runs, total, err := db.List(ctx, tc.opt)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := ids(runs); got != tc.want || total != tc.total {
			t.Errorf("%s: %q (total %d), want %q (total %d)", tc.name, got, total, tc.want, tc.total)
		}
	}
	// Listed runs carry their labels and files.
	runs, _, err := db.List(ctx, ListOptions{Labels: map[string]string{"team": "y"}})
	testkit.Must(t, err)
	if len(runs) != 1 || runs[0].Labels["gpu"] != "h100" || runs[0].Status != StatusDone {
		t.Errorf("listed run: %+v", runs)
	}
}

// testListDefaultLimit: a zero Limit is a page of 50.
func testListDefaultLimit(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	for i := range 52 {
		testkit.Must(t, db.Create(ctx, runAt(fmt.Sprintf("r%02d", i), "r", i, nil)))
	}
	runs, total, err := db.List(ctx, ListOptions{})
	testkit.Must(t, err)
	if len(runs) != 50 || total != 52 || runs[0].ID != "r51" || runs[49].ID != "r02" {
		t.Errorf("default page: %d runs of %d, %s..%s", len(runs), total, runs[0].ID, runs[len(runs)-1].ID)
	}
}

func testNotFound(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	testkit.Must(t, db.Create(ctx, runAt("here", "here", 0, nil)))
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Get", func() error { _, err := db.Get(ctx, "gone"); return err }()},
		{"SetStatus", db.SetStatus(ctx, "gone", StatusRunning, Progress{}, "")},
		{"SetReport", db.SetReport(ctx, "gone", []byte("{}"), Progress{})},
		{"Report", func() error { _, err := db.Report(ctx, "gone"); return err }()},
		{"Report of a queued run", func() error { _, err := db.Report(ctx, "here"); return err }()},
		{"Delete", func() error { _, err := db.Delete(ctx, "gone"); return err }()},
	} {
		if !errors.Is(tc.err, ErrNotFound) || !strings.Contains(tc.err.Error(), "run ") {
			t.Errorf("%s: %v, want a run's ErrNotFound", tc.name, tc.err)
		}
	}
}

// testReportBytes: a report comes back byte for byte, whatever the bytes.
func testReportBytes(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	big := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	for i, rep := range [][]byte{
		[]byte(`{"ranks":[{"rank":0,"name":"ünï"}]}`),
		{0, 0xff, 0xfe, '\\', 'x', 0, '\'', '"'},
		big,
	} {
		id := fmt.Sprintf("rep%d", i)
		testkit.Must(t, db.Create(ctx, runAt(id, id, i, nil)))
		testkit.Must(t, db.SetReport(ctx, id, rep, Progress{Stage: "done"}))
		got, err := db.Report(ctx, id)
		testkit.Must(t, err)
		if !bytes.Equal(got, rep) {
			t.Errorf("report %d: %d bytes back of %d, or not the same", i, len(got), len(rep))
		}
	}
}

// testReportOnce: SetReport on a run that is done keeps the first report.
func testReportOnce(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	testkit.Must(t, db.Create(ctx, runAt("r", "r", 0, nil)))
	testkit.Must(t, db.SetReport(ctx, "r", []byte(`{"first":true}`), Progress{Stage: "done", Events: 1}))
	before, err := db.Get(ctx, "r")
	testkit.Must(t, err)
	if err := db.SetReport(ctx, "r", []byte(`{"second":true}`), Progress{Stage: "done", Events: 2}); err != nil {
		t.Fatalf("second SetReport: %v, want nil", err)
	}
	rep, err := db.Report(ctx, "r")
	testkit.Must(t, err)
	if string(rep) != `{"first":true}` {
		t.Errorf("report after a second SetReport: %s", rep)
	}
	after, err := db.Get(ctx, "r")
	testkit.Must(t, err)
	sameRun(t, "run after a second SetReport", after, before)
}

// testLink: a run's link is kept from Create, changed by SetLink whatever
// the run's status (its report stays), and seen by another handle.
func testLink(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	r := runAt("r", "r", 0, nil)
	r.Link = "120"
	testkit.Must(t, db.Create(ctx, r))
	testkit.Must(t, db.SetReport(ctx, "r", []byte(`{"made":"with 120"}`), Progress{Stage: "done"}))
	for _, link := range []string{"nvlink3", "", "pcie4x16"} {
		testkit.Must(t, db.SetLink(ctx, "r", link))
		got, err := open(t).Get(ctx, "r")
		testkit.Must(t, err)
		if got.Link != link || got.Status != StatusDone {
			t.Errorf("after SetLink(%q): link %q, status %s", link, got.Link, got.Status)
		}
	}
	if rep, err := db.Report(ctx, "r"); err != nil || string(rep) != `{"made":"with 120"}` {
		t.Errorf("report after SetLink: %s %v", rep, err)
	}
	if err := db.SetLink(ctx, "nope", "nvlink4"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetLink of an unknown run: %v, want ErrNotFound", err)
	}
}

// testFileRanks: the rank an upload assigned to each file (none, 0, 3)
// comes back from Get and List, per file, each its own.
func testFileRanks(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	want := []*int{nil, new(int), new(int)}
	*want[2] = 3
	var files []File
	for i, c := range []byte("abc") {
		f := file(c, int64(i+1))
		f.Rank = want[i]
		files = append(files, f)
	}
	testkit.Must(t, db.Create(ctx, runAt("r", "r", 0, nil, files...)))
	testkit.Must(t, db.Create(ctx, runAt("s", "s", 1, nil, file('d', 4))))
	got, err := open(t).Get(ctx, "r")
	testkit.Must(t, err)
	listed, _, err := db.List(ctx, ListOptions{})
	testkit.Must(t, err)
	for _, r := range append(listed, got) {
		if r.ID != "r" {
			if len(r.Files) != 1 || r.Files[0].Rank != nil {
				t.Errorf("run %s: files %+v, want one without a rank", r.ID, r.Files)
			}
			continue
		}
		for i, f := range r.Files {
			if (f.Rank == nil) != (want[i] == nil) || (f.Rank != nil && *f.Rank != *want[i]) {
				t.Errorf("run r, file %s: rank %v, want %v", f.Name, f.Rank, want[i])
			}
		}
	}
}

// testStatusOnce: SetStatus never changes a done run, and does change
// every other.
func testStatusOnce(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	testkit.Must(t, db.Create(ctx, runAt("r", "r", 0, nil)))
	for _, tc := range []struct {
		st      Status
		errText string
		want    Status
	}{
		{StatusRunning, "", StatusRunning},
		{StatusFailed, "boom", StatusFailed},
		{StatusRunning, "", StatusRunning}, // a failed run may be retried
		{StatusQueued, "", StatusQueued},
	} {
		testkit.Must(t, db.SetStatus(ctx, "r", tc.st, Progress{Stage: string(tc.st)}, tc.errText))
		r, err := db.Get(ctx, "r")
		testkit.Must(t, err)
		if r.Status != tc.want || r.Error != tc.errText || r.Progress.Stage != string(tc.st) {
			t.Errorf("after SetStatus %s: %s %q %q", tc.st, r.Status, r.Error, r.Progress.Stage)
		}
	}
	testkit.Must(t, db.SetReport(ctx, "r", []byte("{}"), Progress{Stage: "done", Events: 7}))
	done, err := db.Get(ctx, "r")
	testkit.Must(t, err)
	for _, st := range []Status{StatusRunning, StatusFailed, StatusQueued, StatusDone} {
		if err := db.SetStatus(ctx, "r", st, Progress{Stage: "reading"}, "late"); err != nil {
			t.Errorf("SetStatus %s of a done run: %v, want nil", st, err)
		}
		r, err := db.Get(ctx, "r")
		testkit.Must(t, err)
		sameRun(t, "done run after SetStatus "+string(st), r, done)
	}
	if un, err := db.Unfinished(ctx); err != nil || len(un) != 0 {
		t.Errorf("Unfinished: %v %v", un, err)
	}
}

func testCounts(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	if c, err := db.Counts(ctx); err != nil || len(c) != 0 {
		t.Errorf("Counts of no runs: %v %v", c, err)
	}
	if un, err := db.Unfinished(ctx); err != nil || len(un) != 0 {
		t.Errorf("Unfinished of no runs: %v %v", un, err)
	}
	// Created out of order: Unfinished is oldest first.
	for _, r := range []*Run{runAt("q2", "q", 5, nil), runAt("q1", "q", 1, nil), runAt("run", "r", 3, nil),
		runAt("d1", "d", 0, nil), runAt("d2", "d", 2, nil), runAt("f", "f", 4, nil)} {
		testkit.Must(t, db.Create(ctx, r))
	}
	testkit.Must(t, db.SetStatus(ctx, "run", StatusRunning, Progress{}, ""))
	testkit.Must(t, db.SetStatus(ctx, "f", StatusFailed, Progress{}, "x"))
	testkit.Must(t, db.SetReport(ctx, "d1", []byte("{}"), Progress{}))
	testkit.Must(t, db.SetReport(ctx, "d2", []byte("{}"), Progress{}))
	c, err := db.Counts(ctx)
	testkit.Must(t, err)
	want := map[Status]int{StatusQueued: 2, StatusRunning: 1, StatusDone: 2, StatusFailed: 1}
	if !maps.Equal(c, want) {
		t.Errorf("Counts: %v, want %v", c, want)
	}
	un, err := db.Unfinished(ctx)
	testkit.Must(t, err)
	if got := strings.Join(un, " "); got != "q1 run q2" {
		t.Errorf("Unfinished: %q, want oldest first", got)
	}
}

// testConcurrentRuns: 32 goroutines create runs and record their reports
// at once; every run is there afterwards, with its own report.
func testConcurrentRuns(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("c%02d", i)
			r := runAt(id, id, i, map[string]string{"i": fmt.Sprint(i), "all": "yes"}, file('a', 1), file(byte('b'+i%20), 2))
			if err := db.Create(ctx, r); err != nil {
				errs <- err
				return
			}
			if err := db.SetStatus(ctx, id, StatusRunning, Progress{Stage: "reading"}, ""); err != nil {
				errs <- err
				return
			}
			if err := db.SetReport(ctx, id, []byte(`{"run":"`+id+`"}`), Progress{Stage: "done", Events: int64(i)}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	runs, total, err := db.List(ctx, ListOptions{Labels: map[string]string{"all": "yes"}, Status: StatusDone, Limit: 100})
	testkit.Must(t, err)
	if total != n || len(runs) != n {
		t.Fatalf("%d runs listed (total %d), want %d", len(runs), total, n)
	}
	for i, r := range runs {
		id := fmt.Sprintf("c%02d", n-1-i)
		rep, err := db.Report(ctx, id)
		if r.ID != id || len(r.Files) != 2 || r.Labels["i"] != fmt.Sprint(n-1-i) || r.Progress.Events != int64(n-1-i) ||
			err != nil || string(rep) != `{"run":"`+id+`"}` {
			t.Errorf("run %d: %+v, report %s %v", i, r, rep, err)
		}
	}
}

// testConcurrentReports: replicas finishing the same run at once all
// succeed, and one report stays with its own progress.
func testConcurrentReports(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	testkit.Must(t, db.Create(ctx, runAt("r", "r", 0, nil)))
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = db.SetReport(ctx, "r", []byte(fmt.Sprintf(`{"by":%d}`, i)), Progress{Stage: "done", Events: int64(i)})
		})
	}
	wg.Wait()
	testkit.Must(t, errors.Join(errs...))
	r, err := db.Get(ctx, "r")
	testkit.Must(t, err)
	rep, err := db.Report(ctx, "r")
	testkit.Must(t, err)
	if want := fmt.Sprintf(`{"by":%d}`, r.Progress.Events); string(rep) != want || r.Status != StatusDone {
		t.Errorf("report %s with the progress of %d (%s)", rep, r.Progress.Events, r.Status)
	}
}

// testConcurrentDeletes: of runs sharing a blob, deleted at once, exactly
// one returns it as an orphan.
func testConcurrentDeletes(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	const n = 8
	shared := file('s', 1)
	for i := range n {
		testkit.Must(t, db.Create(ctx, runAt(fmt.Sprint(i), "r", i, nil, file(byte('a'+i), 1), shared)))
	}
	var wg sync.WaitGroup
	orphans := make([][]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { orphans[i], errs[i] = db.Delete(ctx, fmt.Sprint(i)) })
	}
	wg.Wait()
	testkit.Must(t, errors.Join(errs...))
	sharedOrphaned := 0
	for i, o := range orphans {
		own := file(byte('a'+i), 1).SHA256
		if !slices.Contains(o, own) {
			t.Errorf("delete %d: orphans %v lack its own blob", i, o)
		}
		if slices.Contains(o, shared.SHA256) {
			sharedOrphaned++
		}
	}
	if sharedOrphaned != 1 {
		t.Errorf("the shared blob was returned as an orphan %d times, want once", sharedOrphaned)
	}
}

// A blob an upload holds counts as used, by whichever connection asks,
// until the upload releases it or the hold expires: a delete of another run
// with the same content does not report it as an orphan.
func testHolds(t *testing.T, open opener) {
	ctx := t.Context()
	db, other := open(t), open(t) // two processes sharing the store
	shared, lone := file('a', 10), file('c', 30)
	testkit.Must(t, db.Create(ctx, newRun("r1", nil, shared)))
	testkit.Must(t, db.Hold(ctx, shared.SHA256, "upload-1", time.Now().Add(time.Hour)))
	testkit.Must(t, db.Hold(ctx, shared.SHA256, "upload-1", time.Now().Add(time.Hour)))  // twice: one hold
	testkit.Must(t, db.Hold(ctx, lone.SHA256, "upload-2", time.Now().Add(-time.Second))) // expired
	orphans, err := other.Delete(ctx, "r1")
	testkit.Must(t, err)
	if len(orphans) != 0 {
		t.Errorf("delete of the run sharing a held blob: orphans %v, want none", orphans)
	}
	for _, tc := range []struct {
		what string
		sha  string
		want bool
	}{
		{"held", shared.SHA256, true},
		{"expired hold", lone.SHA256, false},
	} {
		if used, err := other.Referenced(ctx, tc.sha); err != nil || used != tc.want {
			t.Errorf("%s: Referenced = %v, %v; want %v", tc.what, used, err, tc.want)
		}
	}
	testkit.Must(t, db.Release(ctx, "upload-2")) // releases nothing of upload-1
	if used, _ := other.Referenced(ctx, shared.SHA256); !used {
		t.Error("another upload's release ended the hold")
	}
	testkit.Must(t, db.Release(ctx, "upload-1"))
	if used, err := other.Referenced(ctx, shared.SHA256); err != nil || used {
		t.Errorf("released: Referenced = %v, %v; want false", used, err)
	}
	testkit.Must(t, db.Create(ctx, newRun("r2", nil, shared)))
	testkit.Must(t, db.Hold(ctx, shared.SHA256, "upload-3", time.Now().Add(time.Hour)))
	testkit.Must(t, db.Release(ctx, "upload-3"))
	if orphans, err := other.Delete(ctx, "r2"); err != nil || len(orphans) != 1 || orphans[0] != shared.SHA256 {
		t.Errorf("delete after the hold ended: orphans %v, %v; want [%s]", orphans, err, shared.SHA256)
	}
}
