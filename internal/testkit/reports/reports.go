// Package reports gives tests the analysis of a trace path, read and
// analysed once per test binary, for the packages that take reports as
// input (render) and must not read traces themselves.
package reports

import (
	"sync"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/ingest"
)

// analyzed caches the reports by path.
var analyzed sync.Map

// Of returns the analysis of path with default options, failing tb when
// it cannot be read or analysed. Callers must not modify it.
func Of(tb testing.TB, path string) *analyze.Report {
	tb.Helper()
	if r, ok := analyzed.Load(path); ok {
		return r.(*analyze.Report)
	}
	set, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	r, err := analyze.Analyze(set, analyze.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	analyzed.Store(path, r)
	return r
}
