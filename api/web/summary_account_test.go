package web

import (
	"regexp"
	"strings"
	"testing"

	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/render"
)

// TestSummaryUsesHeadlineFigures checks that the run list's finding states
// only figures the run page's headline states too (issue 24: the list said
// "wait 65.0%", a mean over ranks, where the page said 93.7% for one rank).
func TestSummaryUsesHeadlineFigures(t *testing.T) {
	for _, sample := range []string{"eager", "cudagraph", "pair_host_delay"} {
		run, err := driver.Analyze(ingest.FromPath(testkit.Real(t, sample)), driver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum := summarize(run.Report)
		head := render.HeadlineText(run.Report)
		figures := regexp.MustCompile(`\d+\.\d+%?`).FindAllString(sum.Finding, -1)
		if len(figures) < 2 {
			t.Errorf("%s: finding %q states %d figures", sample, sum.Finding, len(figures))
		}
		for _, f := range figures {
			if !strings.Contains(head, f) {
				t.Errorf("%s: the run list's %s is not in the headline\nlist: %s\nheadline: %s", sample, f, sum.Finding, head)
			}
		}
	}
}
