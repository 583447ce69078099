package analyze

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// TestRooflineTakesShapesFromCapture analyses the graph_capture sample:
// its replay trace with the capture trace beside it (capture_traces/),
// the replay trace alone, and the same steps run eager. With the capture,
// every decode GEMM and attention kernel has a figure taken from it, and
// the rows' FLOPs and bytes a step are exactly the eager trace's (the same
// shapes), their TB/s within 15% (other kernel times); alone, none has one
// and all say "CUDA graph replay".
func TestRooflineTakesShapesFromCapture(t *testing.T) {
	replay := testkit.Real(t, "graph_capture")
	alone, err := filepath.Glob(filepath.Join(replay, "*.pt.trace.json.gz"))
	if err != nil || len(alone) != 1 {
		t.Fatalf("replay trace: %v %v", alone, err)
	}
	_, eager := analyzePath(t, testkit.Real(t, "graph_capture_eager"))
	_, withCap := analyzePath(t, replay)
	_, noCap := analyzePath(t, alone[0])
	for _, b := range []BucketID{GEMM, Attention} {
		want, got, none := decodeRow(t, eager, b), decodeRow(t, withCap, b), decodeRow(t, noCap, b)
		if got.Kernels == 0 || got.CapturedKernels != got.Kernels || got.ShapedKernels != got.Kernels {
			t.Errorf("%s with the capture: %d kernels, %d shaped, %d from the capture", b, got.Kernels, got.ShapedKernels, got.CapturedKernels)
		}
		perStep := func(r RooflineRow, v float64) float64 { return v / float64(r.RankSteps) }
		if !nearRel(perStep(got, got.FLOPs), perStep(want, want.FLOPs)) || !nearRel(perStep(got, got.Bytes), perStep(want, want.Bytes)) {
			t.Errorf("%s: %g FLOPs %g bytes a step from the capture, eager %g and %g", b,
				perStep(got, got.FLOPs), perStep(got, got.Bytes), perStep(want, want.FLOPs), perStep(want, want.Bytes))
		}
		if math.Abs(got.TBPerS/want.TBPerS-1) > 0.15 || math.Abs(got.Intensity/want.Intensity-1) > 0.02 {
			t.Errorf("%s: %.3f TB/s, %.2f FLOP/B from the capture; eager %.3f, %.2f", b, got.TBPerS, got.Intensity, want.TBPerS, want.Intensity)
		}
		if none.ShapedKernels != 0 || len(none.Unshaped) != 1 || none.Unshaped[0].Reason != GapGraph {
			t.Errorf("%s without the capture: %d shaped, %+v", b, none.ShapedKernels, none.Unshaped)
		}
	}
}

// decodeRow returns r's decode row of bucket b.
func decodeRow(t *testing.T, r *Report, b BucketID) RooflineRow {
	t.Helper()
	if r.Roofline != nil {
		for _, row := range r.Roofline.Rows {
			if row.Phase == PhaseDecode && row.Bucket == b {
				return row
			}
		}
	}
	t.Fatalf("%s: no decode %s row", r.Source, b)
	return RooflineRow{}
}

