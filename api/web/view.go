package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/render"
)

// funcs returns the template functions.
func funcs() template.FuncMap {
	return template.FuncMap{
		"ms": render.MSText,
		"rank": func(n int) string {
			if n < 0 {
				return "?"
			}
			return strconv.Itoa(n)
		},
		"pct":       render.PctText,
		"num":       render.NumText,
		"bytes":     render.ByteSize,
		"when":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"short":     render.Shorten,
		"signedMS":  render.SignedMS,
		"msv":       render.MSValue,
		"perStep":   phaseStep,
		"plural":    render.Plural,
		"stepsOf":   stepsOf,
		"linkNames": analyze.LinkNames,
		"linkNote":  linkNote,
		"rankQuery": func(n int) template.URL { return template.URL("rank=" + strconv.Itoa(n)) },
		"msd":       func(us float64) string { return render.Signed(us, render.MSValue(us)) },
		"usv":       render.USValue,
		"roofNotes": render.RooflineNotes,
		"peakKeys":  analyze.PeakKeys,
		"usd":       func(us float64) string { return render.Signed(us, render.USValue(us)) },
		"numd":      func(v float64) string { return render.Signed(v, render.NumText(v)) },
		"signedPct": func(v float64) string { return render.Signed(v, render.PctText(v)) },
		"ci":        ciText,
		"sub":       func(a, b float64) float64 { return a - b },
		"pctChange": func(base, head float64) float64 { return 100 * (head - base) / base },
		"dict":      dict,
		"percentOf": func(a, b int64) int {
			if b <= 0 {
				return 0
			}
			return int(math.Min(100, 100*float64(a)/float64(b)))
		},
	}
}

// ciText prints the confidence interval of a tested change in
// milliseconds, empty when it was not tested.
func ciText(t diff.Test) string {
	if t.Verdict == "" || t.Verdict == "not enough steps" {
		return ""
	}
	return "[" + render.Signed(t.CILowUS, render.MSValue(t.CILowUS)) + ", " + render.Signed(t.CIHighUS, render.MSValue(t.CIHighUS)) + "]"
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

// linkNote words analyze's note on the link peak for the web page, where
// the link is set in the run page's form, not with --link.
func linkNote(note string) string {
	return strings.ReplaceAll(note, "pass --link ", "set the link (below) to ")
}
