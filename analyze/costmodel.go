package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// CostModel fits one phase's per-step times on one rank against the
// steps' workload: time = a + b·size + c·context by least squares, for the
// step span and for each bucket's kernel time, so that a user reads which
// buckets are flat, which grow with the tokens (or requests) of a step and
// which with its context, and can predict a step of another size
// (WithPrediction). Every figure is microseconds per step.
type CostModel struct {
	Phase string `json:"phase"` // decode, prefill or mixed
	// Steps is the number of the phase's steps; Used those fitted (the
	// ones whose trace says every regressor).
	Steps int `json:"steps"`
	Used  int `json:"used"`
	// Regressors are the workload figures fitted against, in the order of
	// each fit's Slopes: "tokens" (scheduled in the step), "batch"
	// (requests, where the trace says no tokens) and "context" (the KV
	// length summed over the step's requests, Step.Context).
	Regressors []Regressor `json:"regressors,omitempty"`
	// Points is the number of distinct workload points among the used
	// steps: a fit needs at least MinCostPoints and more than it has
	// coefficients.
	Points int `json:"points"`
	// Notes says what was left out and why: no fit at all (Fits empty),
	// a regressor that does not vary or moves with another.
	Notes []string `json:"notes,omitempty"`
	// Fits has the step span first (Target FitSpan), the GPU busy time
	// (FitBusy), then every bucket with time in the used steps, the most
	// time first.
	Fits []CostFit `json:"fits,omitempty"`
	// SpanNote says, when the span does not follow the workload while the
	// GPU busy time does and the GPU is idle for most of the span, that the
	// steps are host-bound: the span is no estimate of GPU work.
	SpanNote string `json:"span_note,omitempty"`
	// Prediction is the step at a workload the user named
	// (WithPrediction); an estimate, not a measurement.
	Prediction *CostPrediction `json:"prediction,omitempty"`
}

