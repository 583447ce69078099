package ingest

import (
	"math/rand/v2"
	"testing"
)

// skipRestSlow is skipRest byte by byte with an explicit string state,
// the reference for the faster version: the same leniency (a newline ends
// a string), none of the shortcuts.
func skipRestSlow(b []byte, i int) (int, bool) {
	depth := 1
	for {
		end, d, ok := skipLine(b, i, depth)
		if end < 0 || ok {
			return end, ok
		}
		depth, i = d, end+1
	}
}

func checkSkipRest(t *testing.T, b []byte) {
	t.Helper()
	s := &scanner{buf: b}
	got, err := s.skipRest(0)
	want, ok := skipRestSlow(b, 0)
	if (err == nil) != ok || (ok && got != want) {
		t.Fatalf("skipRest(%q) = %d, %v; want %d, %v", b, got, err, want, ok)
	}
}

func TestSkipRest(t *testing.T) {
	tests := []string{
		`"name": "x", "args": {"a": 1}} tail`,
		`"name": "a{b}c", "pid": 1}`,
		`"name": "a\"}b", "args": {"s": "\\"}} , {}`,
		`"x": {"y": {"z": "}}}}"}}, "w": 1}` + string(make([]byte, 100)),
		`"unterminated": {`,
	}
	for _, in := range tests {
		checkSkipRest(t, []byte(in))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 40000 {
		alphabet := []byte("\"{}ab \n")
		if n%4 == 0 {
			alphabet = append(alphabet, '\\')
		}
		b := make([]byte, r.IntN(300))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		checkSkipRest(t, b)
	}
}

func FuzzSkipRest(f *testing.F) {
	f.Add([]byte(`"name": "a\"}b", "args": {"s": "\\"}} , {}`))
	f.Fuzz(func(t *testing.T, b []byte) { checkSkipRest(t, b) })
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

func TestLastNewline(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = "a\n\x00\x0b"[r.IntN(4)]
		}
		lo := r.IntN(len(b) + 1)
		hi := lo + r.IntN(len(b)-lo+1)
		want := -1
		for i := hi - 1; i >= lo; i-- {
			if b[i] == '\n' {
				want = i
				break
			}
		}
		if got := lastNewline(b, lo, hi); got != want {
			t.Fatalf("lastNewline(%q, %d, %d) = %d, want %d", b, lo, hi, got, want)
		}
	}
}
