package main

import (
	"encoding/json"
	"strings"
	"testing"

	"kinetoscope/internal/bench"
	"kinetoscope/internal/testkit"
)

// TestBenchParallel checks bench --parallel: the parallel reader's phases
// are measured on the same file, its chunks decoded in parallel, and the
// ratios are those of the phases' times.
func TestBenchParallel(t *testing.T) {
	path := testkit.Public(t, "hta-diff-control-a100.json.gz")
	code, out, errs := runCmd("bench", path, "--runs", "1", "--no-python", "--json", "--parallel", "--gzip-workers", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	p := r.Parallel
	if p == nil || p.Workers != 3 {
		t.Fatalf("parallel phases: %+v", p)
	}
	for name, ph := range map[string]bench.Measurement{"gunzip": p.Gunzip, "ingest klauspost": p.IngestSeq, "ingest parallel": p.IngestPar} {
		if ph.Seconds <= 0 || ph.MBPerSec <= 0 {
			t.Errorf("%s: %+v", name, ph)
		}
	}
	if p.Chunks.Chunks < 2 || p.Chunks.Parallel < 2 {
		t.Errorf("chunks: %+v: the parallel path did not run", p.Chunks)
	}
	if got := r.Gunzip.Seconds / p.Gunzip.Seconds; got != p.GunzipVsSeq {
		t.Errorf("parallel gunzip ratio %v, want %v", p.GunzipVsSeq, got)
	}
	if got := p.IngestSeq.Seconds / p.IngestPar.Seconds; got != p.IngestVsSeq {
		t.Errorf("ingest ratio %v, want %v", p.IngestVsSeq, got)
	}
	code, text, errs := runCmd("bench", path, "--runs", "1", "--no-python", "--parallel", "--gzip-workers", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"parallel gzip reader, 2 workers", "parallel gunzip ", "ingest, klauspost gzip", "ingest, parallel gzip", "x gunzip (wall)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
