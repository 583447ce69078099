package analyze

import (
	"encoding/json"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// WithLink gives the report that Analyze gives with that link, whatever
// link the report was made with, on real multi-rank runs.
func TestWithLink(t *testing.T) {
	for _, variant := range []string{"p2p_disabled", "nccl_simple"} {
		set, err := ingest.Open(testkit.Real(t, variant), ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		links := []string{"", "pcie5x16", "nvlink3", "120"}
		want := map[string]string{}
		for _, l := range links {
			r, err := Analyze(set, Options{Link: l})
			if err != nil {
				t.Fatal(err)
			}
			want[l] = reportJSON(t, r)
			if r.Bandwidth == nil || r.Bandwidth.Peak == nil {
				t.Fatalf("%s --link %q: no bandwidth peak to compare", variant, l)
			}
		}
		if want[""] == want["pcie5x16"] {
			t.Fatalf("%s: the link changes nothing in the report", variant)
		}
		for _, from := range links {
			base, err := Analyze(set, Options{Link: from})
			if err != nil {
				t.Fatal(err)
			}
			before := reportJSON(t, base)
			for _, to := range links {
				r, err := WithLink(base, to)
				if err != nil {
					t.Fatal(err)
				}
				if got := reportJSON(t, r); got != want[to] {
					t.Errorf("%s: WithLink(report of --link %q, %q) differs from Analyze with --link %q", variant, from, to, to)
				}
			}
			if reportJSON(t, base) != before {
				t.Errorf("%s: WithLink changed the report it was given", variant)
			}
		}
	}
	if _, err := WithLink(&Report{Bandwidth: &Bandwidth{}}, "fast"); err == nil {
		t.Error("WithLink accepts the link \"fast\"")
	}
}

func reportJSON(t *testing.T, r *Report) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
