package jsonscan

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// checkIndexQuote compares IndexQuote with bytes.IndexByte from every
// start.
func checkIndexQuote(t *testing.T, b []byte) {
	t.Helper()
	for j := 0; j <= len(b); j++ {
		want := bytes.IndexByte(b[j:], '"')
		if want >= 0 {
			want += j
		}
		if got := IndexQuote(b, j); got != want {
			t.Fatalf("IndexQuote(%q, %d) = %d, want %d", b, j, got, want)
		}
	}
}

func TestIndexQuote(t *testing.T) {
	for _, in := range []string{"", "a", `abc"def`, `abcdefghij"`, `0123456789abcdef"`, "\x80\x81\"",
		"\x21\x22\x23", "\x22\x22\x01\x22", "zzzzzzzzzzzzzzzzzzzzzzz", "\xa2\xa2\xa2\xa2\xa2\xa2\xa2\xa2\xa2\""} {
		checkIndexQuote(t, []byte(in))
	}
}

func FuzzIndexQuote(f *testing.F) {
	f.Add([]byte(`abc"def\`))
	f.Fuzz(checkIndexQuote)
}

func TestNonDigits(t *testing.T) {
	var b [8]byte
	for c := range 256 {
		for pos := range 8 {
			for i := range b {
				b[i] = '7'
			}
			b[pos] = byte(c)
			m := nonDigits(binary.LittleEndian.Uint64(b[:]))
			isDigit := c >= '0' && c <= '9'
			for i := range 8 {
				zero := m>>(8*i)&0xff == 0
				if want := i != pos || isDigit; zero != want {
					t.Fatalf("nonDigits byte %d of %q: zero %v, want %v", i, b, zero, want)
				}
			}
		}
	}
}

func TestLiteral(t *testing.T) {
	for _, in := range []string{"1661203463029566,", "5133109885544.956}", "-12e+5 ", "true,", "null]",
		"123456789012345678901234567890 ", "0.5925926\n", "7,"} {
		s := &Scanner{Buf: []byte(in)}
		raw, next, err := s.Literal(0)
		want := strings.IndexAny(in, ",}] \n")
		if err != nil || next != want || string(raw) != in[:want] {
			t.Errorf("literal(%q) = %q, %d, %v; want %q", in, raw, next, err, in[:want])
		}
	}
}
