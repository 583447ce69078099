package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"kinetoscope/analyze"
)

// CostModelView is one phase's cost model laid out for a page: a heading,
// lines on what was fitted (and why not), a table with one row per fit,
// and the prediction's lines when there is one.
type CostModelView struct {
	Phase      string
	Heading    string
	Lines      []string
	Header     []string
	Rows       [][]string
	Prediction []string
}

// CostModelViews lays out each of the rank's cost models.
func CostModelViews(buckets []analyze.Bucket, rk *analyze.Rank) []CostModelView {
	var out []CostModelView
	for i := range rk.CostModel {
		out = append(out, costModelView(buckets, &rk.CostModel[i]))
	}
	return out
}

// costModelBlocks lays out the rank's cost models as report blocks.
func costModelBlocks(buckets []analyze.Bucket, rk *analyze.Rank) []block {
	var bs []block
	for _, v := range CostModelViews(buckets, rk) {
		bs = append(bs, block{Heading: v.Heading, Level: 3}, block{Lines: v.Lines})
		if len(v.Rows) > 0 {
			right := make([]bool, len(v.Header))
			for i := 1; i < len(right)-1; i++ {
				right[i] = true
			}
			bs = append(bs, block{Table: &table{Header: v.Header, Right: right, Rows: v.Rows}})
		}
		if len(v.Prediction) > 0 {
			bs = append(bs, block{Lines: v.Prediction})
		}
	}
	return bs
}

// regressorUnit is what a slope of regressor name is per, and the factor
// its microseconds per unit are shown multiplied by.
func regressorUnit(name string) (string, float64) {
	switch name {
	case analyze.RegTokens:
		return "us/token", 1
	case analyze.RegBatch:
		return "us/request", 1
	case analyze.RegContext:
		return "us/1k KV tokens", 1000
	}
	return "us/" + name, 1
}

// costModelView lays out one phase's cost model.
func costModelView(buckets []analyze.Bucket, cm *analyze.CostModel) CostModelView {
	var terms []string
	for _, r := range cm.Regressors {
		terms = append(terms, "·"+r.Name)
	}
	formula := "a"
	for i, t := range terms {
		formula += fmt.Sprintf(" + %c%s", 'b'+i, t)
	}
	v := CostModelView{Phase: cm.Phase,
		Heading: fmt.Sprintf("Cost model (%s steps: time per step = %s, least squares)", cm.Phase, formula)}
	if len(cm.Fits) == 0 {
		v.Heading = fmt.Sprintf("Cost model (%s steps)", cm.Phase)
		v.Lines = []string{fmt.Sprintf("%s: %s.", plural(cm.Steps, cm.Phase+" step"), strings.Join(cm.Notes, "; "))}
		return v
	}
	var ranges []string
	for _, r := range cm.Regressors {
		ranges = append(ranges, fmt.Sprintf("%s %.0f..%.0f (%d values, mean %.0f)", r.Name, r.Min, r.Max, r.Distinct, r.Mean))
	}
	line := fmt.Sprintf("Fitted on %d of %d %s steps, %d distinct workload points: %s.", cm.Used, cm.Steps, cm.Phase, cm.Points, strings.Join(ranges, ", "))
	if len(cm.Notes) > 0 {
		line += " " + capitalize(strings.Join(cm.Notes, "; ")) + "."
	}
	if cm.SpanNote != "" {
		line += " " + capitalize(cm.SpanNote) + "."
	}
	v.Lines = []string{line, fmt.Sprintf("A slope counts as growth only where a t-test (95%%) tells it from zero and the change it predicts across the observed range exceeds both the residual spread and %g us; a fit is loose where its residual spread is over %g%% of the mean (a straight line describes that time roughly); context is the KV length summed over the step's requests. Bucket times are kernel time (they overlap and leave idle out); the span and GPU busy are the step's.", analyze.CostMinChangeUS, analyze.CostLoosePct)}
	v.Header = []string{"time", "mean ms", "a ms"}
	for _, r := range cm.Regressors {
		unit, _ := regressorUnit(r.Name)
		v.Header = append(v.Header, fmt.Sprintf("%s %s (± se)", r.Name, unit), fmt.Sprintf("change over %.0f..%.0f us", r.Min, r.Max))
	}
	v.Header = append(v.Header, "R²", "resid us")
	if cm.Prediction != nil {
		v.Header = append(v.Header, "estimate ms")
	}
	v.Header = append(v.Header, "verdict")
	pred := predictedByTarget(cm.Prediction)
	for _, f := range cm.Fits {
		row := []string{fitLabel(buckets, f.Target), msFine(f.MeanUS), msFine(f.InterceptUS)}
		for _, s := range f.Slopes {
			_, k := regressorUnit(s.Name)
			row = append(row, fmt.Sprintf("%s ± %s", sig3(s.USPer*k, 3), sig3(s.StdErrUS*k, 3)), usStr(s.RangeUS))
		}
		row = append(row, fmt.Sprintf("%.3f", f.R2), usStr(f.ResidualUS))
		if cm.Prediction != nil {
			row = append(row, msFine(pred[f.Target]))
		}
		verdict := f.Verdict
		if f.Loose {
			verdict += fmt.Sprintf(" (loose: resid %.0f%% of the mean)", 100*f.ResidualUS/f.MeanUS)
		}
		v.Rows = append(v.Rows, append(row, verdict))
	}
	v.Prediction = predictionLines(cm)
	return v
}

