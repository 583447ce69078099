package driver

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
)

// TestOutputTable: every row of the table of outputs is whole (a name, a
// summary, a content type, a writer or drawer that matches its input),
// and names are unique among formats and among charts.
func TestOutputTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Formats() {
		if seen[f.Name] || f.Name == "" || f.Summary == "" || f.ContentType == "" || (f.Report == nil && f.Diff == nil) {
			t.Errorf("format row %+v: duplicate or incomplete", f.Name)
		}
		seen[f.Name] = true
		if ContentType(f.Name) != f.ContentType {
			t.Errorf("ContentType(%s) = %q, want %q", f.Name, ContentType(f.Name), f.ContentType)
		}
	}
	seen = map[string]bool{}
	for _, k := range ChartKinds() {
		if seen[k.Name] || k.Name == "" || k.Summary == "" {
			t.Errorf("chart row %q: duplicate or incomplete", k.Name)
		}
		seen[k.Name] = true
		if (k.Input == FromDiff) != (k.drawDiff != nil) || (k.Input == FromDiff) == (k.draw != nil) {
			t.Errorf("chart %s: input %d with draw %t, drawDiff %t", k.Name, k.Input, k.draw != nil, k.drawDiff != nil)
		}
	}
	for _, f := range ImageFormats() {
		if ContentType(string(f.Format)) != f.ContentType || !strings.HasPrefix(f.ContentType, "image/") {
			t.Errorf("image format %s: content type %q", f.Format, ContentType(string(f.Format)))
		}
	}
	if ContentType("xml") != "" {
		t.Error(`ContentType("xml") is not ""`)
	}
}

// TestWriteEveryFormat: every report format writes an empty report and a
// real one, every diff format a diff; an unknown name is refused naming it
// and the formats there are, and nothing is refused as nothing to write.
func TestWriteEveryFormat(t *testing.T) {
	_, real := load(t, testkit.Real(t, "cudagraph"))
	for _, r := range []*analyze.Report{{Ranks: []analyze.Rank{{Rank: -1}}}, real} {
		for _, name := range ReportFormats() {
			var b bytes.Buffer
			if err := WriteReport(&b, r, name); err != nil || b.Len() == 0 {
				t.Errorf("report as %s: %v (%d bytes)", name, err, b.Len())
			}
		}
	}
	d, err := Compare(real, real, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range DiffFormats() {
		var b bytes.Buffer
		if err := WriteDiff(&b, d, name); err != nil || b.Len() == 0 {
			t.Errorf("diff as %s: %v (%d bytes)", name, err, b.Len())
		}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{WriteReport(&bytes.Buffer{}, real, "xml"), `unknown report format "xml" (want one of ` + strings.Join(ReportFormats(), ", ")},
		{WriteDiff(&bytes.Buffer{}, d, "csv"), `unknown diff format "csv" (want one of ` + strings.Join(DiffFormats(), ", ")},
		{WriteReport(&bytes.Buffer{}, nil, "table"), "no report"},
		{WriteDiff(&bytes.Buffer{}, nil, "json"), "no diff"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("err = %v, want one containing %q", tc.err, tc.want)
		}
	}
	if _, err := (&Run{Report: real}).Chart(ChartRequest{Kind: "diff"}); err == nil || !strings.Contains(err.Error(), "chart kind of a run") {
		t.Errorf("run chart of kind diff: %v", err)
	}
	if _, err := DiffChart(d, "breakdown", "svg"); err == nil || !strings.Contains(err.Error(), "chart kind of a diff") {
		t.Errorf("diff chart of kind breakdown: %v", err)
	}
}

// TestREADMEListsOutputs: the README's command table offers every format
// and chart of the table, and no other.
func TestREADMEListsOutputs(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, tc := range []struct {
		line string // a regexp of the README line that lists them
		want []string
	}{
		{`kinetoscope analyze PATH \[--format ([^\]]+)\]`, ReportFormats()},
		{`kinetoscope diff BASE HEAD \[--format ([^\]]+)\]`, DiffFormats()},
		{`kinetoscope chart PATH --kind (\S+)`, RunChartKinds()},
	} {
		m := regexp.MustCompile(tc.line).FindStringSubmatch(readme)
		if m == nil {
			t.Errorf("README has no line matching %s", tc.line)
			continue
		}
		got := strings.Split(strings.ReplaceAll(m[1], `\|`, "|"), "|")
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("README lists %v, the table %v", got, tc.want)
		}
	}
}
