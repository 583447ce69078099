package diff

import (
	"testing"

	"kinetoscope/analyze"
)

// TestCompareMetadata: the GPUs differ, the world size does not, every
// version key of either side gets a row with the distinct values of its
// ranks, and a self-diff differs nowhere.
func TestCompareMetadata(t *testing.T) {
	withVersions := func(rk analyze.Rank, v map[string]string) analyze.Rank { rk.Versions = v; return rk }
	steps := decodeSteps(3, 100, 50, 40, 0)
	base := makeReport("a",
		withVersions(makeRank(0, "NVIDIA A100", steps, nil), map[string]string{"nccl": "2.26.6", "torch_version": "2.6.0"}),
		withVersions(makeRank(1, "NVIDIA A100", steps, nil), map[string]string{"nccl": "2.26.6", "torch_version": "2.6.1"}))
	head := makeReport("b",
		withVersions(makeRank(0, "NVIDIA H100", steps, nil), map[string]string{"nccl": "2.28.9", "backend": "nccl"}),
		withVersions(makeRank(1, "NVIDIA H100", steps, nil), map[string]string{"nccl": "2.28.9", "backend": "nccl"}))
	want := []MetaDiff{
		{Key: "gpu", Base: "NVIDIA A100", Head: "NVIDIA H100", Differs: true},
		{Key: "world_size", Base: "2", Head: "2", Differs: false},
		{Key: "backend", Base: "", Head: "nccl", Differs: true},
		{Key: "nccl", Base: "2.26.6", Head: "2.28.9", Differs: true},
		{Key: "torch_version", Base: "2.6.0, 2.6.1", Head: "", Differs: true},
	}
	got := metadataOf(t, base, head)
	for _, w := range want {
		if got[w.Key] != w {
			t.Errorf("metadata %s: %+v, want %+v", w.Key, got[w.Key], w)
		}
	}
	for _, m := range metadataOf(t, base, base) {
		if m.Differs {
			t.Errorf("self-diff: %+v differs", m)
		}
	}
}

// metadataOf compares base and head and returns the metadata rows by key.
func metadataOf(t *testing.T, base, head *analyze.Report) map[string]MetaDiff {
	t.Helper()
	d, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]MetaDiff{}
	for _, m := range d.Metadata {
		got[m.Key] = m
	}
	return got
}
