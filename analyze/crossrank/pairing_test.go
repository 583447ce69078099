package crossrank

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/sampletraces"
	"kinetoscope/sampletraces/synth"
)

// rawCollTrace is the part of a trace file the independent pairing reads
// with encoding/json.
type rawCollTrace struct {
	Events []struct {
		Ph   string  `json:"ph"`
		Cat  string  `json:"cat"`
		Name string  `json:"name"`
		TS   float64 `json:"ts"`
		Args struct {
			PGName  string `json:"Process Group Name"`
			PGRanks string `json:"Process Group Ranks"`
		} `json:"args"`
	} `json:"traceEvents"`
}

// rawKernel is one NCCL kernel of the raw trace.
type rawKernel struct {
	group, name string
	startNS     int64
}

// rawInstances pairs the NCCL kernels of the rank files at paths the way
// the test trusts, from the raw JSON alone: per process group (named in the
// kernel's args; the kernels without args make one group), the k-th
// kernel of every rank in start order is one instance, and the names must
// agree. It returns each instance's kernel start (ns, the trace's own
// time) on every rank.
func rawInstances(t *testing.T, paths []string) [][]int64 {
	t.Helper()
	groups := map[string][][]rawKernel{} // by group, by rank
	for q, p := range paths {
		var rt rawCollTrace
		if err := sampletraces.ReadJSON(p, &rt); err != nil {
			t.Fatal(err)
		}
		for _, e := range rt.Events {
			if e.Ph != "X" || e.Cat != "kernel" || !strings.Contains(strings.ToLower(e.Name), "nccl") {
				continue
			}
			g := e.Args.PGName + " " + e.Args.PGRanks
			if groups[g] == nil {
				groups[g] = make([][]rawKernel, len(paths))
			}
			groups[g][q] = append(groups[g][q], rawKernel{group: g, name: e.Name, startNS: int64(math.Round(e.TS * 1000))})
		}
	}
	var out [][]int64
	for g, byRank := range groups {
		for _, ks := range byRank {
			sort.SliceStable(ks, func(i, j int) bool { return ks[i].startNS < ks[j].startNS })
			if len(ks) != len(byRank[0]) {
				t.Fatalf("group %q: %d kernels on one rank, %d on rank 0", g, len(ks), len(byRank[0]))
			}
		}
		for k := range byRank[0] {
			inst := make([]int64, len(paths))
			for q, ks := range byRank {
				if ks[k].name != byRank[0][k].name {
					t.Fatalf("group %q #%d: %q on rank %d, %q on rank 0", g, k, ks[k].name, q, byRank[0][k].name)
				}
				inst[q] = ks[k].startNS
			}
			out = append(out, inst)
		}
	}
	return out
}

// indexByStart maps each collective's start to its GPU index in t.
func indexByStart(t *testing.T, tr *ingest.Trace) map[int64]int {
	t.Helper()
	m := map[int64]int{}
	for _, i := range collectiveIndices(tr) {
		s := tr.GPU.At(i).Start
		if _, dup := m[s]; dup {
			t.Fatalf("%s: two collectives start at %d", tr.Path, s)
		}
		m[s] = i
	}
	return m
}

// instanceKey writes an instance as its GPU indices by rank.
func instanceKey(idx []int) string { return fmt.Sprint(idx) }

// truthInstances returns the raw pairing as GPU indices of whole.
func truthInstances(t *testing.T, paths []string, whole []*ingest.Trace) [][]int {
	t.Helper()
	var out [][]int
	maps := make([]map[int64]int, len(whole))
	for q, tr := range whole {
		maps[q] = indexByStart(t, tr)
	}
	for _, inst := range rawInstances(t, paths) {
		idx := make([]int, len(inst))
		for q, s := range inst {
			i, ok := maps[q][s]
			if !ok {
				t.Fatalf("rank %d: no collective of the ingested trace starts at %d ns", q, s)
			}
			idx[q] = i
		}
		out = append(out, idx)
	}
	return out
}

// expectedInstances returns the truth instances whose events all survived
// a damage, in the damaged traces' GPU indices.
func expectedInstances(truth [][]int, maps [][]int) map[string]bool {
	back := make([]map[int]int, len(maps))
	for q, m := range maps {
		back[q] = make(map[int]int, len(m))
		for k, orig := range m {
			back[q][orig] = k
		}
	}
	want := map[string]bool{}
	for _, inst := range truth {
		idx := make([]int, len(inst))
		ok := true
		for q, orig := range inst {
			idx[q], ok = back[q][orig]
			if !ok {
				break
			}
		}
		if ok {
			want[instanceKey(idx)] = true
		}
	}
	return want
}

// gotInstances returns the instances Align matched, in GPU indices by
// rank, and checks that each has one transfer on every rank and that every
// rank takes part.
func gotInstances(t *testing.T, a *Alignment) map[string]bool {
	t.Helper()
	byID := map[int][]int{}
	xfer := map[int]int64{}
	for q, r := range a.Ranks {
		for gi, s := range r.All() {
			id, ok := r.Instance(gi)
			if !ok {
				t.Fatalf("rank %d event %d: split but no instance", r.Rank, gi)
			}
			if byID[id] == nil {
				byID[id] = slices.Repeat([]int{-1}, len(a.Ranks))
				xfer[id] = s.TransferNS
			}
			byID[id][q] = gi
			if s.TransferNS != xfer[id] {
				t.Errorf("instance %d: transfer %d ns on rank %d, %d on another", id, s.TransferNS, r.Rank, xfer[id])
			}
		}
	}
	got := map[string]bool{}
	for id, idx := range byID {
		if slices.Contains(idx, -1) {
			t.Errorf("instance %d lacks a rank: %v", id, idx)
		}
		got[instanceKey(idx)] = true
	}
	return got
}

