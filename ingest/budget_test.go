package ingest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
)

// A read within its budget keeps every event; past it, the read fails
// with a *BudgetError that names the limit and counts over it, before
// the whole trace is kept; the files of one set share the budget.
func TestBudget(t *testing.T) {
	const n = 60000 // about 6 MiB of JSON: several blocks
	text := testkit.DistinctKernels(n)
	full, err := Read(bytes.NewReader(text), "probe.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	events, names := full.KeptEvents(), int64(full.Strings.Len())
	if events != n {
		t.Fatalf("kept %d events of %d", events, n)
	}
	need := Estimate(events, names, 1)
	for _, tc := range []struct {
		name  string
		limit int64
		files int
		fails bool
	}{
		{"one file within", need, 1, false},
		{"one file over", need / 2, 1, true},
		{"two files, each within, together over", need + need/2, 2, true},
		{"two files within", 2 * need, 2, false},
	} {
		b := &Budget{Limit: tc.limit, Flag: "--max-analysis-memory"}
		var errs []error
		for i := range tc.files {
			_, err := Read(bytes.NewReader(text), "probe.json", Options{Budget: b})
			if i == tc.files-1 || err != nil {
				errs = append(errs, err)
			}
		}
		err := errors.Join(errs...)
		if (err != nil) != tc.fails || (b.Err() != nil) != tc.fails {
			t.Errorf("%s: read error %v, budget error %v; want failure %v", tc.name, err, b.Err(), tc.fails)
			continue
		}
		if !tc.fails {
			continue
		}
		var be *BudgetError
		if !errors.As(err, &be) {
			t.Fatalf("%s: %v is not a *BudgetError", tc.name, err)
		}
		if be.Limit != tc.limit || be.Estimate <= tc.limit || be.Estimate != Estimate(be.Events, be.Names, int(be.Files)) ||
			be.Events > int64(tc.files)*events || be.Files != int64(tc.files) {
			t.Errorf("%s: %+v: want limit %d passed by an estimate of the counts, at most %d events", tc.name, be, tc.limit, int64(tc.files)*events)
		}
		if tc.files == 1 && be.Events >= events {
			t.Errorf("%s: failed after keeping all %d events: want before", tc.name, be.Events)
		}
		msg := err.Error()
		for _, want := range []string{formatBytes(tc.limit), "--max-analysis-memory", groupDigits(be.Events) + " events kept", groupDigits(be.Names) + " distinct names"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", tc.name, msg, want)
			}
		}
	}
}

// The byte and digit formats of the budget's message.
func TestBudgetFormats(t *testing.T) {
	for _, tc := range []struct {
		n          int64
		bytes, dig string
	}{
		{0, "0 bytes", "0"},
		{999, "999 bytes", "999"},
		{1536, "1.5 KiB", "1,536"},
		{300 << 20, "300.0 MiB", "314,572,800"},
		{3 << 30, "3.0 GiB", "3,221,225,472"},
		{-1234567, "-1234567 bytes", "-1,234,567"},
	} {
		if got := formatBytes(tc.n); got != tc.bytes {
			t.Errorf("formatBytes(%d) = %q, want %q", tc.n, got, tc.bytes)
		}
		if got := groupDigits(tc.n); got != tc.dig {
			t.Errorf("groupDigits(%d) = %q, want %q", tc.n, got, tc.dig)
		}
	}
}
