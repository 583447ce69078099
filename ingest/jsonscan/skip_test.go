package jsonscan

import (
	"math/rand/v2"
	"testing"
)

// skipRestSlow is SkipRest byte by byte with an explicit string state,
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
	s := &Scanner{Buf: b}
	got, err := s.SkipRest(0)
	want, ok := skipRestSlow(b, 0)
	if (err == nil) != ok || (ok && got != want) {
		t.Fatalf("SkipRest(%q) = %d, %v; want %d, %v", b, got, err, want, ok)
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
	f.Add([]byte(`, "pid": 0,` + "\n" + `    "args": {` + "\n" + `      "a": [1]` + "\n" + `    }` + "\n" + `  },`))
	f.Add([]byte(`,"pid":0,"args":{"a":"x"}},` + "\n"))
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

// TestSkipEventTail checks SkipRest on event tails in Kineto's layout and
// in compact JSON, which skipEventTail reads, and on variants of them that
// it must leave to the general skip (strings with braces, quotes and
// escapes, other whitespace, nested objects), against skipRestSlow.
func TestSkipEventTail(t *testing.T) {
	tests := []struct {
		tail string
		fast bool // skipEventTail reads it
	}{
		{`, "pid": 652, "tid": 652,` + "\n" + `    "ts": 1.5, "dur": 8.1,` + "\n" + `    "args": {` + "\n" + `      "External id": 5, "Input Dims": [[4, 128], []], "Ev Idx": 5` + "\n" + `    }` + "\n" + `  },` + "\n  {", true},
		{`, "pid": 0, "tid": 7, "ts": 51.3,` + "\n" + `    "cat": "ac2g", "name": "ac2g", "bp": "e"` + "\n" + `  },`, true},
		{`,"pid":652,"tid":652,"ts":1.2,"dur":262.891,"args":{"External id":513,"Concrete Inputs":["", "[-1]"],"Ev Idx":0}},` + "\n{", true},
		{`,"pid":0,"tid":7,"ts":51.3,"cat":"ac2g","name":"ac2g","bp":"e"},` + "\n{", true},
		// Left to the general skip, with the same result.
		{`, "pid": 652,` + "\n" + `    "args": {` + "\n" + `      "s": "a}b"` + "\n" + `    }` + "\n" + `  }`, false},
		{`, "pid": 652,` + "\n" + `    "args": {` + "\n" + `      "s": {"t": 1}` + "\n" + `    }` + "\n" + `  }`, false},
		{`, "pid": 652,` + "\n" + `    "args":  {` + "\n" + `      "s": 1` + "\n" + `    }` + "\n" + `  }`, false},
		{`, "pid": 652,` + "\n" + `    "args": {` + "\n" + `      "s": 1` + "\n" + `   }` + "\n" + `  }`, false},
		{`, "name": "x}",` + "\n" + `  }`, false},
		{`, "pid": 652 }`, true},
		{`,"name":"a\"}b","args":{"s":"\\"}} , {}`, false},
		{`,"name":"a}b","args":{"s":1}}`, false},
		{`,"name":"a{b","args":{"s":1}}`, false},
		{`,"args":{"s":"x}"}}`, false},
		{`,"args":{"s":"x"} }`, false},
		{`,"args":{"s":1},"x":"}"}`, false},
		{`,"args":{"s":` + "\n" + `1}}`, false},
		{`, "x": "a` + "\n" + `  }`, true}, // a newline ends a string, for SkipRest
		{`,"pid":652,"args":{"s":1`, false},
		{`,"pid":652`, false},
	}
	for _, tc := range tests {
		b := []byte(tc.tail)
		checkSkipRest(t, b)
		if got := (&Scanner{Buf: b}).skipEventTail(0); (got >= 0) != tc.fast {
			t.Errorf("skipEventTail(%q) = %d, want fast path %v", tc.tail, got, tc.fast)
		}
		for n := range len(b) { // every cut: the general skip's ErrShort or the same end
			checkSkipRest(t, b[:n])
		}
	}
}
