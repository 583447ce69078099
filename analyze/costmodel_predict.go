package analyze

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Workload is a step size a user names for a prediction: the requests in
// the step (Batch), the tokens scheduled (Tokens) and the context per
// request (Context: the mean KV length; the fits' context regressor is
// its sum over the requests, Batch * Context). Zero is not named.
type Workload struct {
	Batch   int `json:"batch,omitempty"`
	Tokens  int `json:"tokens,omitempty"`
	Context int `json:"context,omitempty"`
}

// CostPrediction is a phase's step predicted at a workload from its fits:
// an estimate from a straight line through the measured steps, never a
// measurement. Only significant slopes are followed (CostFit.at).
type CostPrediction struct {
	Workload Workload `json:"workload"`
	// X holds the regressor values predicted at, in the model's
	// Regressors order.
	X []float64 `json:"x"`
	// SpanUS is the predicted step span, BusyUS its GPU busy time; Buckets
	// each bucket's kernel time (they overlap and leave idle time out: they
	// need not add up to the span), in the fits' order.
	SpanUS  float64           `json:"span_us"`
	BusyUS  float64           `json:"busy_us"`
	Buckets []PredictedBucket `json:"buckets"`
	// Notes says how the workload was read (a regressor held at its
	// observed mean, decode's one token per request); Extrapolated names
	// each regressor outside its observed range.
	Notes        []string `json:"notes,omitempty"`
	Extrapolated []string `json:"extrapolated,omitempty"`
}

// PredictedBucket is one bucket's predicted kernel time per step.
type PredictedBucket struct {
	Bucket BucketID `json:"bucket"`
	US     float64  `json:"us"`
}

// ParseWorkload reads a workload written as comma-separated key=value
// pairs, as --predict and ?predict= take it: "batch=64,context=4096";
// keys batch, tokens and context, positive integers.
func ParseWorkload(s string) (Workload, error) {
	var w Workload
	if strings.TrimSpace(s) == "" {
		return w, fmt.Errorf("predict: empty workload (want e.g. batch=64,context=4096)")
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil || n <= 0 {
			return Workload{}, fmt.Errorf("predict: bad field %q (want key=positive integer, e.g. batch=64,context=4096)", kv)
		}
		switch strings.TrimSpace(k) {
		case "batch":
			w.Batch = n
		case "tokens":
			w.Tokens = n
		case "context":
			w.Context = n
		default:
			return Workload{}, fmt.Errorf("predict: unknown key %q (want batch, tokens or context)", k)
		}
	}
	return w, nil
}

// String writes w as ParseWorkload reads it.
func (w Workload) String() string {
	var parts []string
	for _, f := range []struct {
		k string
		v int
	}{{"batch", w.Batch}, {"tokens", w.Tokens}, {"context", w.Context}} {
		if f.v > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.k, f.v))
		}
	}
	return strings.Join(parts, ",")
}

// WithPrediction returns a copy of r whose fitted cost models carry the
// step predicted at w; r itself is not changed.
func WithPrediction(r *Report, w Workload) *Report {
	out := *r
	out.Ranks = slices.Clone(r.Ranks)
	for i := range out.Ranks {
		rk := &out.Ranks[i]
		rk.CostModel = slices.Clone(rk.CostModel)
		for j := range rk.CostModel {
			if cm := &rk.CostModel[j]; len(cm.Fits) > 0 {
				cm.Prediction = cm.predict(w)
			}
		}
	}
	return &out
}

// predict evaluates the model's fits at w.
func (cm *CostModel) predict(w Workload) *CostPrediction {
	p := &CostPrediction{Workload: w}
	for _, reg := range cm.Regressors {
		v, note := cm.regressorAt(reg, w)
		if note != "" {
			p.Notes = append(p.Notes, note)
		}
		if v < reg.Min || v > reg.Max {
			p.Extrapolated = append(p.Extrapolated, fmt.Sprintf("%s %.0f is outside the observed %.0f..%.0f", reg.Name, v, reg.Min, reg.Max))
		}
		p.X = append(p.X, v)
	}
	if w.Context > 0 && !slices.ContainsFunc(cm.Regressors, func(r Regressor) bool { return r.Name == RegContext }) {
		p.Notes = append(p.Notes, "the context named is not in the fit (the steps' context is unknown, constant or moves with their size): ignored")
	}
	for _, f := range cm.Fits {
		v := f.at(cm.Regressors, p.X)
		switch f.Target {
		case FitSpan:
			p.SpanUS = v
			continue
		case FitBusy:
			p.BusyUS = v
			continue
		}
		p.Buckets = append(p.Buckets, PredictedBucket{Bucket: BucketID(f.Target), US: v})
	}
	return p
}

// at evaluates the fit at x: the mean time plus each significant slope's
// change from the regressors' means (the line runs through them); a slope
// not told apart from zero is not extrapolated, the time held at its mean
// along it. Never below zero.
func (f *CostFit) at(regs []Regressor, x []float64) float64 {
	v := f.MeanUS
	for j, s := range f.Slopes {
		if s.Significant {
			v += s.USPer * (x[j] - regs[j].Mean)
		}
	}
	return max(0, v)
}

// regressorAt returns the value of regressor reg that w names, with a note
// when it is read from another figure or held at the observed mean.
func (cm *CostModel) regressorAt(reg Regressor, w Workload) (float64, string) {
	held := func(why string) (float64, string) {
		return reg.Mean, fmt.Sprintf("%s held at the observed mean %.0f (%s)", reg.Name, reg.Mean, why)
	}
	switch reg.Name {
	case RegBatch, RegTokens:
		named, other, word, otherWord := w.Batch, w.Tokens, "batch", "tokens"
		if reg.Name == RegTokens {
			named, other, word, otherWord = w.Tokens, w.Batch, "tokens", "batch"
		}
		switch {
		case named > 0:
			return float64(named), ""
		case other > 0 && cm.Phase == PhaseDecode:
			return float64(other), fmt.Sprintf("%s read as the %s: one token per request in a decode step", word, otherWord)
		}
		return held("no " + word + " named")
	case RegContext:
		if w.Context == 0 {
			return held("no context named")
		}
		if w.Batch > 0 {
			return float64(w.Batch) * float64(w.Context), fmt.Sprintf("context summed over the requests: %d x %d", w.Batch, w.Context)
		}
		return float64(w.Context), "context taken as the sum over the requests (no batch named)"
	}
	return held("unknown regressor")
}
