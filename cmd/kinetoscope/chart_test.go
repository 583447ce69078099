package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
)

func TestRunChartKinds(t *testing.T) {
	trace := testkit.Public(t, "tracelens-sglang-qwen3-8b-decode.json.gz")
	dir := t.TempDir()
	base := writeDiffReport(t, dir, "base", 12, 20000, 11000)
	head := writeDiffReport(t, dir, "head", 12, 12000, 3000)
	tests := []struct {
		args []string
		file string // written file, "" for stdout
		want string // text the SVG must carry
	}{
		{[]string{"chart", trace, "-o", filepath.Join(dir, "b.png")}, "b.png", ""},
		{[]string{"chart", trace, "--kind", "breakdown"}, "", "Where decode time goes"},
		{[]string{"chart", "--kind", "steps", trace, "--rank", "0", "-o", filepath.Join(dir, "s.svg")}, "s.svg", "Kernel time per step by bucket, rank 0"},
		{[]string{"chart", trace, "--kind", "ranks", "--format", "png", "-o", filepath.Join(dir, "r.img")}, "r.img", ""},
		{[]string{"chart", trace, "--kind", "timeline", "--step", "0"}, "", "Step 0"},
		{[]string{"chart", "--kind", "diff", "--reports", base, head, "-o", filepath.Join(dir, "d.svg")}, "d.svg", "AllReduce"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			code, out, errs := runCmd(tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			img := []byte(out)
			if tc.file != "" {
				var err error
				if img, err = os.ReadFile(filepath.Join(dir, tc.file)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.want == "" {
				if _, err := png.Decode(bytes.NewReader(img)); err != nil {
					t.Fatalf("not a PNG: %v", err)
				}
				return
			}
			if !strings.Contains(testkit.MustSVGText(t, img), tc.want) {
				t.Errorf("SVG lacks %q", tc.want)
			}
		})
	}
}

func TestRunChartErrors(t *testing.T) {
	trace := testkit.Public(t, "tracelens-sglang-qwen3-8b-decode.json.gz")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"chart"}, "wants 1 path(s), got 0"},
		{[]string{"chart", trace, "--kind", "pie"}, `unknown chart kind "pie"`},
		{[]string{"chart", trace, "--kind", "diff"}, "wants 2 path(s), got 1"},
		{[]string{"chart", trace, "-o", "x.gif"}, `-o x.gif: unknown chart format ".gif"`},
		{[]string{"chart", trace, "--step", "-3"}, "non-negative"},
		{[]string{"chart", trace, "--kind", "steps", "--rank", "9"}, "no rank 9 (ranks: [0])"},
		{[]string{"chart", trace, "--kind", "timeline", "--step", "99999"}, "no step 99999"},
		{[]string{"chart", "/nonexistent/trace.json"}, "/nonexistent/trace.json"},
	}
	for _, tc := range tests {
		code, _, errs := runCmd(tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want it to say %q", tc.args, code, errs, tc.want)
		}
	}
}
