package render

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// niceTicks labels an axis at 1, 2 or 5 times a power of ten, aiming at
// about Want labelled ticks (default 6), with an unlabelled minor tick
// between labelled ones. Integer keeps only whole values (step indices).
type niceTicks struct {
	Want    int
	Integer bool
}

// Ticks implements plot.Ticker.
func (n niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: trimFloat(lo, 0)}}
	}
	want := n.Want
	if want <= 0 {
		want = 6
	}
	step := niceStep((hi - lo) / float64(want))
	if n.Integer {
		step = max(step, 1)
	}
	dec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var out []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, plot.Tick{Value: v, Label: trimFloat(v, dec)})
		if m := v + step/2; m <= hi && (!n.Integer || m == math.Trunc(m)) {
			out = append(out, plot.Tick{Value: m})
		}
	}
	return out
}

// niceStep returns the step of 1, 2 or 5 times a power of ten closest to
// raw = range / wanted labels, in number of labels.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	best := p
	for _, m := range []float64{2, 5, 10} {
		if math.Abs(raw/(m*p)-1) < math.Abs(raw/best-1) {
			best = m * p
		}
	}
	return best
}

// trimFloat formats v with dec decimals, -0 as 0.
func trimFloat(v float64, dec int) string {
	if math.Abs(v) < 1e-12 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}
