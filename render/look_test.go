package render

import (
	"os"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// TestLook writes charts to /tmp for eyeballing (temporary).
func TestLook(t *testing.T) {
	r := fakeReport(8, 32, 61)
	head := fakeReport(8, 32, 61)
	for i := range head.Ranks {
		for j := range head.Ranks[i].Steps {
			b := head.Ranks[i].Steps[j].Buckets[analyze.AllReduce]
			b.US *= 0.5 + 0.01*float64(j%5)
			head.Ranks[i].Steps[j].Buckets[analyze.AllReduce] = b
		}
	}
	d, err := diff.Compare(r, head, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{PNG, SVG} {
		for name, fn := range map[string]func() ([]byte, error){
			"breakdown": func() ([]byte, error) { return Breakdown(r, f) },
			"steps":     func() ([]byte, error) { return Steps(r, 3, f) },
			"ranks":     func() ([]byte, error) { return Ranks(r, f) },
			"ranks1":    func() ([]byte, error) { return Ranks(fakeReport(1, 32, 61), f) },
			"timeline":  func() ([]byte, error) { return Timeline(fakeTimeline(61), f) },
			"diff":      func() ([]byte, error) { return Diff(d, f) },
		} {
			b, err := fn()
			if err != nil {
				t.Fatal(name, err)
			}
			os.WriteFile("/tmp/"+name+"."+string(f), b, 0o644)
		}
	}
}
