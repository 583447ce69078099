package render

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/internal/testkit"
)

// withFindings returns a copy of r whose checks found something on its
// first rank, and whose headline carries caveats.
func withFindings(r *analyze.Report) *analyze.Report {
	out := *r
	h := *r.Headline
	h.Caveats = []string{"3 kernels overlap on stream 7 (up to 0.08 ms): kernel-time shares are unreliable here", "the profiler dropped 12 activity records"}
	out.Headline = &h
	c := *r.Checks
	c.Ranks = append([]analyze.RankChecks(nil), r.Checks.Ranks...)
	rc := &c.Ranks[0]
	rc.Timing.Overlaps, rc.Timing.OverlapUS = 3, 80
	rc.Timing.Worst = &analyze.Overlap{Stream: 7, Kernel: "gemm_kernel_a", Previous: "norm_kernel_b", OverlapUS: 40, Step: 2}
	rc.Rules.CommLike = []analyze.KernelStat{{Name: "ncclx_all_reduce", Bucket: analyze.Other, Count: 5, US: 50}}
	rc.Truncation.DroppedRecords, rc.Truncation.Messages = 12, []string{"WARNING: Dropped 12 activity records"}
	rc.Truncation.CutStep = &analyze.CutStep{Index: 32, Phase: analyze.PhaseDecode, Kernels: 51, MedianKernels: 120}
	c.Clock = []analyze.ClockProblem{{Rank: 1, Problem: "no clock offset pairs its collectives with the other ranks'"}}
	out.Checks = &c
	return &out
}

// TestChecksRendered: the headline ends with its caveats in every text
// format, and the checks section gives a row per rank and a line per
// finding; a report with nothing found says so.
func TestChecksRendered(t *testing.T) {
	base := analyzeRun(t, testkit.Real(t, "eager"))
	r := withFindings(base)
	writers := map[string]func(io.Writer, *analyze.Report) error{"table": WriteReportText, "markdown": WriteReportMarkdown}
	for format, write := range writers {
		var b bytes.Buffer
		if err := write(&b, r); err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(b.String(), `\_`, "_") // Markdown escapes underscores
		head := strings.ReplaceAll(HeadlineText(r), `\_`, "_")
		if !strings.HasSuffix(head, "Caveats: "+strings.Join(r.Headline.Caveats, "; ")) || !strings.Contains(text, head) {
			t.Errorf("%s: headline %q lacks its caveats", format, head)
		}
		for _, want := range []string{"Checks of the data", "gemm_kernel_a", "norm_kernel_b", "ncclx_all_reduce", "Dropped 12 activity records",
			"Step 32 was cut off", "Clock of rank 1", "3 GPU events overlap"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: no %q in the checks section", format, want)
			}
		}
		if strings.Contains(text, "Nothing found") {
			t.Errorf("%s: says nothing was found", format)
		}
	}
	var b bytes.Buffer
	if err := WriteReportText(&b, base); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Nothing found") || strings.Contains(HeadlineText(base), "Caveat") {
		t.Errorf("clean report: %q", HeadlineText(base))
	}
}
