package diff

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"kinetoscope/analyze"
)

func TestCompareSteps(t *testing.T) {
	tests := []struct {
		name        string
		base, head  *analyze.Report
		wantSig     bool
		wantVerdict string
		wantPhase   string
		wantTop     analyze.BucketID
	}{
		{
			name:        "allreduce faster",
			base:        makeReport("a", makeRank(0, "H100", decodeSteps(20, 21700, 11170, 8000, 200), nil)),
			head:        makeReport("b", makeRank(0, "H100", decodeSteps(20, 12400, 2100, 8000, 200), nil)),
			wantSig:     true,
			wantVerdict: verdictSignificant,
			wantPhase:   "decode",
			wantTop:     analyze.AllReduce,
		},
		{
			name:        "same run",
			base:        makeReport("a", makeRank(0, "H100", decodeSteps(20, 21700, 11170, 8000, 200), nil)),
			head:        makeReport("a", makeRank(0, "H100", decodeSteps(20, 21700, 11170, 8000, 200), nil)),
			wantVerdict: verdictNoise,
			wantPhase:   "decode",
		},
		{
			name:        "shift inside noise",
			base:        makeReport("a", makeRank(0, "H100", decodeSteps(20, 21700, 11170, 8000, 3000), nil)),
			head:        makeReport("b", makeRank(0, "H100", decodeSteps(19, 21750, 11220, 8000, 3000), nil)),
			wantVerdict: verdictNoise,
			wantPhase:   "decode",
			wantTop:     analyze.AllReduce,
		},
		{
			name:        "shift below floor",
			base:        makeReport("a", makeRank(0, "H100", decodeSteps(20, 21700, 11170, 8000, 0), nil)),
			head:        makeReport("b", makeRank(0, "H100", decodeSteps(20, 21750, 11220, 8000, 0), nil)),
			wantVerdict: verdictFloor,
			wantPhase:   "decode",
			wantTop:     analyze.AllReduce,
		},
		{
			name:        "two steps",
			base:        makeReport("a", makeRank(0, "H100", decodeSteps(2, 21700, 11170, 8000, 0), nil)),
			head:        makeReport("b", makeRank(0, "H100", decodeSteps(20, 12400, 2100, 8000, 0), nil)),
			wantVerdict: verdictFewSteps,
			wantPhase:   "decode",
			wantTop:     analyze.AllReduce,
		},
		{
			name:        "no decode steps",
			base:        makeReport("a", makeRank(0, "A100", relabel(decodeSteps(5, 1000, 500, 400, 0), "unknown"), nil)),
			head:        makeReport("b", makeRank(0, "V100", relabel(decodeSteps(5, 2000, 500, 1400, 0), "unknown"), nil)),
			wantSig:     true,
			wantVerdict: verdictSignificant,
			wantPhase:   "all",
			wantTop:     analyze.GEMM,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(tt.base, tt.head, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if d.Step.Significant != tt.wantSig || d.Step.Verdict != tt.wantVerdict {
				t.Errorf("step significant=%v verdict=%q, want %v %q (ci %.1f..%.1f)",
					d.Step.Significant, d.Step.Verdict, tt.wantSig, tt.wantVerdict, d.Step.CILowUS, d.Step.CIHighUS)
			}
			if d.Phase != tt.wantPhase {
				t.Errorf("phase %q, want %q", d.Phase, tt.wantPhase)
			}
			if tt.wantTop != "" && d.BucketOrder[0] != tt.wantTop {
				t.Errorf("largest change %q, want %q", d.BucketOrder[0], tt.wantTop)
			}
			for id, b := range d.Buckets {
				if tt.base == tt.head || tt.wantVerdict == verdictNoise && id == analyze.GEMM {
					if b.Significant {
						t.Errorf("bucket %s significant in a run without change: %+v", id, b)
					}
				}
			}
		})
	}
}

// relabel sets the phase of every step.
func relabel(ss []stepSpec, phase string) []stepSpec {
	for i := range ss {
		ss[i].phase = phase
	}
	return ss
}

