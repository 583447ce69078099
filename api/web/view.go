package web

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"kinetoscope/analyze/diff"
)

// funcs returns the template functions.
func funcs() template.FuncMap {
	return template.FuncMap{
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
		"signedMS": signedMS,
		"msv":      msValue,
		"perStep":  phaseStep,
		"plural": func(n int, what string) string {
			if n == 1 {
				return "1 " + what
			}
			return strconv.Itoa(n) + " " + what + "s"
		},
		"stepsOf":   stepsOf,
		"rankQuery": func(n int) template.URL { return template.URL("rank=" + strconv.Itoa(n)) },
		"msd":       func(us float64) string { return signed(us, msValue(us)) },
		"usv":       usValue,
		"usd":       func(us float64) string { return signed(us, usValue(us)) },
		"numd":      func(v float64) string { return signed(v, numText(v)) },
		"signedPct": func(v float64) string { return signed(v, strconv.FormatFloat(v, 'f', 1, 64)+"%") },
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

// msText prints microseconds as milliseconds, or microseconds when small.
func msText(us float64) string {
	if math.Abs(us) < 1000 {
		return strconv.FormatFloat(us, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(us/1000, 'f', 2, 64) + " ms"
}

// msValue prints microseconds as milliseconds without a unit, for table
// columns whose header names it: three decimals, four below 10 µs so that
// a few microseconds do not print as 0.000.
func msValue(us float64) string {
	prec := 3
	if us != 0 && math.Abs(us) < 10 {
		prec = 4
	}
	text := strconv.FormatFloat(us/1000, 'f', prec, 64)
	if strings.Trim(text, "-0.") == "" {
		return strings.TrimPrefix(text, "-") // no "-0.0000"
	}
	return text
}

// usValue prints microseconds with one decimal and no unit.
func usValue(us float64) string { return strconv.FormatFloat(us, 'f', 1, 64) }

// signedMS prints a change in microseconds with its sign.
func signedMS(us float64) string { return signed(us, msText(us)) }

// signed puts a plus sign before text when v is not negative.
func signed(v float64, text string) string {
	if v >= 0 && !strings.HasPrefix(text, "-") {
		return "+" + text
	}
	return text
}

// ciText prints the confidence interval of a tested change in
// milliseconds, empty when it was not tested.
func ciText(t diff.Test) string {
	if t.Verdict == "" || t.Verdict == "not enough steps" {
		return ""
	}
	return "[" + signed(t.CILowUS, msValue(t.CILowUS)) + ", " + signed(t.CIHighUS, msValue(t.CIHighUS)) + "]"
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
