package diff

import "strings"

// NormalizeKernel reduces a kernel name to what stays the same across
// variants of one kernel: template arguments and parameter lists are
// removed, and so are tile shapes (64x8) and all other numbers, so that
// nvjet_sm90_tst_64x8_64x16_... and nvjet_sm90_tst_128x8_... pair up.
func NormalizeKernel(name string) string {
	s := stripNested(name, '<', '>')
	s = stripNested(s, '(', ')')
	s = strings.TrimPrefix(strings.TrimSpace(s), "void ")
	var b strings.Builder
	prevSep := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			continue
		case c == 'x' && isTileX(s, i):
			continue
		case c == '_' || c == ' ':
			if !prevSep {
				b.WriteByte('_')
			}
			prevSep = true
			continue
		}
		b.WriteByte(c)
		prevSep = false
	}
	return strings.TrimSuffix(b.String(), "_")
}

// isTileX reports whether s[i] is the x of a shape such as 64x8: a digit on
// both sides.
func isTileX(s string, i int) bool {
	return i > 0 && i+1 < len(s) && isDigit(s[i-1]) && isDigit(s[i+1])
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// stripNested removes every open..close span, nesting included; an
// unbalanced close is kept as text.
func stripNested(s string, open, close byte) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == open:
			depth++
		case c == close && depth > 0:
			depth--
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}
