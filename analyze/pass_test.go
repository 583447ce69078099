package analyze

import (
	"reflect"
	"slices"
	"testing"

	"kinetoscope/ingest"
)

// TestAssignInRanges checks that assigning each GPU event its launch, step
// and bucket in ranges side by side gives what one pass over the events
// gives, on every real sample and public trace with GPU events, cut into 1,
// 2, 7 and 64 ranges (as many as it has events, at most).
func TestAssignInRanges(t *testing.T) {
	cls, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		StepOf, LaunchAt []int32
		BucketOf         []uint8
		Delays           []int64
		LastGEMM         map[int64]int64
		ReplayStart      map[int32]int64
		NoLaunch         int
	}
	of := func(p *rankPass) state {
		return state{p.stepOf, p.launchAt, p.bucketOf, p.delays, p.lastGEMM, p.replayStart, p.noLaunch}
	}
	for _, path := range accountTraces(t) {
		set, err := ingest.Open(path, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range set.Traces {
			p := stepPass(tr, cls, nil)
			n := tr.GPU.Len()
			p.assignIn(assignParts(n, 1, 1))
			want := of(p)
			for _, k := range []int{2, 7, 64} {
				p.assignIn(assignParts(n, k, 1))
				if got := of(p); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: in %d ranges the events' launches, steps and buckets differ from one pass's", tr.Path, k)
				}
			}
		}
	}
}

// TestAssignParts checks the ranges' bounds: in order, from 0 to n, one a
// core of at least the least events, one at least.
func TestAssignParts(t *testing.T) {
	for _, c := range []struct{ n, cores, least, want int }{
		{0, 16, 1 << 15, 1}, {100, 16, 1 << 15, 1}, {1 << 20, 16, 1 << 15, 16}, {1 << 16, 16, 1 << 15, 2}, {10, 4, 1, 4},
	} {
		parts := assignParts(c.n, c.cores, c.least)
		if len(parts)-1 != c.want || parts[0] != 0 || parts[len(parts)-1] != c.n {
			t.Errorf("assignParts(%d, %d, %d) = %v, want %d ranges from 0 to %d", c.n, c.cores, c.least, parts, c.want, c.n)
		}
		for i := 1; i < len(parts); i++ {
			if parts[i] < parts[i-1] {
				t.Errorf("assignParts(%d, %d, %d) = %v: not in order", c.n, c.cores, c.least, parts)
			}
		}
	}
}

// TestFoldsAndAccountsInRanges checks that the layer fold and the step
// accounts worked on in 2, 7 and 64 ranges of steps are those of one range,
// on every real and public trace.
func TestFoldsAndAccountsInRanges(t *testing.T) {
	cls, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	accounts := func(rk Rank, p *rankPass, k int) []*Account {
		rk.Steps = slices.Clone(rk.Steps)
		addAccountsIn(&rk, p, nil, nil, Options{}, k, 1)
		out := []*Account{rk.Decode.Account}
		for _, s := range rk.Steps {
			out = append(out, s.Account)
		}
		return out
	}
	for _, path := range accountTraces(t) {
		set, err := ingest.Open(path, ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range set.Traces {
			rk, p := analyzeTrace(tr, set.Captures, cls, nil, Options{}, nil)
			folds, acc := p.layerFoldsIn(rk.Steps, 1, 1), accounts(rk, p, 1)
			if !reflect.DeepEqual(folds, rk.Layers) {
				t.Errorf("%s: the fold in one range differs from the analysis's", tr.Path)
			}
			for _, k := range []int{2, 7, 64} {
				if got := p.layerFoldsIn(rk.Steps, k, 1); !reflect.DeepEqual(got, folds) {
					t.Errorf("%s: the fold in %d ranges differs from one range's", tr.Path, k)
				}
				if got := accounts(rk, p, k); !reflect.DeepEqual(got, acc) {
					t.Errorf("%s: the accounts in %d ranges differ from one range's", tr.Path, k)
				}
			}
		}
	}
}
