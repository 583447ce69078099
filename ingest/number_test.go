package ingest

import (
	"math/rand/v2"
	"testing"
)

func TestParseMicrosNS(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"6520618853487.683", 6520618853487683, true},
		{"4458676983543.183", 4458676983543183, true},
		{"1711964646000", 1711964646000000, true},
		{"0", 0, true},
		{"41.4", 41400, true},
		{"2.1", 2100, true},
		{"0.0005", 1, true},
		{"0.0004", 0, true},
		{"1.2345", 1235, true},
		{"1.9999", 2000, true},
		{"-3.5", -3500, true},
		{`"12.5"`, 12500, true},
		{"1.5e3", 1500000, true},
		{"1E-3", 1, true},
		{"", 0, false},
		{"-", 0, false},
		{"1.", 0, false},
		{"abc", 0, false},
		{"12x", 0, false},
		{"99999999999999999999", 0, false},
		{"9223372036854775", 0, false},
		{"1e400", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseMicrosNS([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseMicrosNS(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"57541", 57541, true},
		{"-7", -7, true},
		{`"12"`, 12, true},
		{"4.74", 4, true},
		{"null", 0, false},
		{"", 0, false},
		{`"[0, 1]"`, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseInt([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRankFromName(t *testing.T) {
	tests := []struct {
		name string
		want int
	}{
		{"dp0_pp0_tp0_dcp0_ep0_rank3.1234.pt.trace.json.gz", 3},
		{"vllm-instance-abc-rank-5.pt.trace.json.gz", 5},
		{"/x/y/trace_rank-12.json", 12},
		{"rank7.json.gz", 7},
		{"worker_rank_2.json", 2},
		{"host123_45678.pt.trace.json.gz", -1},
		{"prank5.json", -1},
		{"a.tar!prof/rank1.json", 1},
	}
	for _, tt := range tests {
		if got := RankFromName(tt.name); got != tt.want {
			t.Errorf("RankFromName(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestFixedMicrosNS checks the fast path of parseMicrosNS against its
// general parse (a quoted number, which the fast path does not read), over
// numbers of every length in Kineto's forms and near misses of them.
func TestFixedMicrosNS(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	forms := []string{"5133109884980.397", "1661203463029548", "123456789012345.999", "1234567890123456.999",
		"1234567890123456", "9223372036854775", "9223372036854774.999", "999999999999999999", "999999999999999999.999", "0.000", "7", "8.1", "1.", ".123", "1..23", "-1.234", "1.2345", "1e3", "12.34x", "x2.345"}
	for range 20000 {
		n := 1 + r.IntN(24)
		b := make([]byte, n)
		for i := range b {
			b[i] = "0123456789"[r.IntN(10)]
		}
		if r.IntN(4) > 0 && n >= 5 {
			b[n-4] = '.'
		}
		if r.IntN(8) == 0 {
			b[r.IntN(n)] = "-.e+x"[r.IntN(5)]
		}
		forms = append(forms, string(b))
	}
	fast := 0
	for _, f := range forms {
		got, ok := fixedMicrosNS([]byte(f))
		want, wantOK := parseMicrosNS([]byte(`"` + f + `"`))
		if ok {
			fast++
			if !wantOK || got != want {
				t.Fatalf("fixedMicrosNS(%q) = %d, true; the general parse gives %d, %v", f, got, want, wantOK)
			}
		}
		if all, allOK := parseMicrosNS([]byte(f)); all != want || allOK != wantOK {
			t.Fatalf("parseMicrosNS(%q) = %d, %v; quoted %d, %v", f, all, allOK, want, wantOK)
		}
	}
	if fast < len(forms)/3 {
		t.Errorf("the fast path read only %d of %d numbers", fast, len(forms))
	}
}
