package ingest

import (
	"encoding/binary"
	"math/bits"
)

// skipRest skips the rest of an object from i, a position inside it at
// nesting depth 1 and outside any string, and returns the position after
// its closing brace. It is for the bodies of events the reader drops, where
// speed matters more than checking every byte: it only balances braces
// outside strings.
//
// JSON strings cannot hold a raw newline, so every line starts outside a
// string, and a line without braces leaves the depth as it was: such lines
// (most lines of Kineto's pretty-printed events) are passed over eight
// bytes at a time; a line with a brace is read byte by byte (skipLine).
func (s *scanner) skipRest(i int) (int, error) {
	b := s.buf
	depth, line := 1, i // line: where the current line (or the body) starts
	for {
		k := indexBraceOrNewline(b, i)
		if k < 0 {
			return 0, errShort
		}
		if b[k] == '\n' {
			line, i = k+1, k+1
			continue
		}
		end, d, ok := skipLine(b, line, depth)
		if end < 0 {
			return 0, errShort
		}
		if ok {
			return end, nil
		}
		depth, line, i = d, end+1, end+1
	}
}

// skipLine reads b from j, outside any string, to the end of the line,
// balancing braces outside strings from depth. It returns the position of
// the newline and the new depth, or the position after the brace that
// closes depth 1 and true, or -1 if b ends first. A newline ends a string
// (it cannot be in one), so lines are independent.
func skipLine(b []byte, j, depth int) (int, int, bool) {
	inStr := false
	for ; j < len(b); j++ {
		c := b[j]
		switch {
		case c == '\n':
			return j, depth, false
		case inStr:
			if c == '"' {
				inStr = false
			} else if c == '\\' && j+1 < len(b) && b[j+1] != '\n' {
				j++
			}
		case c == '"':
			inStr = true
		case c == '{':
			depth++
		case c == '}':
			if depth--; depth == 0 {
				return j + 1, 0, true
			}
		}
	}
	return -1, 0, false
}

// indexBraceOrNewline returns the position of the first '{', '}' or '\n'
// in b at or after i, or -1.
func indexBraceOrNewline(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := eq(x, '{') | eq(x, '}') | eq(x, '\n'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '{' || c == '}' || c == '\n' {
			return i
		}
	}
	return -1
}

// closingQuote returns the position of the quote that ends the string whose
// content starts at j, or -1 if b ends first.
func closingQuote(b []byte, j int) int {
	for {
		q := indexQuote(b, j)
		if q < 0 {
			return -1
		}
		if b[q-1] != '\\' {
			return q
		}
		n := 0
		for p := q - 1; b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
}
