package render

import (
	"strings"
	"testing"

	"kinetoscope/analyze"
)

// A total "% span" over 100% is explained, with the busy share beside it;
// one at or under 100% needs no explanation.
func TestSpanOverlapNote(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    analyze.PhaseSummary
		want string
	}{
		{"overlapping streams", analyze.PhaseSummary{KernelUS: 1086, SpanUS: 1000, BusyUS: 841}, "108.6% of the span"},
		{"busy share", analyze.PhaseSummary{KernelUS: 1086, SpanUS: 1000, BusyUS: 841}, "busy (their union) 84.1%"},
		{"under the span", analyze.PhaseSummary{KernelUS: 900, SpanUS: 1000, BusyUS: 900}, ""},
		{"equal", analyze.PhaseSummary{KernelUS: 1000, SpanUS: 1000, BusyUS: 1000}, ""},
		{"no span", analyze.PhaseSummary{KernelUS: 10}, ""},
	} {
		got := SpanOverlapNote(tc.p)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
