package jsonscan

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
		got, ok := ParseMicrosNS([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseMicrosNS(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
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
		got, ok := ParseInt([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestFixedMicrosNS checks the fast path of ParseMicrosNS against its
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
		want, wantOK := ParseMicrosNS([]byte(`"` + f + `"`))
		if ok {
			fast++
			if !wantOK || got != want {
				t.Fatalf("fixedMicrosNS(%q) = %d, true; the general parse gives %d, %v", f, got, want, wantOK)
			}
		}
		if all, allOK := ParseMicrosNS([]byte(f)); all != want || allOK != wantOK {
			t.Fatalf("ParseMicrosNS(%q) = %d, %v; quoted %d, %v", f, all, allOK, want, wantOK)
		}
	}
	if fast < len(forms)/3 {
		t.Errorf("the fast path read only %d of %d numbers", fast, len(forms))
	}
}

// TestNumberFastPaths checks that Digits and NumberEnd, where they read
// a number, read what literal and ParseInt read, and that they leave to
// them what they do not read.
func TestNumberFastPaths(t *testing.T) {
	for _, tc := range []struct {
		text       string
		digits, nb bool // Digits, NumberEnd read it
	}{
		{"12345,         ", true, true},
		{"0}      ", true, true},
		{"123456789012345678,        ", true, true},
		{"1234567890123456789,        ", false, true},
		{"1234567890123456789.5,       ", false, true},
		{"7.757576,        ", false, true},
		{"7.,              ", false, true},
		{"7.5e3,           ", false, false},
		{"7e3,             ", false, false},
		{"-7,              ", false, false},
		{"7x,              ", false, false},
		{"7.x,             ", false, false},
		{"\"7\",            ", false, false},
		{"7,", false, false}, // too near the end: left to literal
	} {
		s := &Scanner{Buf: []byte(tc.text)}
		raw, end, err := s.Literal(0)
		want, isInt := ParseInt(raw)
		v, e := s.Digits(0)
		if (e >= 0) != tc.digits || e >= 0 && (err != nil || e != end || !isInt || v != want) {
			t.Errorf("Digits(%q) = %d, %d; literal %q, %d, %v; ParseInt %d, %v", tc.text, v, e, raw, end, err, want, isInt)
		}
		if e := s.NumberEnd(0); (e >= 0) != tc.nb || e >= 0 && (err != nil || e != end) {
			t.Errorf("NumberEnd(%q) = %d; literal %q, %d, %v", tc.text, e, raw, end, err)
		}
	}
}