// comparePairing reports the instances matched that the truth lacks and
// the reverse, a few of each.
func comparePairing(t *testing.T, got, want map[string]bool) {
	t.Helper()
	var extra, lost []string
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	for k := range want {
		if !got[k] {
			lost = append(lost, k)
		}
	}
	if len(extra)+len(lost) > 0 {
		sort.Strings(extra)
		sort.Strings(lost)
		t.Errorf("%d instances matched that the raw pairing lacks (%v), %d of the raw pairing not matched (%v)",
			len(extra), extra[:min(len(extra), 3)], len(lost), lost[:min(len(lost), 3)])
	}
}

// TestRealPairing aligns each real two-rank H200 run, as it is and damaged
// in ways that happen to real profiles, and checks that exactly the
// instances of the raw pairing whose events survived the damage are
// matched, with one transfer on every rank, and that what is left
// unmatched is explained with the right reason.
func TestRealPairing(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		paths := realPaths(t, variant)
		whole := readTraces(t, paths...)
		truth := truthInstances(t, paths, whole)
		for _, d := range damages() {
			t.Run(variant+"/"+d.name, func(t *testing.T) { checkDamage(t, whole, truth, d) })
		}
	}
}

// checkDamage applies d to whole, aligns the result and checks that exactly
// the instances of the raw pairing (truth) whose events survived are
// matched, that the rest is counted unmatched, and that the mismatch
// names d's reason.
func checkDamage(t *testing.T, whole []*ingest.Trace, truth [][]int, d damage) {
	t.Helper()
	ts, maps := d.apply(whole)
	a, err := Align(ts, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := expectedInstances(truth, maps)
	events := 0
	for _, tr := range ts {
		events += len(collectiveIndices(tr))
	}
	t.Logf("matched %d unmatched %d clock %s; %q", a.Matched, a.Unmatched, a.Clock, a.Mismatches)
	if a.Matched != len(want) || a.Unmatched != events-len(ts)*len(want) {
		t.Errorf("matched %d unmatched %d, want %d %d", a.Matched, a.Unmatched, len(want), events-len(ts)*len(want))
	}
	comparePairing(t, gotInstances(t, a), want)
	checkMismatch(t, a.Mismatches, d.reason)
}

// damages are the damages TestRealPairing applies, each alone and on
// traces written with epoch times.
func damages() []damage {
	const skew = 280_000_000
	base := []damage{
		{name: "as is", apply: func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) { return editRanks(ts) }},
		{name: "rank 0 waits 280 ms for rank 1 at the first collective", apply: firstWait(1, skew)},
		{name: "rank 1 waits 280 ms for rank 0 at the first collective", apply: firstWait(0, skew)},
		{name: "rank 1 starts 14 collectives late", apply: lateStart(1, 14),
			reason: "rank 0's first 14 collectives are before rank 1's window"},
		{name: "rank 0 starts 3 collectives late", apply: lateStart(0, 3),
			reason: "rank 1's first 3 collectives are before rank 0's window"},
		{name: "rank 0 stops 9 collectives early", apply: earlyStop(0, 9),
			reason: "rank 1's last 9 collectives are after rank 0's window"},
		{name: "rank 1 loses its 150th collective", apply: dropOne(1, 150),
			reason: "1 of rank 0's inside rank 1's window has no counterpart on rank 1"},
		{name: "rank 1 on another host's clock", apply: onOtherHost(1, 3_700_123_457)},
		{name: "rank 1 on another host's clock, 14 collectives late", apply: then(onOtherHost(1, -2_100_000_000), lateStart(1, 14)),
			reason: "rank 0's first 14 collectives are before rank 1's window"},
		{name: "280 ms wait, rank 1 14 late", apply: then(firstWait(1, skew), lateStart(1, 14)),
			reason: "rank 0's first 14 collectives are before rank 1's window"},
	}
	out := base
	for _, d := range base {
		e := d
		e.name = "epoch times, " + d.name
		e.apply = then(d.apply, epochTimes)
		out = append(out, e)
	}
	return out
}

// TestSynthEightRanks pairs an eight-rank synthetic run with long arrival
// skews, decode replayed from CUDA graphs with bare NCCL kernels (no
// collective args, matched by order alone), as generated and damaged on
// several ranks at once, against the raw pairing.
func TestSynthEightRanks(t *testing.T) {
	cfg := synth.DefaultConfig()
	cfg.Layers, cfg.DecodeSteps, cfg.SkewUS, cfg.PythonFunctions = 6, 5, 3000, 0
	cfg.CUDAGraph, cfg.CollectiveArgs = true, false
	dir := t.TempDir()
	if _, err := synth.Generate(dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(paths) != 8 {
		t.Fatalf("traces %v, %v", paths, err)
	}
	whole := readTraces(t, paths...)
	truth := truthInstances(t, paths, whole)
	tests := []damage{
		{name: "as is", apply: func(ts []*ingest.Trace) ([]*ingest.Trace, [][]int) { return editRanks(ts) }},
		{name: "rank 5 starts 7 late, rank 2 stops 4 early", apply: then(lateStart(5, 7), earlyStop(2, 4)),
			reason: "rank 0's first 7 collectives are before rank 5's window"},
		{name: "rank 3 on another host, rank 7 loses one", apply: then(onOtherHost(3, 812_345_678), dropOne(7, 30)),
			reason: "1 of rank 0's inside rank 7's window has no counterpart on rank 7"},
		{name: "all wait 280 ms for rank 1 at the first collective", apply: firstWait(1, 280_000_000)},
	}
	for _, d := range tests {
		t.Run(d.name, func(t *testing.T) { checkDamage(t, whole, truth, d) })
	}
}