// Regressor is one workload figure of a fit and its observed range.
type Regressor struct {
	Name     string  `json:"name"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Mean     float64 `json:"mean"`
	Distinct int     `json:"distinct"` // distinct values among the used steps
}

// CostFit is the least-squares line of one per-step time.
type CostFit struct {
	// Target is FitSpan (the step span), FitBusy (the union of the step's
	// kernels) or a bucket id (its kernel time per step).
	Target      string  `json:"target"`
	MeanUS      float64 `json:"mean_us"`
	InterceptUS float64 `json:"intercept_us"`
	// Slopes has one entry per regressor, in CostModel.Regressors' order.
	Slopes []Slope `json:"slopes"`
	// R2 is the share of the variance the fit explains (0 when the time
	// does not vary); ResidualUS the residual standard deviation,
	// sqrt(SSR / (n - p)).
	R2         float64 `json:"r2"`
	ResidualUS float64 `json:"residual_us"`
	// Verdict is "flat", or says which regressors the time grows (or
	// falls) with: "grows with tokens", "grows with tokens and context".
	Verdict string `json:"verdict"`
	// Loose says the residual spread is over CostLoosePct of the mean
	// time: a straight line describes the time loosely (attention that is
	// flat in the batch until the GPU fills, say), and its estimates are
	// rough.
	Loose bool `json:"loose,omitempty"`
}

// Slope is a fit's coefficient of one regressor.
type Slope struct {
	Name     string  `json:"name"`
	USPer    float64 `json:"us_per"` // microseconds per unit (token, request, KV token)
	StdErrUS float64 `json:"stderr_us"`
	T        float64 `json:"t"`
	// RangeUS is the change the slope predicts across the observed range
	// of its regressor: USPer * (max - min).
	RangeUS float64 `json:"range_us"`
	// Significant says the slope is told apart from zero: a two-sided
	// t-test at 95% rejects zero, and RangeUS exceeds both the residual
	// spread and CostMinChangeUS.
	Significant bool `json:"significant"`
}

// MinCostPoints is the fewest distinct workload points a cost model is
// fitted on.
const MinCostPoints = 3

// CostMinChangeUS is the smallest change across the observed range, in
// microseconds per step, that a slope is called growth (or fall): below
// it, whatever the t-test says, the change is beneath what a step's timing
// resolves.
const CostMinChangeUS = 1.0

// CostLoosePct is the residual spread, in percent of the mean time, above
// which a fit is called loose (CostFit.Loose).
const CostLoosePct = 10.0

// collinearR is the correlation above which two regressors are taken to
// move together, and the second is left out.
const collinearR = 0.99

// Fit targets other than buckets.
const (
	FitSpan = "span"
	FitBusy = "busy"
)

// Regressor names.
const (
	RegTokens  = "tokens"
	RegBatch   = "batch"
	RegContext = "context"
)

// costPhases are the phases a cost model is fitted for, each on its own:
// a mixed step (vLLM's chunked prefill beside decodes) is fitted with the
// other mixed steps only.
var costPhases = []string{PhaseDecode, PhasePrefill, PhaseMixed}

// costModels fits the cost model of each phase that has steps.
func costModels(steps []Step) []CostModel {
	var out []CostModel
	for _, ph := range costPhases {
		var sel []*Step
		for i := range steps {
			if inPhase(ph, &steps[i]) && steps[i].Phase == ph {
				sel = append(sel, &steps[i])
			}
		}
		if len(sel) > 0 {
			out = append(out, fitPhase(ph, sel))
		}
	}
	return out
}

// regressorValue returns step s's value of regressor name, 0 when the
// trace does not say it.
func regressorValue(s *Step, name string) float64 {
	switch name {
	case RegTokens:
		return float64(s.Tokens)
	case RegBatch:
		return float64(s.Batch)
	case RegContext:
		return float64(s.Context)
	}
	return 0
}

// fitPhase fits the cost model of one phase's steps.
func fitPhase(phase string, steps []*Step) CostModel {
	cm := CostModel{Phase: phase, Steps: len(steps)}
	if len(steps) < MinCostPoints {
		cm.Notes = []string{fmt.Sprintf("not fitted: %s, a fit needs at least %d distinct workload points", pluralWord(len(steps), "step", "steps"), MinCostPoints)}
		return cm
	}
	names, used, notes, whyNot := chooseRegressors(steps)
	cm.Notes = notes
	if len(names) == 0 {
		cm.Notes = append([]string{whyNot}, notes...) // the reason first, then what led to it
		return cm
	}
	cm.Used = len(used)
	x := make([][]float64, len(used))
	for i, s := range used {
		for _, n := range names {
			x[i] = append(x[i], regressorValue(s, n))
		}
	}
	cm.Regressors = describeRegressors(names, x)
	cm.Points = distinctPoints(x)
	if need := max(MinCostPoints, len(names)+2); cm.Points < need {
		cm.Notes = append(cm.Notes, fmt.Sprintf("not fitted: %d distinct workload points among %d steps, a fit against %s needs at least %d",
			cm.Points, len(used), strings.Join(names, " and "), need))
		return cm
	}
	cm.Fits = fitTargets(cm.Regressors, used, x)
	cm.SpanNote = hostBoundNote(cm.Fits)
	return cm
}

// hostBoundNote says so when the span fit (Fits[0]) is flat, the GPU busy
// fit (Fits[1]) is not, and the GPU is busy for less than half the span.
func hostBoundNote(fits []CostFit) string {
	span, busy := fits[0], fits[1]
	if span.Verdict != "flat" || busy.Verdict == "flat" || busy.MeanUS >= span.MeanUS/2 {
		return ""
	}
	return fmt.Sprintf("the step span is flat (R² %.2f) while GPU busy %s: the GPU is busy %.0f%% of the span, the steps are host-bound, so GPU busy and the buckets, not the span, carry the workload",
		span.R2, busy.Verdict, 100*busy.MeanUS/span.MeanUS)
}

// chooseRegressors picks the regressors of a phase's steps and the steps
// that have them: the step's size as tokens where the trace says them for
// as many steps as it says requests, else as requests; the context where
// those steps say it; a regressor that does not vary, or that moves with
// the size, is left out. notes says what was left out and why; whyNot
// why nothing is fitted, when names is empty.
func chooseRegressors(steps []*Step) (names []string, used []*Step, notes []string, whyNot string) {
	count := func(name string, among []*Step) int {
		n := 0
		for _, s := range among {
			if regressorValue(s, name) > 0 {
				n++
			}
		}
		return n
	}
	size := RegTokens
	if count(RegBatch, steps) > count(RegTokens, steps) {
		size = RegBatch
	}
	if count(size, steps) == 0 {
		return nil, nil, nil, "not fitted: the trace says neither the tokens nor the requests of these steps (vLLM's execute_context_N(T)_generation_M(G), SGLang's step[MODE bs=N], or record_shapes)"
	}
	used = keepWith(steps, size)
	if len(used) < len(steps) {
		notes = append(notes, fmt.Sprintf("%d of %d steps say their %s; only those are fitted", len(used), len(steps), size))
	}
	names = []string{size}
	switch c := count(RegContext, used); {
	case c == 0:
		notes = append(notes, "no context: the trace does not say the steps' KV length (vLLM's detailed_trace_annotation, SGLang's g_sk, or record_shapes of the attention op)")
	case 2*c < len(used):
		notes = append(notes, fmt.Sprintf("context left out: only %d of %d steps say it", c, len(used)))
	default:
		if c < len(used) {
			notes = append(notes, fmt.Sprintf("%d of %d steps say their context; only those are fitted", c, len(used)))
			used = keepWith(used, RegContext)
		}
		names = append(names, RegContext)
	}
	names, notes, whyNot = dropFlat(names, used, notes)
	return names, used, notes, whyNot
}

// keepWith returns the steps whose regressor name is known (positive).
func keepWith(steps []*Step, name string) []*Step {
	var out []*Step
	for _, s := range steps {
		if regressorValue(s, name) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// dropFlat leaves out the regressors that take one value over the steps,
// and the context when it moves with the size (|r| > collinearR): the fit
// could not tell them apart. It returns the regressors kept, the notes
// with its own, and why nothing is fitted when none is kept.
func dropFlat(names []string, steps []*Step, notes []string) ([]string, []string, string) {
	var kept []string
	for _, n := range names {
		vals := make([]float64, len(steps))
		for i, s := range steps {
			vals[i] = regressorValue(s, n)
		}
		if lo, hi := slices.Min(vals), slices.Max(vals); lo == hi {
			notes = append(notes, fmt.Sprintf("%s left out: %.0f in every step", n, lo))
			continue
		}
		kept = append(kept, n)
	}
	if len(kept) == 2 {
		a, b := make([]float64, len(steps)), make([]float64, len(steps))
		for i, s := range steps {
			a[i], b[i] = regressorValue(s, kept[0]), regressorValue(s, kept[1])
		}
		if r := correlation(a, b); math.Abs(r) > collinearR {
			notes = append(notes, fmt.Sprintf("%s left out: it moves with %s (r = %.3f), and the fit could not tell them apart", kept[1], kept[0], r))
			kept = kept[:1]
		}
	}
	if len(kept) == 0 {
		return nil, notes, "not fitted: no workload figure varies over these steps"
	}
	return kept, notes, ""
}

// correlation is Pearson's r of a and b (0 when either is constant).
func correlation(a, b []float64) float64 {
	ma, mb := meanOf(a), meanOf(b)
	var sab, saa, sbb float64
	for i := range a {
		da, db := a[i]-ma, b[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// describeRegressors returns each regressor's range over the rows of x.
func describeRegressors(names []string, x [][]float64) []Regressor {
	out := make([]Regressor, len(names))
	for j, n := range names {
		col := make([]float64, len(x))
		for i := range x {
			col[i] = x[i][j]
		}
		sorted := slices.Clone(col)
		slices.Sort(sorted)
		r := Regressor{Name: n, Min: sorted[0], Max: sorted[len(sorted)-1], Mean: meanOf(col)}
		r.Distinct = len(slices.Compact(sorted))
		out[j] = r
	}
	return out
}

// distinctPoints counts the distinct rows of x.
func distinctPoints(x [][]float64) int {
	seen := make(map[string]bool)
	for _, row := range x {
		seen[fmt.Sprint(row)] = true
	}
	return len(seen)
}

// fitTargets fits the span and every bucket with time in the steps.
func fitTargets(regs []Regressor, steps []*Step, x [][]float64) []CostFit {
	span, busy := make([]float64, len(steps)), make([]float64, len(steps))
	bucketUS := make(map[BucketID][]float64)
	for i, s := range steps {
		span[i], busy[i] = s.SpanUS, s.BusyUS
		for id, b := range s.Buckets {
			if b.US > 0 && bucketUS[id] == nil {
				bucketUS[id] = make([]float64, len(steps))
			}
		}
	}
	for id, ys := range bucketUS {
		for i, s := range steps {
			ys[i] = s.Buckets[id].US
		}
	}
	ids := make([]BucketID, 0, len(bucketUS))
	for id := range bucketUS {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		si, sj := meanOf(bucketUS[ids[i]]), meanOf(bucketUS[ids[j]])
		return cmp.Or(cmp.Compare(sj, si), cmp.Compare(ids[i], ids[j])) < 0
	})
	fits := []CostFit{fitLine(FitSpan, regs, x, span), fitLine(FitBusy, regs, x, busy)}
	for _, id := range ids {
		fits = append(fits, fitLine(string(id), regs, x, bucketUS[id]))
	}
	return fits
}

// fitLine fits y = a + sum_j b_j x_j by least squares (QR of the design
// matrix, regressors centred and scaled), with each slope's standard error
// and t-test.
func fitLine(target string, regs []Regressor, x [][]float64, y []float64) CostFit {
	n, k := len(y), len(regs)
	p := k + 1
	scale := make([]float64, k)
	for j, r := range regs {
		scale[j] = r.Max - r.Min // > 0: a regressor that does not vary was left out
	}
	design := mat.NewDense(n, p, nil)
	for i := range n {
		design.Set(i, 0, 1)
		for j := range k {
			design.Set(i, j+1, (x[i][j]-regs[j].Mean)/scale[j])
		}
	}
	yv := mat.NewDense(n, 1, slices.Clone(y))
	var qr mat.QR
	qr.Factorize(design)
	var beta mat.Dense
	f := CostFit{Target: target, MeanUS: meanOf(y), Slopes: make([]Slope, k)}
	if err := qr.SolveTo(&beta, false, yv); err != nil {
		f.Verdict = "not fitted: " + err.Error()
		return f
	}
	var ssr, sst float64
	for i := range n {
		pred := beta.At(0, 0)
		for j := range k {
			pred += beta.At(j+1, 0) * design.At(i, j+1)
		}
		ssr += (y[i] - pred) * (y[i] - pred)
		sst += (y[i] - f.MeanUS) * (y[i] - f.MeanUS)
	}
	df := n - p
	sigma2 := ssr / float64(df)
	f.ResidualUS = math.Sqrt(sigma2)
	if sst > 0 {
		f.R2 = max(0, 1-ssr/sst)
	}
	cov := slopeCovariance(design)
	tcrit := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
	f.InterceptUS = beta.At(0, 0)
	for j := range k {
		b := beta.At(j+1, 0) / scale[j]
		se := math.Sqrt(sigma2*cov[j+1]) / scale[j]
		s := Slope{Name: regs[j].Name, USPer: b, StdErrUS: se, RangeUS: b * scale[j]}
		if se > 0 {
			s.T = b / se
		}
		s.Significant = math.Abs(s.RangeUS) > max(f.ResidualUS, CostMinChangeUS) &&
			(se == 0 || math.Abs(s.T) > tcrit)
		f.InterceptUS -= b * regs[j].Mean
		f.Slopes[j] = s
	}
	f.Verdict = costVerdict(f.Slopes)
	f.Loose = f.ResidualUS > CostLoosePct/100*math.Abs(f.MeanUS)
	return f
}

// slopeCovariance returns the diagonal of (X'X)^-1 for design matrix X:
// times the residual variance, the coefficients' variances.
func slopeCovariance(design *mat.Dense) []float64 {
	_, p := design.Dims()
	var xtx mat.SymDense
	xtx.SymOuterK(1, design.T())
	out := make([]float64, p)
	var ch mat.Cholesky
	if !ch.Factorize(&xtx) {
		return out
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return out
	}
	for j := range p {
		out[j] = inv.At(j, j)
	}
	return out
}

// costVerdict words which regressors a fit's time grows or falls with.
func costVerdict(slopes []Slope) string {
	var grows, falls []string
	for _, s := range slopes {
		switch {
		case !s.Significant:
		case s.USPer > 0:
			grows = append(grows, s.Name)
		default:
			falls = append(falls, s.Name)
		}
	}
	var parts []string
	if len(grows) > 0 {
		parts = append(parts, "grows with "+strings.Join(grows, " and "))
	}
	if len(falls) > 0 {
		parts = append(parts, "falls with "+strings.Join(falls, " and "))
	}
	if len(parts) == 0 {
		return "flat"
	}
	return strings.Join(parts, ", ")
}