// TestCapturedGraphsMatchEager reads the sample's capture trace and its
// eager trace with encoding/json and checks ingest.CapturedGraphs against
// them: one graph, whose launches' ops, in order, are the ops (by name,
// "" for none with shapes) of the first eager step's kernels in start
// order, so that each op launched as many kernels, in the same places, as
// it did eager; and the embedding's 8 tokens.
func TestCapturedGraphsMatchEager(t *testing.T) {
	capPaths, _ := filepath.Glob(filepath.Join(testkit.Real(t, "graph_capture"), "capture_traces", "*.gz"))
	eagerPaths, _ := filepath.Glob(filepath.Join(testkit.Real(t, "graph_capture_eager"), "*.gz"))
	if len(capPaths) != 1 || len(eagerPaths) != 1 {
		t.Fatalf("capture %v, eager %v", capPaths, eagerPaths)
	}
	set, err := ingest.Open(capPaths[0], ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tr *ingest.Trace
	for _, c := range append(set.Captures, set.Traces...) {
		tr = c
	}
	if len(set.SetAside) == 1 {
		tr = set.SetAside[0].Trace
	}
	if tr == nil {
		t.Fatalf("%s read as nothing: %+v", capPaths[0], set)
	}
	graphs := tr.CapturedGraphs()
	if len(graphs) != 1 || graphs[0].Tokens != 8 {
		t.Fatalf("%d graphs captured (want 1), tokens %d", len(graphs), graphs[0].Tokens)
	}
	var got []string
	for _, l := range graphs[0].Launches {
		name := ""
		if l.Op >= 0 {
			name = tr.Name(tr.Shapes.Ops.At(int(l.Op)).Name)
		}
		got = append(got, name)
	}
	want := eagerStepOps(t, eagerPaths[0])
	if !slices.Equal(got, want) {
		t.Errorf("captured launches' ops (%d):\n%v\nfirst eager step's kernels' ops (%d):\n%v", len(got), got, len(want), want)
	}
}

// shapedOpNames are the ops CapturedGraphs links (ingest keeps them with
// their shapes), as the sample runs them.
var shapedOpNames = []string{"aten::mm", "aten::_cudnn_attention_forward"}

// eagerStepOps returns, for each kernel of the first step of the eager
// trace at path (in start order, up to the argmax outside the graph),
// the name of the op with shapes that launched it (its External id's
// innermost cpu_op, "" when that is not one of shapedOpNames).
func eagerStepOps(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string  `json:"name"`
			Cat  string  `json:"cat"`
			Ph   string  `json:"ph"`
			Ts   float64 `json:"ts"`
			Dur  float64 `json:"dur"`
			Args struct {
				Ext int64 `json:"External id"`
			} `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	opName, opDur := map[int64]string{}, map[int64]float64{}
	var step [2]float64
	for _, e := range doc.TraceEvents {
		switch {
		case e.Cat == "cpu_op" && e.Ph == "X":
			if d, ok := opDur[e.Args.Ext]; !ok || e.Dur < d { // the innermost op of an id
				opName[e.Args.Ext], opDur[e.Args.Ext] = e.Name, e.Dur
			}
		case e.Cat == "user_annotation" && strings.HasPrefix(e.Name, "execute_") && (step[1] == 0 || e.Ts < step[0]):
			step = [2]float64{e.Ts, e.Ts + e.Dur}
		}
	}
	type kernel struct {
		ts  float64
		op  string
		arg bool
	}
	var ks []kernel
	for _, e := range doc.TraceEvents {
		if e.Cat == "kernel" {
			ks = append(ks, kernel{e.Ts, opName[e.Args.Ext], strings.Contains(e.Name, "ArgMaxOps")})
		}
	}
	slices.SortFunc(ks, func(a, b kernel) int { return int(math.Copysign(1, a.ts-b.ts)) })
	var out []string
	for _, k := range ks {
		if k.ts < step[0] {
			continue
		}
		if k.arg {
			break
		}
		if !slices.Contains(shapedOpNames, k.op) {
			k.op = ""
		}
		out = append(out, k.op)
	}
	return out
}

// TestMatchGraph: a replay takes the one captured graph of as many
// kernels; among several of that count the one captured at its step's
// tokens, else at the fewest above them (a padded batch), else the first
// when they all do the same work; none otherwise, saying why.
func TestMatchGraph(t *testing.T) {
	graph := func(n int, tokens int64) ingest.CapturedGraph {
		return ingest.CapturedGraph{Launches: make([]ingest.CapturedLaunch, n), Tokens: tokens}
	}
	differ := func(a, b *ingest.CapturedGraph) bool { return a == b }
	alike := func(a, b *ingest.CapturedGraph) bool { return true }
	g126 := []ingest.CapturedGraph{graph(126, 4), graph(126, 8), graph(126, 16)}
	cases := []struct {
		name      string
		graphs    []ingest.CapturedGraph
		n, tokens int
		same      func(a, b *ingest.CapturedGraph) bool
		want      int    // index into graphs, -1 for none
		why       string // the reason's start when none
	}{
		{"one of the count", []ingest.CapturedGraph{graph(126, 8)}, 126, 8, differ, 0, ""},
		{"one of the count, other tokens", []ingest.CapturedGraph{graph(126, 8)}, 126, 5, differ, 0, ""},
		{"by count among several", []ingest.CapturedGraph{graph(120, 8), graph(126, 16)}, 126, 8, differ, 1, ""},
		{"by tokens among the same count", g126, 126, 8, differ, 1, ""},
		{"padded: the fewest tokens above", g126, 126, 5, differ, 1, ""},
		{"above every graph, different work", g126, 126, 32, differ, -1, GapCaptureMismatch},
		{"above every graph, the same work", g126, 126, 32, alike, 0, ""},
		{"same tokens twice, different work", []ingest.CapturedGraph{graph(126, 8), graph(126, 8)}, 126, 8, differ, -1, GapCaptureMismatch},
		{"same tokens twice, the same work", []ingest.CapturedGraph{graph(126, 8), graph(126, 8)}, 126, 8, alike, 0, ""},
		{"no count matches", []ingest.CapturedGraph{graph(125, 8)}, 126, 8, differ, -1, GapCaptureMismatch},
		{"no graph", nil, 126, 8, differ, -1, GapCaptureNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, why := matchGraph(c.graphs, c.n, c.tokens, c.same)
			switch {
			case c.want >= 0 && g != &c.graphs[c.want]:
				t.Errorf("got %p (%q), want graph %d", g, why, c.want)
			case c.want < 0 && (g != nil || !strings.HasPrefix(why, c.why)):
				t.Errorf("got %p, %q; want none, %q...", g, why, c.why)
			}
		})
	}
}

// TestSameWork: the sample's captured graph does the same work as itself
// and not as a copy with one op's launch dropped or another op in a place.
func TestSameWork(t *testing.T) {
	set, err := ingest.Open(testkit.Real(t, "graph_capture"), ingest.Options{})
	if err != nil || len(set.Captures) != 1 {
		t.Fatalf("%v, %d captures", err, len(set.Captures))
	}
	c := set.Captures[0]
	g := c.CapturedGraphs()[0]
	shorter := g
	shorter.Launches = g.Launches[1:]
	moved := g
	moved.Launches = slices.Clone(g.Launches)
	var gemms []int
	for j, l := range moved.Launches {
		if l.Op >= 0 && c.Name(c.Shapes.Ops.At(int(l.Op)).Name) == "aten::mm" {
			gemms = append(gemms, j)
		}
	}
	// the QKV projection's place takes the out projection's op (another N)
	moved.Launches[gemms[0]].Op = moved.Launches[gemms[2]].Op
	for _, c2 := range []struct {
		name string
		b    *ingest.CapturedGraph
		want bool
	}{{"itself", &g, true}, {"one launch short", &shorter, false}, {"another GEMM in a place", &moved, false}} {
		if got := sameWork(c, &g, c2.b); got != c2.want {
			t.Errorf("%s: sameWork %v, want %v", c2.name, got, c2.want)
		}
	}
}

// TestRooflineCaptureMismatch drops one kernel launch from the sample's
// captured graph (its call renamed to one that launches nothing): no
// replay then matches it one for one, and every replayed GEMM and
// attention kernel has no figure, the reason saying so.
func TestRooflineCaptureMismatch(t *testing.T) {
	set, err := ingest.Open(testkit.Real(t, "graph_capture"), ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Captures) != 1 {
		t.Fatalf("%d capture traces read, want 1", len(set.Captures))
	}
	c := set.Captures[0]
	other := c.Strings.Intern("cudaFuncGetAttributes")
	begun := false
	for _, l := range c.Launches.All() { // trace order: the capture's calls are in time order here
		name := c.Name(l.Name)
		begun = begun || strings.Contains(name, "BeginCapture")
		if begun && ingest.IsKernelLaunch(name) {
			l.Name = other
			break
		}
	}
	r, err := Analyze(set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []BucketID{GEMM, Attention} {
		row := decodeRow(t, r, b)
		if row.ShapedKernels != 0 || len(row.Unshaped) != 1 || !strings.HasPrefix(row.Unshaped[0].Reason, GapCaptureMismatch) ||
			row.Unshaped[0].Kernels != row.Kernels {
			t.Errorf("%s: %d of %d shaped, %+v", b, row.ShapedKernels, row.Kernels, row.Unshaped)
		}
	}
}

// TestCaptureFor: each rank takes the capture trace of its rank (the
// only one when a rank is unknown), and a capture no rank takes is
// warned about by path.
func TestCaptureFor(t *testing.T) {
	tr := func(path string, rank int) *ingest.Trace { return &ingest.Trace{Path: path, Rank: rank} }
	cases := []struct {
		name     string
		ranks    []int
		captures []*ingest.Trace
		want     []int // index into captures of each pass's, -1 for none
		warned   []string
	}{
		{"by rank", []int{0, 1}, []*ingest.Trace{tr("c1", 1), tr("c0", 0)}, []int{1, 0}, nil},
		{"one of an unknown rank", []int{0}, []*ingest.Trace{tr("c", -1)}, []int{0}, nil},
		{"a rank without a trace", []int{0}, []*ingest.Trace{tr("c0", 0), tr("c3", 3)}, []int{0}, []string{"c3"}},
		{"two unknown", []int{-1}, []*ingest.Trace{tr("a", -1), tr("b", -1)}, []int{-1}, []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var passes []*rankPass
			for i, r := range c.ranks {
				p := &rankPass{t: tr(fmt.Sprint("trace", i), r)}
				p.capture = captureFor(p.t, c.captures)
				passes = append(passes, p)
			}
			w := captureWarnings(passes, c.captures)
			for i, p := range passes {
				if want := c.want[i]; (want < 0 && p.capture != nil) || (want >= 0 && p.capture != c.captures[want]) {
					t.Errorf("rank %d took %v, want capture %d", c.ranks[i], p.capture, want)
				}
			}
			if len(w) != len(c.warned) {
				t.Fatalf("warnings %q, want about %q", w, c.warned)
			}
			for i, path := range c.warned {
				if !strings.HasPrefix(w[i], path+": ") {
					t.Errorf("warning %q, want about %s", w[i], path)
				}
			}
		})
	}
}
