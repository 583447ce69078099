package web

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/render"
)

// funcs are the template functions.
var funcs = template.FuncMap{
	"ms": msText,
	"rank": func(n int) string {
		if n < 0 {
			return "?"
		}
		return strconv.Itoa(n)
	},
	"pct":   func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" },
	"num":   numText,
	"bytes": bytesText,
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n-1] + "…"
	},
	"signedMS":  signedMS,
	"signedPct": func(v float64) string { return signed(v, strconv.FormatFloat(v, 'f', 1, 64)+"%") },
	"ci":        ciText,
	"sub":       func(a, b float64) float64 { return a - b },
	"dict":      dict,
	"percentOf": func(a, b int64) int {
		if b <= 0 {
			return 0
		}
		return int(math.Min(100, 100*float64(a)/float64(b)))
	},
}

// msText prints microseconds as milliseconds, or microseconds when small.
func msText(us float64) string {
	if math.Abs(us) < 1000 {
		return strconv.FormatFloat(us, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(us/1000, 'f', 2, 64) + " ms"
}

// signedMS prints a change in microseconds with its sign.
func signedMS(us float64) string { return signed(us, msText(us)) }

// signed puts a plus sign before text when v is not negative.
func signed(v float64, text string) string {
	if v >= 0 && !strings.HasPrefix(text, "-") {
		return "+" + text
	}
	return text
}

// ciText prints the confidence interval of a tested change, empty when
// it was not tested.
func ciText(t diff.Test) string {
	if t.Verdict == "" || t.Verdict == "not enough steps" {
		return ""
	}
	return "[" + signedMS(t.CILowUS) + ", " + signedMS(t.CIHighUS) + "]"
}

// dict builds a map from key, value pairs, for passing several values to
// a template.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: odd number of arguments")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

func numText(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// runView is what the run page shows of a report.
type runView struct {
	Headline string
	Ranks    *ranksView
	Rank     *analyze.Rank // the selected rank
	RankNum  int
	Phase    string // decode, prefill or all steps
	Buckets  []bucketRow
	Top      []analyze.KernelStat
	Timeline *timelineView
}

// bucketRow is one bucket of the selected rank's phase.
type bucketRow struct {
	Label string
	Group analyze.Group
	analyze.BucketShare
}

// newRunView selects a rank (the query's "rank", else the first) and a
// step of it for the timeline (the query's "step", else the slowest), and
// lays out the tables.
func newRunView(r *analyze.Report, rankQuery, stepQuery string) *runView {
	v := &runView{Headline: render.HeadlineText(r)}
	if len(r.Ranks) == 0 {
		return v
	}
	sel := 0
	if n, err := strconv.Atoi(rankQuery); err == nil {
		for i := range r.Ranks {
			if r.Ranks[i].Rank == n {
				sel = i
			}
		}
	}
	v.Rank = &r.Ranks[sel]
	v.RankNum = v.Rank.Rank
	var ph analyze.Phase
	v.Phase, ph = phaseOf(v.Rank)
	v.Buckets = phaseBuckets(r, ph)
	v.Top = topKernels(v.Rank, 15)
	v.Timeline = newTimelineView(r, v.Rank, v.Phase, stepQuery)
	step := ""
	if stepQuery != "" && v.Timeline != nil {
		step = strconv.Itoa(v.Timeline.Step.Index)
	}
	v.Ranks = newRanksView(r, sel, step)
	return v
}

// phaseOf returns the phase a rank's tables show: decode, else prefill,
// else every step (traces whose steps have no known phase).
func phaseOf(rk *analyze.Rank) (string, analyze.Phase) {
	switch {
	case rk.Decode.Steps > 0:
		return "decode", rk.Decode
	case rk.Prefill != nil && rk.Prefill.Steps > 0:
		return "prefill", *rk.Prefill
	}
	return "all steps", analyze.Aggregate(rk.Steps, nil)
}

// phaseBuckets returns a phase's buckets in display order, without empty
// ones.
func phaseBuckets(r *analyze.Report, ph analyze.Phase) []bucketRow {
	buckets := reportBuckets(r)
	var rows []bucketRow
	for _, b := range buckets {
		s, ok := ph.Buckets[b.ID]
		if !ok || (s.US == 0 && s.Count == 0) {
			continue
		}
		rows = append(rows, bucketRow{Label: b.Label, Group: b.Group, BucketShare: s})
	}
	return rows
}

// reportBuckets returns the report's buckets in display order (the
// built-in ones for a report that lists none).
func reportBuckets(r *analyze.Report) []analyze.Bucket {
	if len(r.Buckets) == 0 {
		return analyze.Buckets()
	}
	return r.Buckets
}

// topKernels merges the rank's per-bucket top kernels, longest first.
func topKernels(rk *analyze.Rank, n int) []analyze.KernelStat {
	var all []analyze.KernelStat
	for _, ks := range rk.TopKernels {
		all = append(all, ks...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].US != all[j].US {
			return all[i].US > all[j].US
		}
		return strings.Compare(all[i].Name, all[j].Name) < 0
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}
