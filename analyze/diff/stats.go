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

// test compares the means of base and head samples: a percentile bootstrap
// confidence interval of mean(head) - mean(base), each side resampled with
// replacement. The change is significant when the interval excludes zero and
// |delta| exceeds both floors.
func (t tester) test(base, head []float64) Test {
	if len(base) < minSteps || len(head) < minSteps {
		return Test{Verdict: verdictFewSteps}
	}
	rng := rand.New(rand.NewPCG(t.seed, t.seed^0x9e3779b97f4a7c15))
	diffs := make([]float64, t.resamples)
	for i := range diffs {
		diffs[i] = resampledMean(rng, head) - resampledMean(rng, base)
	}
	alpha := (100 - confidence) / 2
	res := Test{CILowUS: percentile(diffs, alpha), CIHighUS: percentile(diffs, 100-alpha)}
	mb := mean(base)
	d := mean(head) - mb
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

// resampledMean is the mean of len(xs) draws from xs with replacement.
func resampledMean(rng *rand.Rand, xs []float64) float64 {
	s := 0.0
	for range xs {
		s += xs[rng.IntN(len(xs))]
	}
	return s / float64(len(xs))
}
