package render

import (
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
)

// TestStepsScale: the steps chart's y-axis fits the decode steps when a
// prefill step would be more than twice the tallest of them (a warm-up
// prefill of 15x, as 1,290 against 87 ms in a real trace; the real
// cudagraph sample's 7.68 ms prefill span against 3.68 ms), labelling the
// step cut at the top with its span; and fits every step when none is off
// by that much (the real eager sample).
func TestStepsScale(t *testing.T) {
	huge := fakeReport(1, 32, 61)
	rk := &huge.Ranks[0]
	tallest := 0.0
	for _, s := range rk.Steps {
		if s.Phase == analyze.PhaseDecode {
			tallest = max(tallest, s.SpanUS, s.KernelUS)
		}
	}
	for i := range rk.Steps {
		if rk.Steps[i].Phase == analyze.PhasePrefill {
			rk.Steps[i].SpanUS = 15 * tallest
		}
	}
	tests := []struct {
		name string
		r    *analyze.Report
		cut  bool
	}{
		{"15x prefill", huge, true},
		{"cudagraph", reports.Of(t, testkit.Real(t, "cudagraph")), true},
		{"eager", reports.Of(t, testkit.Real(t, "eager")), false},
	}
	for _, tt := range tests {
		rk := &tt.r.Ranks[0]
		sc := stepScale(rk)
		var fit, all float64
		var pre *analyze.Step
		for i := range rk.Steps {
			s := &rk.Steps[i]
			h := max(s.SpanUS, s.KernelUS) / 1000
			all = max(all, h)
			if s.Phase == analyze.PhaseDecode {
				fit = max(fit, h)
			} else if pre == nil || s.SpanUS > pre.SpanUS {
				pre = s
			}
		}
		b, err := Steps(tt.r, -1, SVG)
		if err != nil {
			t.Fatal(err)
		}
		text, err := testkit.SVGText(b)
		if err != nil {
			t.Fatal(err)
		}
		label := "span " + ms(pre.SpanUS) + " ms"
		note := "The y-axis fits the decode steps"
		switch {
		case tt.cut && (sc.ymax != fit || sc.offScale != 1 || !strings.Contains(text, label) || !strings.Contains(text, note)):
			t.Errorf("%s: axis %g ms (decode's tallest %g), %d off scale, label %q and note in the chart: %v %v",
				tt.name, sc.ymax, fit, sc.offScale, label, strings.Contains(text, label), strings.Contains(text, note))
		case !tt.cut && (sc.ymax != all || sc.offScale != 0 || strings.Contains(text, note)):
			t.Errorf("%s: axis %g ms, want every step's tallest %g; %d off scale", tt.name, sc.ymax, all, sc.offScale)
		}
	}
}
