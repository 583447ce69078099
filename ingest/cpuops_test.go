package ingest

import "testing"

func TestEmbeddingTokens(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int64
	}{
		{"[[128256, 4096], [512], [], [], []]", 512},
		{"[[128256, 4096], [4], [], [], []]", 4},
		{"[[151936,1024],[2,37],[],[],[]]", 74},
		{"[[128256, 4096], [], [], [], []]", 0},
		{"[[128256, 4096]]", 0},
		{"", 0},
		{"[]", 0},
	} {
		if got := embeddingTokens([]byte(c.raw)); got != c.want {
			t.Errorf("embeddingTokens(%q) = %d, want %d", c.raw, got, c.want)
		}
	}
}
