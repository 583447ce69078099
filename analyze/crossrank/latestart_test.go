package crossrank

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/sampletraces"
)

// genericTrace is a trace file read with encoding/json into plain maps, so
// that a test can drop events and write it back.
type genericTrace map[string]any

func readGeneric(t *testing.T, path string) genericTrace {
	t.Helper()
	var g genericTrace
	if err := sampletraces.ReadJSON(path, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g genericTrace) events() []any { return g["traceEvents"].([]any) }

func num(m map[string]any, k string) float64 {
	v, _ := m[k].(float64)
	return v
}

// ncclSpans returns the (start, end) of the NCCL kernels of g in µs of its
// own ts, ordered by start.
func (g genericTrace) ncclSpans() [][2]float64 {
	var out [][2]float64
	for _, e := range g.events() {
		m := e.(map[string]any)
		if m["ph"] == "X" && m["cat"] == "kernel" && strings.Contains(strings.ToLower(m["name"].(string)), "nccl") {
			out = append(out, [2]float64{num(m, "ts"), num(m, "ts") + num(m, "dur")})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// lateStart returns g as if its profiler had started cut µs (a whole
// number) later: every timed event that begins before cut is dropped, the
// others are moved cut earlier and baseTimeNanoseconds cut later (a
// profiler's base is its own start). It returns how many NCCL kernels went.
func (g genericTrace) lateStart(t *testing.T, cut float64) (genericTrace, int) {
	t.Helper()
	out := genericTrace{}
	for k, v := range g {
		out[k] = v
	}
	var kept []any
	dropped := 0
	for _, e := range g.events() {
		m := e.(map[string]any)
		ts, timed := m["ts"].(float64)
		if !timed || m["ph"] == "M" {
			kept = append(kept, m)
			continue
		}
		if ts < cut {
			if m["ph"] == "X" && m["cat"] == "kernel" && strings.Contains(strings.ToLower(m["name"].(string)), "nccl") {
				dropped++
			}
			continue
		}
		c := make(map[string]any, len(m))
		for k, v := range m {
			c[k] = v
		}
		c["ts"] = ts - cut
		kept = append(kept, c)
	}
	out["traceEvents"] = kept
	out["baseTimeNanoseconds"] = num(g, "baseTimeNanoseconds") + cut*1000
	return out, dropped
}

func (g genericTrace) ingest(t *testing.T, name string) *ingest.Trace {
	t.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ingest.Read(bytes.NewReader(b), name, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// twoRanks returns the rank 0 and rank 1 traces of a bundled two-rank
// sample.
func twoRanks(t *testing.T, variant string) []string {
	t.Helper()
	dir, err := sampletraces.RealDir(variant)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(paths) != 2 {
		t.Fatalf("%s: want 2 traces, got %v (%v)", dir, paths, err)
	}
	sort.Strings(paths)
	return paths
}

// TestLateProfilerStart cuts the start off rank 1 of each bundled two-rank
// sample, as if its profiler had started later: at the collective that
// rank 0 began longest before rank 1 did, halfway between their starts,
// so that rank 0's collective began before rank 1's trace and ends inside
// it. Nothing may shift: every collective pairs as in the whole trace,
// less those whose rank 1 kernel was cut.
func TestLateProfilerStart(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		t.Run(variant, func(t *testing.T) {
			paths := twoRanks(t, variant)
			g0, g1 := readGeneric(t, paths[0]), readGeneric(t, paths[1])
			k0, k1 := g0.ncclSpans(), g1.ncclSpans()
			first, lead := -1, 0.0
			for i := range min(len(k0), len(k1)) {
				if d := k1[i][0] - k0[i][0]; d > lead {
					first, lead = i, d
				}
			}
			if first < 0 || lead < 1 {
				t.Fatal("rank 0 starts no collective before rank 1")
			}
			cut := math.Floor((k0[first][0] + k1[first][0]) / 2)
			t0 := g0.ingest(t, paths[0])
			whole, err := Align([]*ingest.Trace{t0, g1.ingest(t, paths[1])}, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			late, dropped := g1.lateStart(t, cut)
			a, err := Align([]*ingest.Trace{t0, late.ingest(t, paths[1])}, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if dropped != first || k0[first][0] >= cut || k0[first][1] <= cut {
				t.Fatalf("cut at %.0f µs dropped %d collectives of rank 1, want %d, with rank 0's #%d (%.0f-%.0f) across it",
					cut, dropped, first, first, k0[first][0], k0[first][1])
			}
			if want := whole.Matched - dropped; a.Matched != want || a.Ranks[1].Matched != want || a.Ranks[0].Matched != want {
				t.Errorf("cut %d of rank 1's collectives: matched %d (rank 0 %d, rank 1 %d), want %d (whole %d); %q",
					dropped, a.Matched, a.Ranks[0].Matched, a.Ranks[1].Matched, want, whole.Matched, a.Mismatches)
			}
		})
	}
}

// TestLongTransferEnds pairs sampletraces/real/p2p_disabled (NCCL through
// host shared memory) with a fixed end tolerance below how far apart its
// long AllReduces end on the two ranks (the 4 MiB ones, about 173 µs, end
// up to 15.6 µs apart): they still pair, by a share of their duration,
// as a 32 MiB one whose ends are 76 µs apart must with the default 50 µs.
func TestLongTransferEnds(t *testing.T) {
	paths := twoRanks(t, "p2p_disabled")
	k0, k1 := readGeneric(t, paths[0]).ncclSpans(), readGeneric(t, paths[1]).ncclSpans()
	var wide int // long collectives whose ends differ by more than the tolerance
	const tol = 5_000
	for i := range k0 {
		if d := math.Abs(k0[i][1]-k1[i][1]) * 1000; d > tol && math.Min(k0[i][1]-k0[i][0], k1[i][1]-k1[i][0]) > 100 {
			wide++
		}
	}
	if wide == 0 {
		t.Fatalf("%s: no collective over 100 µs ends more than %d ns apart on the two ranks", paths[0], tol)
	}
	a, err := Align(readTraces(t, paths...), nil, Options{EndToleranceNS: tol, SharedClockNS: tol})
	if err != nil {
		t.Fatal(err)
	}
	if a.Matched != len(k0) || a.Unmatched != 0 {
		t.Errorf("end tolerance %d ns (%d long collectives end further apart): matched %d, unmatched %d, want %d, 0; %q",
			tol, wide, a.Matched, a.Unmatched, len(k0), a.Mismatches)
	}
}
