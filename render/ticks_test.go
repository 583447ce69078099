package render

import (
	"strings"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		t      niceTicks
		want   string // the labelled ticks
	}{
		{0, 28.3, niceTicks{}, "0 5 10 15 20 25"},
		{0, 0.64, niceTicks{}, "0.0 0.1 0.2 0.3 0.4 0.5 0.6"},
		{-0.6, 2.6, niceTicks{Want: 10, Integer: true}, "0 1 2"},
		{-0.6, 32.6, niceTicks{Want: 10, Integer: true}, "0 5 10 15 20 25 30"},
		{0, 1340, niceTicks{}, "0 200 400 600 800 1000 1200"},
		{3, 3, niceTicks{}, "3"},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range tc.t.Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
			if tk.Value < tc.lo || tk.Value > tc.hi+1e-9 {
				t.Errorf("%v..%v: tick %v out of range", tc.lo, tc.hi, tk.Value)
			}
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%v..%v: ticks %q, want %q", tc.lo, tc.hi, g, tc.want)
		}
	}
}

func TestWrapLines(t *testing.T) {
	long := strings.Repeat("communication 14.15 ms (53.7%), ", 12)
	got := wrapLines([]string{"short", "", long}, 400, noteSize)
	if len(got) < 3 || got[0] != "short" {
		t.Fatalf("wrapLines = %q", got)
	}
	if strings.Join(strings.Fields(strings.Join(got[1:], " ")), " ") != strings.Join(strings.Fields(long), " ") {
		t.Errorf("wrapping lost words: %q", got[1:])
	}
	for _, l := range got {
		if w := textWidth(l, noteSize); w > 400 {
			t.Errorf("line %q is %v pt wide", l, w)
		}
	}
}
