package ingest

import (
	"testing"
)

// TestRetainedPerKeptEvent checks the memory budget of the model: at most
// 150 bytes per kept event on the public traces with the most events.
func TestRetainedPerKeptEvent(t *testing.T) {
	for _, name := range []string{"hta-diff-control-a100.json.gz", "hta-diff-test-v100.json.gz", "hta-ns-resolution-rank-0.pt.trace.json.gz"} {
		tr, err := ReadFile(publicTrace(t, name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		kept := tr.KeptEvents()
		if kept < 10000 {
			t.Fatalf("%s: only %d kept events", name, kept)
		}
		if per := float64(tr.RetainedBytes()) / float64(kept); per > 150 {
			t.Errorf("%s: %.1f bytes per kept event, want <= 150", name, per)
		}
	}
}
