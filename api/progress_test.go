package api

import (
	"testing"

	"kinetoscope/api/store"
	"kinetoscope/ingest"
)

// The progress of a tar.gz run, whose members report their uncompressed
// bytes, never passes its total (it read 2,628,922 of 2,458,828 bytes once).
func TestLiveProgressArchive(t *testing.T) {
	s := &Server{live: map[string]*store.Progress{}}
	s.queue = localQueue{s}
	lp := &liveProgress{s: s, id: "r", bytes: 2_458_828, files: map[string]ingest.Progress{}}
	lp.setStage("reading")
	for _, p := range []ingest.Progress{
		{Path: "prof.tar.gz!rank0.json", Bytes: 1_000_000, TotalBytes: 1_314_461},
		{Path: "prof.tar.gz!rank0.json", Bytes: 1_314_461, TotalBytes: 1_314_461},
		{Path: "prof.tar.gz!rank1.json", Bytes: 1_314_461, TotalBytes: 1_314_461},
	} {
		lp.update(p)
		got := lp.snapshot()
		if got.Bytes > got.TotalBytes {
			t.Fatalf("after %s at %d: %d of %d bytes", p.Path, p.Bytes, got.Bytes, got.TotalBytes)
		}
	}
	if got := lp.snapshot(); got.Bytes != got.TotalBytes || got.TotalBytes != 2_628_922 {
		t.Errorf("done: %d of %d bytes, want all of 2628922", got.Bytes, got.TotalBytes)
	}
}