func TestCompareBucketFigures(t *testing.T) {
	base := makeReport("a", makeRank(0, "H100", decodeSteps(4, 20000, 10000, 5000, 0), nil))
	head := makeReport("b", makeRank(0, "H100", decodeSteps(4, 15000, 5000, 5000, 0), nil))
	d, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ar := d.Buckets[analyze.AllReduce]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"base us/step", ar.BaseUSPerStep, 10000},
		{"head us/step", ar.HeadUSPerStep, 5000},
		{"delta us", ar.DeltaUS, -5000},
		{"delta pct", ar.DeltaPct, -50},
		{"calls/step", ar.BaseCallsPerStep, 10},
		{"base share", ar.BaseShare, 100 * 10000.0 / 15000},
		{"head share", ar.HeadShare, 50},
		{"gemm delta", d.Buckets[analyze.GEMM].DeltaUS, 0},
		{"step delta pct", d.Step.DeltaPct, -25},
		{"step p90", d.Step.BaseP90US, 20000},
		{"idle", d.Step.BaseIdleUS, 5000},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !ar.Significant || d.Buckets[analyze.GEMM].Significant {
		t.Errorf("allreduce significant=%v, gemm significant=%v; want true, false", ar.Significant, d.Buckets[analyze.GEMM].Significant)
	}
}

func TestComparePooledRanks(t *testing.T) {
	// Rank 1 waits longer at AllReduce: pooled figures are the rank mean.
	base := makeReport("a",
		makeRank(0, "H100", decodeSteps(5, 20000, 10000, 5000, 0), nil),
		makeRank(1, "H100", decodeSteps(5, 20000, 12000, 5000, 0), nil))
	head := makeReport("b",
		makeRank(0, "H100", decodeSteps(5, 20000, 4000, 5000, 0), nil),
		makeRank(1, "H100", decodeSteps(5, 20000, 6000, 5000, 0), nil))
	one := 1
	tests := []struct {
		name     string
		rank     *int
		wantBase float64
		wantN    int
	}{
		{"pooled", nil, 11000, 5},
		{"rank 1", &one, 12000, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(base, head, Options{Rank: tt.rank})
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Buckets[analyze.AllReduce].BaseUSPerStep; got != tt.wantBase {
				t.Errorf("allreduce base %v, want %v", got, tt.wantBase)
			}
			if d.Base.Steps != tt.wantN {
				t.Errorf("samples %d, want %d", d.Base.Steps, tt.wantN)
			}
		})
	}
	seven := 7
	if _, err := Compare(base, head, Options{Rank: &seven}); err == nil || !strings.Contains(err.Error(), "no rank 7") {
		t.Errorf("rank 7: err %v, want one naming the missing rank", err)
	}
	if _, err := Compare(nil, head, Options{}); err == nil {
		t.Error("nil base: no error")
	}
}

func TestCompareDeterministic(t *testing.T) {
	base := makeReport("a", makeRank(0, "H100", decodeSteps(30, 20000, 10000, 5000, 900), nil))
	head := makeReport("b", makeRank(0, "H100", decodeSteps(30, 19500, 9500, 5000, 900), nil))
	var outs []string
	for range 2 {
		d, err := Compare(base, head, Options{})
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(d)
		outs = append(outs, string(j))
	}
	if outs[0] != outs[1] {
		t.Error("two Compare calls on the same input differ")
	}
}

