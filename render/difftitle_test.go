package render

import (
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
)

// TestDiffTitleFits: every line of the diff chart's title fits the plot's
// width (a wider line, centred, loses both ends: "ase h100-tp4-..."), and
// a long run name keeps what tells the two runs apart, for names of every
// length.
func TestDiffTitleFits(t *testing.T) {
	const shared = "h100-tp4-llama3-70b-instruct-fp8-bs64-in2048-out128-nccl-"
	tests := []struct{ base, head, want0, want1 string }{
		{"eager", "nccl_simple", "eager", "nccl_simple"},
		{"tracelens-vllm-decode-full-graph.json.gz", "tracelens-vllm-prefilldecode-piecewise.json.gz", "decode-full-graph", "prefilldecode-piecewise"},
		{shared + "ll-base-run-2026-11-30.pt.trace.json.gz", shared + "simple-head-run-2026-12-01.pt.trace.json.gz", "ll-base", "simple-head"},
		{strings.Repeat("a", 300) + "-base", strings.Repeat("b", 300) + "-head", "", ""},
	}
	w := chartWidth - legendWidth - 20
	for _, tt := range tests {
		d := fakeDiff(t)
		d.Base.Path, d.Head.Path = "/runs/"+tt.base, "/runs/"+tt.head
		lines := strings.Split(diffTitle(d), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[1], "base ") || !strings.HasPrefix(lines[2], "head ") {
			t.Fatalf("%s vs %s: title %q", tt.base, tt.head, lines)
		}
		for _, l := range lines {
			if got := textWidth(l, titleSize); got > w {
				t.Errorf("%s vs %s: line %q is %.0f pt wide, the plot %.0f", tt.base, tt.head, l, got, w)
			}
		}
		if !strings.Contains(lines[1], tt.want0) || !strings.Contains(lines[2], tt.want1) {
			t.Errorf("%s vs %s: %q, %q lose %q or %q", tt.base, tt.head, lines[1], lines[2], tt.want0, tt.want1)
		}
		b, err := Diff(d, SVG)
		if err != nil {
			t.Fatal(err)
		}
		text, err := testkit.SVGText(b)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, lines[1]) || !strings.Contains(text, lines[2]) {
			t.Errorf("%s vs %s: the chart does not hold the title lines", tt.base, tt.head)
		}
	}
}
