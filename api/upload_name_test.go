package api

import "testing"

func TestCleanName(t *testing.T) {
	tests := map[string]string{
		"rank0.pt.trace.json.gz":         "rank0.pt.trace.json.gz",
		"../../etc/passwd":               "etc/passwd",
		`C:\Users\me\trace (1).json`:     "C_/Users/me/trace__1_.json",
		"prof/capture_traces/r0.json.gz": "prof/capture_traces/r0.json.gz",
		".hidden":                        "hidden",
		"":                               "",
	}
	for in, want := range tests {
		if got := cleanName(in); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", in, got, want)
		}
	}
}
