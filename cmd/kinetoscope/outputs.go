package main

import (
	"fmt"
	"strings"

	"kinetoscope/driver"
)

// The usage text of the commands that write outputs, read from driver's
// one table of outputs (driver.Formats, driver.ChartKinds), so that it
// lists what the code offers and nothing else.

// reportFormatList is the report formats as a flag synopsis: "a|b|c".
func reportFormatList() string { return strings.Join(driver.ReportFormats(), "|") }

// diffFormatList is the diff formats as a flag synopsis.
func diffFormatList() string { return strings.Join(driver.DiffFormats(), "|") }

// runChartList is the charts of a run as a flag synopsis.
func runChartList() string { return strings.Join(driver.RunChartKinds(), "|") }

// imageFormatList is the chart image formats as an -o synopsis:
// "FILE.svg|.png".
func imageFormatList() string {
	var exts []string
	for _, f := range driver.ImageFormats() {
		exts = append(exts, "."+string(f.Format))
	}
	return "FILE" + strings.Join(exts, "|")
}

// formatLines lists the formats that keep accepts, one a line with its
// summary, for a command's usage.
func formatLines(names []string) string {
	var b strings.Builder
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, f := range driver.Formats() {
		if want[f.Name] {
			fmt.Fprintf(&b, "  %-14s %s\n", f.Name, f.Summary)
		}
	}
	return b.String()
}

// chartLines lists every chart, one a line with its summary.
func chartLines() string {
	var b strings.Builder
	for _, k := range driver.ChartKinds() {
		fmt.Fprintf(&b, "  %-10s %s\n", k.Name, k.Summary)
	}
	return b.String()
}
