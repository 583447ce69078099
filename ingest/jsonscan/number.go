package jsonscan

import (
	"math"
	"strconv"
)

// ParseMicrosNS converts a JSON number of microseconds, as text, into integer
// nanoseconds without going through a float: "6520618853487.683" is
// 6520618853487683. More than three decimals are rounded half away from zero;
// exponent forms fall back to a float and are rounded. A quoted number is
// accepted. It reports false for text that is not a number or overflows.
func ParseMicrosNS(b []byte) (int64, bool) {
	if ns, ok := fixedMicrosNS(b); ok {
		return ns, true
	}
	b = unquote(b)
	v, neg, i, ok := intPrefix(b)
	if !ok {
		return 0, false
	}
	frac, digits := int64(0), 0
	roundUp := false
	if i < len(b) && b[i] == '.' {
		i++
		fs := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			switch {
			case digits < 3:
				frac = frac*10 + int64(b[i]-'0')
				digits++
			case digits == 3:
				roundUp = b[i] >= '5'
				digits++
			}
		}
		if i == fs {
			return 0, false
		}
	}
	if i < len(b) {
		if b[i] == 'e' || b[i] == 'E' {
			return parseFloatNS(b)
		}
		return 0, false
	}
	for ; digits < 3; digits++ {
		frac *= 10
	}
	if v > (math.MaxInt64-1000)/1000 {
		return 0, false
	}
	ns := v*1000 + frac
	if roundUp {
		ns++
	}
	if neg {
		ns = -ns
	}
	return ns, true
}

// parseFloatNS handles microsecond numbers written with an exponent.
func parseFloatNS(b []byte) (int64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, false
	}
	ns := math.Round(f * 1000)
	if math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, false
	}
	return int64(ns), true
}

// ParseInt parses a JSON integer (optionally quoted). A number with a
// fraction or exponent is truncated toward zero. It reports false for
// anything else.
func ParseInt(b []byte) (int64, bool) {
	b = unquote(b)
	v, neg, i, ok := intPrefix(b)
	if !ok {
		return 0, false
	}
	if i < len(b) {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil || math.Abs(f) >= math.MaxInt64 {
			return 0, false
		}
		return int64(f), true
	}
	if neg {
		v = -v
	}
	return v, true
}

// unquote strips the quotes of a quoted number.
func unquote(b []byte) []byte {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		return b[1 : len(b)-1]
	}
	return b
}

// intPrefix parses the optional minus sign and the integer digits at the
// start of b. It returns the magnitude, the sign, the position after the
// digits, and false when there are no digits or they overflow.
func intPrefix(b []byte) (v int64, neg bool, i int, ok bool) {
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v > (math.MaxInt64-9)/10 {
			return 0, false, 0, false
		}
		v = v*10 + int64(b[i]-'0')
	}
	return v, neg, i, i > start
}

// fixedMicrosNS converts the forms Kineto writes ts and dur in, at most 18
// digits with a point and three decimals or without a fraction, the way
// ParseMicrosNS does, with fewer checks: 18 digits cannot overflow before
// the range check. It reports false for any other text (and out of range).
func fixedMicrosNS(b []byte) (int64, bool) {
	n, frac := len(b), 0
	switch {
	case n >= 5 && n <= 22 && b[n-4] == '.':
		frac = 3
	case n == 0 || n > 18:
		return 0, false
	}
	v, f := int64(0), int64(0)
	for _, c := range b[:n-frac-min(frac, 1)] {
		if c-'0' > 9 {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	for _, c := range b[n-frac:] {
		if c-'0' > 9 {
			return 0, false
		}
		f = f*10 + int64(c-'0')
	}
	if v > (math.MaxInt64-1000)/1000 {
		return 0, false
	}
	return v*1000 + f, true
}