func TestContractJSON(t *testing.T) {
	base := makeReport("a", makeRank(0, "H100", decodeSteps(3, 100, 50, 40, 0), nil))
	d, err := Compare(base, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	paths := [][]string{
		{"base", "path"}, {"base", "ranks"}, {"base", "decode_steps"}, {"head", "path"},
		{"step", "base_us"}, {"step", "head_us"}, {"step", "delta_pct"}, {"step", "significant"},
		{"buckets", "allreduce", "base_us_per_step"}, {"buckets", "allreduce", "head_us_per_step"},
		{"buckets", "allreduce", "delta_us"}, {"buckets", "allreduce", "delta_pct"}, {"buckets", "allreduce", "significant"},
		{"kernels", "added"}, {"kernels", "removed"}, {"kernels", "changed"}, {"metadata"},
	}
	for _, p := range paths {
		var cur any = m
		for _, k := range p {
			obj, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q", p, k)
			}
			if cur, ok = obj[k]; !ok {
				t.Fatalf("JSON lacks %v", p)
			}
		}
		if p[len(p)-1] == "significant" {
			if _, ok := cur.(bool); !ok {
				t.Errorf("%v is %T, want bool", p, cur)
			}
		}
	}
}

// withComm sets every step's transfer/wait split.
func withComm(r *analyze.Report, transfer, wait float64) *analyze.Report {
	for i := range r.Ranks {
		for j := range r.Ranks[i].Steps {
			r.Ranks[i].Steps[j].Comm = &analyze.Comm{KernelUS: transfer + wait, TransferUS: transfer, WaitUS: wait}
		}
	}
	return r
}

func TestCompareComm(t *testing.T) {
	steps := func() *analyze.Report {
		return makeReport("a", makeRank(0, "H100", decodeSteps(4, 10000, 4000, 5000, 0), nil))
	}
	tests := []struct {
		name       string
		base, head *analyze.Report
		want       *CommDiff
	}{
		{"less wait", withComm(steps(), 1000, 3000), withComm(steps(), 1000, 500),
			&CommDiff{BaseKernelUS: 4000, HeadKernelUS: 1500, BaseTransferUS: 1000, HeadTransferUS: 1000,
				BaseWaitUS: 3000, HeadWaitUS: 500, DeltaWait: -2500}},
		{"head without split", withComm(steps(), 1000, 3000), steps(), nil},
		{"split all zero", withComm(steps(), 0, 0), withComm(steps(), 0, 0), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(tt.base, tt.head, Options{})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == nil && d.Comm != nil:
				t.Errorf("comm %+v, want none", d.Comm)
			case tt.want != nil && (d.Comm == nil || *d.Comm != *tt.want):
				t.Errorf("comm %+v, want %+v", d.Comm, tt.want)
			}
		})
	}
}

func TestComparePhaseOption(t *testing.T) {
	r := makeReport("a", makeRank(0, "H100", append(decodeSteps(3, 100, 50, 40, 0),
		relabel(decodeSteps(4, 900, 50, 800, 0), "prefill")...), nil))
	tests := []struct {
		phase   string
		wantN   int
		wantErr bool
	}{
		{"", 3, false},
		{"decode", 3, false},
		{"prefill", 4, false},
		{"all", 7, false},
		{"decod", 0, true},
	}
	for _, tt := range tests {
		d, err := Compare(r, r, Options{Phase: tt.phase})
		if (err != nil) != tt.wantErr {
			t.Fatalf("phase %q: err %v, want error %v", tt.phase, err, tt.wantErr)
		}
		if err == nil && d.Base.Steps != tt.wantN {
			t.Errorf("phase %q: %d steps compared, want %d", tt.phase, d.Base.Steps, tt.wantN)
		}
	}
}

func TestCompareEdgeCases(t *testing.T) {
	empty := makeReport("empty", makeRank(0, "", nil, nil))
	full := makeReport("full", makeRank(0, "H100", decodeSteps(5, 100, 50, 40, 0), nil))
	tests := []struct {
		name       string
		base, head *analyze.Report
		wantErr    string
	}{
		{"no steps either side", empty, empty, ""},
		{"no steps in base", empty, full, ""},
		{"no ranks", makeReport("none"), full, "none: no ranks analysed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(tt.base, tt.head, Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Step.Significant || d.Step.Verdict != verdictFewSteps {
				t.Errorf("step %+v, want not enough steps", d.Step)
			}
			if _, err := json.Marshal(d); err != nil {
				t.Errorf("marshal: %v", err)
			}
		})
	}
}
