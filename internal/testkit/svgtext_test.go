package testkit

import "testing"

func TestSVGText(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{`<svg><text>AllReduce</text><g><text> 1.86 ms </text></g></svg>`, "AllReduce\n1.86 ms\n", false},
		{`<svg></svg>`, "", false},
		{`<svg><text>open`, "", true},
	}
	for _, tt := range tests {
		got, err := SVGText([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("SVGText(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
