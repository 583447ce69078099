package web

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
	"kinetoscope/render"
)

func TestValueFormats(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"ms of a large time", render.MSValue(2547.88), "2.548"},
		{"ms of a few µs keeps them", render.MSValue(4.04), "0.0040"},
		{"ms of zero", render.MSValue(0), "0.000"},
		{"ms of a rounded-away negative", render.MSValue(-0.03), "0.0000"},
		{"signed ms", render.SignedMS(-2238.8), "-2.239 ms"},
		{"signed µs, still in ms", render.SignedMS(5.1), "+0.0051 ms"},
		{"ci in ms", ciText(diff.Test{Verdict: "significant", CILowUS: -2343, CIHighUS: -2123}), "[-2.343, -2.123]"},
		{"ci untested", ciText(diff.Test{Verdict: "not enough steps"}), ""},
		{"step of all steps", phaseStep("all"), "step"},
		{"step of decode", phaseStep("decode"), "decode step"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

// steps returns a rank whose decode steps have the given spans.
func steps(spans ...float64) *analyze.Rank {
	rk := &analyze.Rank{Rank: 3}
	for i, sp := range spans {
		rk.Steps = append(rk.Steps, analyze.Step{Index: i, Phase: "decode", SpanUS: sp, KernelUS: sp / 2, Kernels: 10})
	}
	rk.Decode = analyze.Aggregate(rk.Steps, nil)
	return rk
}

// The picker shows the step asked for, falls back to the slowest with a
// note, and links to the neighbours and the fastest, median and slowest.
func TestTimelineView(t *testing.T) {
	rk := steps(500, 900, 300, 700)
	r := &analyze.Report{Ranks: []analyze.Rank{*rk}}
	tests := []struct {
		query    string
		step     int
		note     string
		links    string
		selected int
	}{
		{"", 1, "", "← previous step|next step →|fastest decode step|median decode step|*slowest decode step", 1},
		{"2", 2, "", "← previous step|next step →|*fastest decode step|median decode step|slowest decode step", 2},
		{"0", 0, "", "next step →|fastest decode step|median decode step|slowest decode step", 0},
		{"9", 1, "rank 3 has no step 9", "← previous step|next step →|fastest decode step|median decode step|*slowest decode step", 1},
		{"x", 1, "not a step number", "← previous step|next step →|fastest decode step|median decode step|*slowest decode step", 1},
	}
	for _, tc := range tests {
		v := newTimelineView(r, &r.Ranks[0], "decode", tc.query)
		if v == nil || v.Step.Index != tc.step {
			t.Fatalf("step %q: got %+v, want step %d", tc.query, v, tc.step)
		}
		if (tc.note == "") != (v.Note == "") || !strings.Contains(v.Note, tc.note) {
			t.Errorf("step %q: note %q, want %q", tc.query, v.Note, tc.note)
		}
		var links []string
		for _, l := range v.Links {
			mark := ""
			if l.Current {
				mark = "*"
			}
			links = append(links, mark+l.Label)
		}
		if got := strings.Join(links, "|"); got != tc.links {
			t.Errorf("step %q: links %s, want %s", tc.query, got, tc.links)
		}
		for _, o := range v.Options {
			if o.Selected != (o.Index == tc.selected) {
				t.Errorf("step %q: option %d selected %v", tc.query, o.Index, o.Selected)
			}
		}
		if want := "rank=3&step=" + strconv.Itoa(tc.step); string(v.Query) != want {
			t.Errorf("step %q: chart query %q, want %q", tc.query, v.Query, want)
		}
	}
}

// The per-rank rows give communication per step, raw and split, and mark
// the straggler.
func TestRanksView(t *testing.T) {
	rk := steps(1000, 1000)
	rk.Decode.Buckets = map[analyze.BucketID]analyze.BucketShare{analyze.AllReduce: {US: 800, USPerStep: 400}}
	rk.Decode.Comm = &analyze.Comm{KernelUS: 800, TransferUS: 200, WaitUS: 600, TransferShareNetOfWait: 50, WaitShare: 60}
	r := &analyze.Report{Ranks: []analyze.Rank{*rk},
		Collectives: &analyze.Collectives{Matched: 10, Straggler: []analyze.Straggler{{Rank: 3, LateCount: 7, LateUS: 90}}}}
	v := newRanksView(r, 0, "1")
	row := v.Rows[0]
	if !v.HasComm || v.Straggler == nil || v.Straggler.Rank != 3 || row.Late == nil {
		t.Fatalf("straggler or split missing: %+v", v)
	}
	if row.CommUS != 400 || row.CommPct != 80 || row.Split.TransferUS != 100 || row.Split.WaitUS != 300 {
		t.Errorf("per-step comm: raw %v (%v%%), split %+v", row.CommUS, row.CommPct, row.Split)
	}
	if row.Link != "?rank=3&step=1" {
		t.Errorf("rank link %q keeps no step", row.Link)
	}
}

func TestDiffWarnings(t *testing.T) {
	h200 := diff.Side{Ranks: 2, WorldSize: 2, Devices: []string{"NVIDIA H200"}, Phases: []string{"decode", "prefill"}}
	mi300 := diff.Side{Ranks: 1, WorldSize: 0, Devices: []string{"AMD Instinct MI300X"}, Phases: []string{"mixed"}}
	tests := []struct {
		name  string
		d     diff.Diff
		asked string
		want  []string
	}{
		{"alike", diff.Diff{Phase: "decode", Base: h200, Head: h200}, "", nil},
		{"H200 2 ranks decode against MI300 1 rank mixed", diff.Diff{Phase: "all", Base: h200, Head: mi300}, "", []string{
			"The runs ran on different GPUs: NVIDIA H200 against AMD Instinct MI300X.",
			"The runs differ in ranks: 2 rank(s) of world size 2 against 1 of an unrecorded world size.",
			"Not both runs have decode steps (base: decode, prefill; head: mixed), so all steps were compared.",
		}},
	}
	for _, tt := range tests {
		if got := diffWarnings(&tt.d, tt.asked); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The run page explains a total share of the span over 100% exactly where
// render's text report does: on the public trace whose streams overlap, and
// not on one whose do not.
func TestRunViewSpanOverlap(t *testing.T) {
	for _, tc := range []struct {
		trace string
		want  string
	}{
		{"hta-diff-control-a100.json.gz", "108.6% of the span"},
		{"tracelens-vllm-decode-full-graph.json.gz", ""},
	} {
		v := newRunView(reports.Of(t, testkit.Public(t, tc.trace)), "", "")
		if (tc.want == "") != (v.Overlap == "") || !strings.Contains(v.Overlap, tc.want) {
			t.Errorf("%s: overlap note %q, want %q", tc.trace, v.Overlap, tc.want)
		}
	}
}
