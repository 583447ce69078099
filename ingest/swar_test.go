package ingest

import (
	"bytes"
	"testing"
)

// checkIndexQuote compares indexQuote with bytes.IndexByte from every
// start.
func checkIndexQuote(t *testing.T, b []byte) {
	t.Helper()
	for j := 0; j <= len(b); j++ {
		want := bytes.IndexByte(b[j:], '"')
		if want >= 0 {
			want += j
		}
		if got := indexQuote(b, j); got != want {
			t.Fatalf("indexQuote(%q, %d) = %d, want %d", b, j, got, want)
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
