package diff

import (
	"testing"

	"kinetoscope/analyze"
)

// TestCompareVersions: every version key of either side gets a row, with
// the distinct values of its ranks, and says whether the sides differ.
func TestCompareVersions(t *testing.T) {
	withVersions := func(rk analyze.Rank, v map[string]string) analyze.Rank { rk.Versions = v; return rk }
	steps := decodeSteps(3, 100, 50, 40, 0)
	base := makeReport("a",
		withVersions(makeRank(0, "H100", steps, nil), map[string]string{"nccl": "2.26.6", "torch_version": "2.6.0"}),
		withVersions(makeRank(1, "H100", steps, nil), map[string]string{"nccl": "2.26.6", "torch_version": "2.6.1"}))
	head := makeReport("b",
		withVersions(makeRank(0, "H100", steps, nil), map[string]string{"nccl": "2.28.9", "backend": "nccl"}),
		withVersions(makeRank(1, "H100", steps, nil), map[string]string{"nccl": "2.28.9", "backend": "nccl"}))
	d, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]MetaDiff{}
	for _, m := range d.Metadata {
		got[m.Key] = m
	}
	want := []MetaDiff{
		{Key: "backend", Base: "", Head: "nccl", Differs: true},
		{Key: "nccl", Base: "2.26.6", Head: "2.28.9", Differs: true},
		{Key: "torch_version", Base: "2.6.0, 2.6.1", Head: "", Differs: true},
		{Key: "gpu", Base: "H100", Head: "H100", Differs: false},
	}
	for _, w := range want {
		if got[w.Key] != w {
			t.Errorf("metadata %s: %+v, want %+v", w.Key, got[w.Key], w)
		}
	}
	self, err := Compare(base, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range self.Metadata {
		if m.Differs {
			t.Errorf("self-diff: %+v differs", m)
		}
	}
}
