package diff

import (
	"fmt"
	"math"
	"slices"

	"kinetoscope/analyze"
)

// CostModelDiff compares the two runs' cost models of the phase
// (Rank.CostModel): per fitted time (the step span, each bucket) the
// slope against each regressor both fitted, before and after.
type CostModelDiff struct {
	Phase string `json:"phase"`
	// BaseRank and HeadRank are the ranks whose models are compared: the
	// first selected rank with a fit on each side.
	BaseRank int `json:"base_rank"`
	HeadRank int `json:"head_rank"`
	// Regressors are those both sides fitted against; Note says why
	// nothing was compared (a side without a fit, no regressor in common).
	Regressors []string `json:"regressors,omitempty"`
	// Unshared names the regressors one side only fitted against ("context
	// (base only)"): the shared slopes then come from different models.
	Unshared []string      `json:"unshared,omitempty"`
	Note     string        `json:"note,omitempty"`
	Fits     []CostFitDiff `json:"fits,omitempty"`
}

// CostFitDiff is one fitted time's slopes, base vs head.
type CostFitDiff struct {
	Target      string      `json:"target"` // "span" or a bucket id
	BaseVerdict string      `json:"base_verdict"`
	HeadVerdict string      `json:"head_verdict"`
	Slopes      []SlopeDiff `json:"slopes"`
}

// SlopeDiff is one slope before and after, in microseconds per unit, with
// a z-test of the difference from the two fits' standard errors.
type SlopeDiff struct {
	Name       string  `json:"name"`
	BaseUSPer  float64 `json:"base_us_per"`
	HeadUSPer  float64 `json:"head_us_per"`
	DeltaUSPer float64 `json:"delta_us_per"`
	DeltaPct   float64 `json:"delta_pct"`
	// Z is the delta over the root of the summed squared standard errors;
	// Changed says |Z| > slopeZ (95%, two-sided) and the delta changes the
	// time across the wider observed range by more than
	// analyze.CostMinChangeUS.
	Z       float64 `json:"z"`
	Changed bool    `json:"changed"`
}

// slopeZ is the two-sided 95% point of the normal distribution.
const slopeZ = 1.96

// compareCostModels compares the cost models of phase on the selected
// ranks; nil when neither side's were fitted.
func compareCostModels(b, h []*analyze.Rank, phase string) *CostModelDiff {
	bm, br := fittedModel(b, phase)
	hm, hr := fittedModel(h, phase)
	if bm == nil && hm == nil {
		return nil
	}
	d := &CostModelDiff{Phase: phase, BaseRank: br, HeadRank: hr}
	if bm == nil || hm == nil {
		d.Note = fmt.Sprintf("the %s steps of one run only were fitted", phase)
		return d
	}
	ranges := make(map[string]float64)
	for _, r := range bm.Regressors {
		if i := slices.IndexFunc(hm.Regressors, func(x analyze.Regressor) bool { return x.Name == r.Name }); i >= 0 {
			d.Regressors = append(d.Regressors, r.Name)
			ranges[r.Name] = max(r.Max-r.Min, hm.Regressors[i].Max-hm.Regressors[i].Min)
		} else {
			d.Unshared = append(d.Unshared, r.Name+" (base only)")
		}
	}
	for _, r := range hm.Regressors {
		if !slices.Contains(d.Regressors, r.Name) {
			d.Unshared = append(d.Unshared, r.Name+" (head only)")
		}
	}
	if len(d.Regressors) == 0 {
		d.Note = fmt.Sprintf("no regressor in common: base fitted against %s, head against %s", regNames(bm), regNames(hm))
		return d
	}
	for _, bf := range bm.Fits {
		i := slices.IndexFunc(hm.Fits, func(f analyze.CostFit) bool { return f.Target == bf.Target })
		if i < 0 {
			continue
		}
		d.Fits = append(d.Fits, compareFit(&bf, &hm.Fits[i], d.Regressors, ranges))
	}
	return d
}

// compareFit compares one fitted time's slopes of the regressors names;
// ranges holds each regressor's wider observed range of the two runs.
func compareFit(bf, hf *analyze.CostFit, names []string, ranges map[string]float64) CostFitDiff {
	fd := CostFitDiff{Target: bf.Target, BaseVerdict: bf.Verdict, HeadVerdict: hf.Verdict}
	for _, n := range names {
		bs, hs := slopeNamed(bf, n), slopeNamed(hf, n)
		sd := SlopeDiff{Name: n, BaseUSPer: bs.USPer, HeadUSPer: hs.USPer, DeltaUSPer: hs.USPer - bs.USPer}
		sd.DeltaPct = pct(sd.DeltaUSPer, bs.USPer)
		if se := math.Hypot(bs.StdErrUS, hs.StdErrUS); se > 0 {
			sd.Z = sd.DeltaUSPer / se
		}
		sd.Changed = math.Abs(sd.Z) > slopeZ && math.Abs(sd.DeltaUSPer)*ranges[n] > analyze.CostMinChangeUS
		fd.Slopes = append(fd.Slopes, sd)
	}
	return fd
}

// slopeNamed returns the fit's slope of regressor name (zero if none).
func slopeNamed(f *analyze.CostFit, name string) analyze.Slope {
	for _, s := range f.Slopes {
		if s.Name == name {
			return s
		}
	}
	return analyze.Slope{Name: name}
}

// fittedModel returns the first selected rank's model of phase that has
// fits, and that rank.
func fittedModel(ranks []*analyze.Rank, phase string) (*analyze.CostModel, int) {
	for _, rk := range ranks {
		for i := range rk.CostModel {
			if cm := &rk.CostModel[i]; cm.Phase == phase && len(cm.Fits) > 0 {
				return cm, rk.Rank
			}
		}
	}
	if len(ranks) > 0 {
		return nil, ranks[0].Rank
	}
	return nil, -1
}

// regNames lists a model's regressors: "batch and context".
func regNames(cm *analyze.CostModel) string {
	var ns []string
	for _, r := range cm.Regressors {
		ns = append(ns, r.Name)
	}
	if len(ns) == 0 {
		return "nothing"
	}
	return fmt.Sprint(ns)
}
