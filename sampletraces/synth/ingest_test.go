package synth

import (
	"path/filepath"
	"testing"

	"kinetoscope/ingest"
)

// TestIngest reads a generated trace set with ingest.Open and checks that
// what it keeps matches the truth.
func TestIngest(t *testing.T) {
	for _, tc := range []struct{ graph, args bool }{{false, true}, {true, true}, {false, false}} {
		graph := tc.graph
		cfg := smallConfig(graph, 3)
		cfg.CollectiveArgs = tc.args
		dir := t.TempDir()
		tr, err := Generate(dir, cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		set, err := ingest.Open(dir, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range set.Errors {
			if filepath.Base(e.Path) != TruthFile {
				t.Errorf("ingest error: %v", e)
			}
		}
		if len(set.Traces) != cfg.Ranks {
			t.Fatalf("graph=%v: ingest found %d traces, want %d", graph, len(set.Traces), cfg.Ranks)
		}
		for i, trace := range set.Traces {
			checkIngested(t, trace, tr, &tr.Ranks[i])
		}
	}
}

// checkIngested compares one ingested rank with its truth.
func checkIngested(t *testing.T, trace *ingest.Trace, tr *Truth, rt *RankTruth) {
	t.Helper()
	var gpu, colls, comm, launches int
	for _, ph := range []string{"prefill", "decode"} {
		pc := tr.PerStep[ph]
		gpu += pc.GPUEvents * pc.Steps
		launches += (pc.Launches + 1) * pc.Steps // + the host sync
		comm += pc.CommOps * pc.Steps
		for _, n := range pc.Collective {
			colls += n * pc.Steps
		}
	}
	checks := []struct {
		what      string
		got, want int64
	}{
		{"rank", int64(trace.Rank), int64(rt.Rank)},
		{"events", trace.Counts.Events, rt.Events},
		{"python functions", trace.Counts.PythonFunctions, rt.EventsByCategory["python_function"]},
		{"GPU events", int64(trace.GPU.Len()), int64(gpu)},
		{"launches", int64(trace.Launches.Len()), int64(launches)},
		{"annotations (CPU and GPU)", int64(trace.Annotations.Len()), int64(2 * len(tr.Steps))},
		{"comm ops", int64(trace.CommOps.Len()), int64(comm)},
		{"world size", int64(trace.WorldSize()), int64(tr.Config.Ranks)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("rank %d: ingested %s = %d, truth %d", rt.Rank, c.what, c.got, c.want)
		}
	}
	var withColl int
	var ns int64
	for _, e := range trace.GPU.All() {
		if e.Coll != ingest.NoCollective {
			withColl++
		}
		ns += e.Dur
	}
	var want int64
	for _, st := range rt.Steps {
		want += st.GPUNS
	}
	if !tr.Config.CollectiveArgs {
		colls = 0
	}
	if withColl != colls || ns != want {
		t.Errorf("rank %d: %d GPU events with collective args (want %d), GPU time %d ns (want %d)", rt.Rank, withColl, colls, ns, want)
	}
	if trace.Meta.Other["kinetoscope_synthetic"] != "true" {
		t.Errorf("rank %d: synthetic marker not seen by ingest: %v", rt.Rank, trace.Meta.Other)
	}
}
