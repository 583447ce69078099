package diff

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Defaults of the noise test.
const (
	defaultResamples = 2000
	defaultSeed      = 1
	confidence       = 95.0
	floorUS          = 1.0 // a change smaller than this is never significant
	floorPct         = 1.0 // nor one smaller than this share of the base
	minSteps         = 3   // fewer samples a side: not enough steps
)

// Verdicts of a noise test.
const (
	verdictSignificant = "significant"
	verdictNoise       = "within noise"
	verdictFloor       = "below floor"
	verdictFewSteps    = "not enough steps"
)

// mean returns the mean of xs, 0 for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentile returns the p-th percentile (0..100) of xs by linear
// interpolation between closest ranks, 0 for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// pct returns 100*d/base, or 0 when base is 0.
func pct(d, base float64) float64 {
	if base == 0 {
		return 0
	}
	return 100 * d / base
}

// tester runs the bootstrap test with a fixed seed, so the same inputs give
// the same intervals.
type tester struct {
	resamples int
	seed      uint64
}

// test compares the means of base and head samples of one figure.
func (t tester) test(base, head []float64) Test {
	return t.testAll([][]float64{base}, [][]float64{head})[0]
}

// testAll compares the means of several figures, base[m] and head[m] being
// figure m's samples (one per step, the same steps for every figure): a
// percentile bootstrap confidence interval of mean(head) - mean(base), each
// side's steps resampled with replacement, one draw of steps serving every
// figure. A change is significant when its interval excludes zero and
// |delta| exceeds both floors.
func (t tester) testAll(base, head [][]float64) []Test {
	out := make([]Test, len(base))
	if len(base) == 0 || len(base[0]) < minSteps || len(head[0]) < minSteps {
		for m := range out {
			out[m].Verdict = verdictFewSteps
		}
		return out
	}
	rng := rand.New(rand.NewPCG(t.seed, t.seed^0x9e3779b97f4a7c15))
	diffs := make([][]float64, len(base))
	for m := range diffs {
		diffs[m] = make([]float64, t.resamples)
	}
	mb, mh := make([]float64, len(base)), make([]float64, len(head))
	for r := range t.resamples {
		resampledMeans(rng, head, mh)
		resampledMeans(rng, base, mb)
		for m := range diffs {
			diffs[m][r] = mh[m] - mb[m]
		}
	}
	for m := range out {
		out[m] = verdict(diffs[m], mean(base[m]), mean(head[m]))
	}
	return out
}

// verdict judges a change from its bootstrap differences.
func verdict(diffs []float64, mb, mh float64) Test {
	alpha := (100 - confidence) / 2
	res := Test{CILowUS: percentile(diffs, alpha), CIHighUS: percentile(diffs, 100-alpha)}
	d := mh - mb
	switch {
	case res.CILowUS <= 0 && res.CIHighUS >= 0:
		res.Verdict = verdictNoise
	case math.Abs(d) <= floorUS || math.Abs(d) <= floorPct/100*math.Abs(mb):
		res.Verdict = verdictFloor
	default:
		res.Verdict = verdictSignificant
		res.Significant = true
	}
	return res
}

// resampledMeans draws len(xs[0]) steps with replacement and sets means[m]
// to figure m's mean over them.
func resampledMeans(rng *rand.Rand, xs [][]float64, means []float64) {
	clear(means)
	n := len(xs[0])
	for range n {
		i := rng.IntN(n)
		for m := range xs {
			means[m] += xs[m][i]
		}
	}
	for m := range means {
		means[m] /= float64(n)
	}
}
