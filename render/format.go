package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ms formats microseconds as milliseconds with two decimals.
func ms(us float64) string { return fmt.Sprintf("%.2f", us/1000) }

// msSig formats microseconds as milliseconds with three significant
// digits at most: 21.7, 2.10, 0.412.
func msSig(us float64) string { return sig3(us/1000, 3) }

// sig3 formats v with three significant digits, but with no more than
// maxDecimals decimals: sig3(21.73, 3) is 21.7, sig3(0.4123, 3) 0.412 and
// sig3(0.4123, 2) 0.41.
func sig3(v float64, maxDecimals int) string {
	decimals := 3
	switch a := math.Abs(v); {
	case a >= 100:
		decimals = 0
	case a >= 10:
		decimals = 1
	case a >= 1:
		decimals = 2
	}
	return strconv.FormatFloat(v, 'f', min(decimals, maxDecimals), 64)
}

// msFine formats microseconds as milliseconds, with three decimals below
// 0.1 ms so that small buckets do not read 0.00.
func msFine(us float64) string {
	if math.Abs(us) < 100 {
		return fmt.Sprintf("%.3f", us/1000)
	}
	return ms(us)
}

// signedTime formats a change of microseconds: "+1.23 ms", or "+4.2 µs"
// below 0.1 ms.
func signedTime(us float64) string {
	if math.Abs(us) < 100 {
		return fmt.Sprintf("%+.1f µs", us)
	}
	return fmt.Sprintf("%+.2f ms", us/1000)
}

// usStr formats microseconds with one decimal.
func usStr(us float64) string { return fmt.Sprintf("%.1f", us) }

// pct formats a percentage with one decimal and a percent sign.
func pct(p float64) string { return fmt.Sprintf("%.1f%%", p) }

// ratioPct returns num/den in percent, 0 when den is 0.
func ratioPct(num, den float64) float64 {
	if den == 0 {
		return 0
	}
	return 100 * num / den
}

// count formats a per-step call count: whole numbers without decimals, one
// decimal below 100.
func count(v float64) string {
	if v == math.Trunc(v) || v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// plural returns "n word" with an s (es after s, sh, ch, x) appended when
// n is not 1.
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	for _, suf := range []string{"s", "sh", "ch", "x"} {
		if strings.HasSuffix(word, suf) {
			return fmt.Sprintf("%d %ses", n, word)
		}
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// shorten cuts s to at most n runes, marking the cut with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// The formats below are the web page's (api/web's templates); the text
// and Markdown reports use the ones above.

// MSText prints microseconds as milliseconds with the unit, as MSValue
// prints them: every page gives times in ms, never µs on one and ms on
// another.
func MSText(us float64) string { return MSValue(us) + " ms" }

// MSValue prints microseconds as milliseconds without a unit, for table
// columns whose header names it: three decimals, four below 10 µs so that
// a few microseconds do not print as 0.000.
func MSValue(us float64) string {
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

// USValue prints microseconds with one decimal and no unit.
func USValue(us float64) string { return strconv.FormatFloat(us, 'f', 1, 64) }

// SignedMS prints a change in microseconds with its sign.
func SignedMS(us float64) string { return Signed(us, MSText(us)) }

// Signed puts a plus sign before text when v is not negative.
func Signed(v float64, text string) string {
	if v >= 0 && !strings.HasPrefix(text, "-") {
		return "+" + text
	}
	return text
}

// NumText prints a count: whole numbers without decimals, else one.
func NumText(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// ByteSize prints a size in B, KiB, MiB, ...
func ByteSize(n int64) string {
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

// PctText formats a percentage as every output writes it: one decimal and a
// percent sign ("12.5%").
func PctText(p float64) string { return pct(p) }

// Plural writes a count and its noun as every output writes them ("1 step",
// "3 steps", "2 matches").
func Plural(n int, word string) string { return plural(n, word) }

// Shorten cuts s to at most n runes, marking the cut with an ellipsis, as
// every output cuts long kernel names.
func Shorten(s string, n int) string { return shorten(s, n) }

// Grouped writes n with thousands separators ("1,209,233"), as counts of
// events and bytes are written.
func Grouped(n int64) string {
	if n < 0 {
		return "-" + Grouped(-n)
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
