package store

import (
	"errors"
	"kinetoscope/internal/testkit"
	"testing"
)

// testAttempts: StartAnalysis counts the attempts at a run, HandBack
// uncounts one, a finished run is not started, a missing one is
// ErrNotFound; the count survives reopening the database.
func testAttempts(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	testkit.Must(t, db.Create(ctx, runAt("r", "r", 0, nil, file('a', 1))))
	reading := Progress{Stage: "reading", TotalBytes: 1}
	for _, step := range []struct {
		op   string // start, handback, reopen
		want int    // StartAnalysis's answer
		st   Status // the run's status after
	}{
		{"start", 1, StatusRunning},
		{"start", 2, StatusRunning}, // the first attempt's process died
		{"handback", 0, StatusQueued},
		{"start", 2, StatusRunning},
		{"reopen", 0, StatusRunning},
		{"start", 3, StatusRunning},
	} {
		switch step.op {
		case "start":
			n, err := db.StartAnalysis(ctx, "r", reading)
			if err != nil || n != step.want {
				t.Fatalf("StartAnalysis: %d %v, want %d", n, err, step.want)
			}
		case "handback":
			testkit.Must(t, db.HandBack(ctx, "r", Progress{Stage: "queued"}))
		case "reopen":
			db = open(t)
		}
		r, err := db.Get(ctx, "r")
		testkit.Must(t, err)
		if r.Status != step.st {
			t.Errorf("after %s: status %s, want %s", step.op, r.Status, step.st)
		}
	}
	testkit.Must(t, db.SetStatus(ctx, "r", StatusFailed, Progress{Stage: "failed"}, "killed"))
	if n, err := db.StartAnalysis(ctx, "r", reading); n != 0 || err != nil {
		t.Errorf("StartAnalysis of a failed run: %d %v, want 0 and no error", n, err)
	}
	if _, err := db.StartAnalysis(ctx, "missing", reading); !errors.Is(err, ErrNotFound) {
		t.Errorf("StartAnalysis of a missing run: %v, want ErrNotFound", err)
	}
	// A handback of a run that is not running changes nothing.
	testkit.Must(t, db.HandBack(ctx, "r", Progress{Stage: "queued"}))
	if r, _ := db.Get(ctx, "r"); r.Status != StatusFailed {
		t.Errorf("handback of a failed run made it %s", r.Status)
	}
}

// testReset: Reset queues a done or failed run again, with no report, no
// error and its attempts from zero; a queued or running run is
// ErrUnfinished, a missing one ErrNotFound.
func testReset(t *testing.T, open opener) {
	ctx := t.Context()
	db := open(t)
	for _, id := range []string{"done", "failed", "queued", "running"} {
		testkit.Must(t, db.Create(ctx, runAt(id, id, 0, nil, file('a', 1))))
	}
	for range 3 {
		_, err := db.StartAnalysis(ctx, "done", Progress{})
		testkit.Must(t, err)
	}
	testkit.Must(t, db.SetReport(ctx, "done", []byte(`{"v":1}`), Progress{Stage: "done"}))
	testkit.Must(t, db.SetStatus(ctx, "failed", StatusFailed, Progress{Stage: "failed"}, "bad trace"))
	_, err := db.StartAnalysis(ctx, "running", Progress{})
	testkit.Must(t, err)
	for _, tc := range []struct {
		id   string
		want error
	}{{"done", nil}, {"failed", nil}, {"queued", ErrUnfinished}, {"running", ErrUnfinished}, {"missing", ErrNotFound}} {
		err := db.Reset(ctx, tc.id, Progress{Stage: "queued"})
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Reset %s: %v, want %v", tc.id, err, tc.want)
		}
	}
	for _, id := range []string{"done", "failed"} {
		r, err := db.Get(ctx, id)
		testkit.Must(t, err)
		if r.Status != StatusQueued || r.Error != "" || r.Progress.Stage != "queued" {
			t.Errorf("reset %s: %s %q %q, want queued with no error", id, r.Status, r.Error, r.Progress.Stage)
		}
		if _, err := db.Report(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("reset %s keeps a report: %v", id, err)
		}
		if n, err := db.StartAnalysis(ctx, id, Progress{}); n != 1 || err != nil {
			t.Errorf("first attempt after reset of %s: %d %v, want 1", id, n, err)
		}
	}
	// The new report is written once, as the first was.
	testkit.Must(t, db.SetReport(ctx, "done", []byte(`{"v":2}`), Progress{Stage: "done"}))
	testkit.Must(t, db.SetReport(ctx, "done", []byte(`{"v":3}`), Progress{Stage: "done"}))
	if rep, err := db.Report(ctx, "done"); err != nil || string(rep) != `{"v":2}` {
		t.Errorf("report after reset: %s %v, want the first new one", rep, err)
	}
	if un, err := db.Unfinished(ctx); err != nil || len(un) != 3 {
		t.Errorf("unfinished after reset: %v %v, want failed, queued, running", un, err)
	}
}