// predictedByTarget maps each fit's target to its predicted time.
func predictedByTarget(p *analyze.CostPrediction) map[string]float64 {
	m := make(map[string]float64)
	if p == nil {
		return m
	}
	m[analyze.FitSpan], m[analyze.FitBusy] = p.SpanUS, p.BusyUS
	for _, b := range p.Buckets {
		m[string(b.Bucket)] = b.US
	}
	return m
}

// predictionLines words the prediction of a cost model: an estimate.
func predictionLines(cm *analyze.CostModel) []string {
	p := cm.Prediction
	if p == nil {
		return nil
	}
	var at []string
	for i, r := range cm.Regressors {
		at = append(at, fmt.Sprintf("%s %.0f", r.Name, p.X[i]))
	}
	s := fmt.Sprintf("Estimate at %s (%s; a straight line through the measured steps along its significant slopes, a flat time held at its mean; not a measurement): %s step span %s ms (± %s, the fit's residual spread), GPU busy %s ms (± %s).",
		p.Workload, strings.Join(at, ", "), cm.Phase, msFine(p.SpanUS), msFine(cm.Fits[0].ResidualUS), msFine(p.BusyUS), msFine(cm.Fits[1].ResidualUS))
	if len(p.Notes) > 0 {
		s += " " + capitalize(strings.Join(p.Notes, "; ")) + "."
	}
	lines := []string{s}
	if len(p.Extrapolated) > 0 {
		lines = append(lines, "Warning: an extrapolation, "+strings.Join(p.Extrapolated, "; ")+": the line may not hold there.")
	}
	return lines
}

// fitLabel names a fit's target: "step span", "GPU busy" or the
// bucket's label.
func fitLabel(buckets []analyze.Bucket, target string) string {
	switch target {
	case analyze.FitSpan:
		return "step span"
	case analyze.FitBusy:
		return "GPU busy"
	}
	return bucketInfo(buckets, analyze.BucketID(target)).Label
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeCostModelCSV writes one row per rank, phase and fit; a phase
// without a fit has one row saying why.
func writeCostModelCSV(w io.Writer, r *analyze.Report) error {
	header := []string{"rank", "phase", "target", "label", "steps", "steps_fitted", "points",
		"size_regressor", "size_min", "size_max", "context_min", "context_max",
		"mean_us", "intercept_us", "size_us_per", "size_stderr_us", "context_us_per", "context_stderr_us",
		"r2", "residual_us", "loose", "verdict", "predict_workload", "predicted_us", "extrapolated"}
	return writeCSV(w, header, func(emit func(...string)) {
		for i := range r.Ranks {
			rk := &r.Ranks[i]
			for j := range rk.CostModel {
				costModelRows(r.Buckets, rk.Rank, &rk.CostModel[j], emit)
			}
		}
	})
}

// costModelRows emits the CSV rows of one cost model.
func costModelRows(buckets []analyze.Bucket, rank int, cm *analyze.CostModel, emit func(...string)) {
	base := []string{fmt.Sprint(rank), cm.Phase}
	counts := []string{fmt.Sprint(cm.Steps), fmt.Sprint(cm.Used), fmt.Sprint(cm.Points)}
	if len(cm.Fits) == 0 {
		row := append(append(base, "", ""), counts...)
		row = append(row, make([]string, 14)...)
		emit(append(row, strings.Join(cm.Notes, "; "), "", "", "")...)
		return
	}
	reg := func(name string) (int, *analyze.Regressor) {
		for k := range cm.Regressors {
			if cm.Regressors[k].Name == name {
				return k, &cm.Regressors[k]
			}
		}
		return -1, nil
	}
	size, sizeName := -1, ""
	for _, n := range []string{analyze.RegTokens, analyze.RegBatch} {
		if k, _ := reg(n); k >= 0 {
			size, sizeName = k, n
		}
	}
	ctx, ctxReg := reg(analyze.RegContext)
	ranges := []string{sizeName, "", "", "", ""}
	if size >= 0 {
		ranges[1], ranges[2] = num(cm.Regressors[size].Min), num(cm.Regressors[size].Max)
	}
	if ctxReg != nil {
		ranges[3], ranges[4] = num(ctxReg.Min), num(ctxReg.Max)
	}
	pred := predictedByTarget(cm.Prediction)
	for _, f := range cm.Fits {
		slope := func(k int) (string, string) {
			if k < 0 {
				return "", ""
			}
			return num(f.Slopes[k].USPer), num(f.Slopes[k].StdErrUS)
		}
		sb, sse := slope(size)
		cb, cse := slope(ctx)
		row := append(append(append([]string{}, base...), f.Target, fitLabel(buckets, f.Target)), counts...)
		row = append(row, ranges...)
		row = append(row, num(f.MeanUS), num(f.InterceptUS), sb, sse, cb, cse, num(f.R2), num(f.ResidualUS), strconv.FormatBool(f.Loose), f.Verdict)
		if p := cm.Prediction; p != nil {
			row = append(row, p.Workload.String(), num(pred[f.Target]), strings.Join(p.Extrapolated, "; "))
		} else {
			row = append(row, "", "", "")
		}
		emit(row...)
	}
}
