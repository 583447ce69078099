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
