// Package testkit holds the helpers that tests of several packages share:
// where the sample traces are, and what an SVG chart says. Tests fail,
// never skip, when a sample is missing.
package testkit

import (
	"fmt"
	"net"
	"testing"

	"kinetoscope/sampletraces"
)

// Public returns the path of one public trace, e.g.
// "hta-nccl-allreduce-broadcast-rank0.json.gz".
func Public(tb testing.TB, name string) string {
	tb.Helper()
	return must(tb)(sampletraces.Public(name))
}

// PublicDir returns the directory of the public traces.
func PublicDir(tb testing.TB) string {
	tb.Helper()
	return must(tb)(sampletraces.PublicDir())
}

// Real returns sampletraces/real/NAME, one real run (a variant or a
// style) with its truth.json.
func Real(tb testing.TB, name string) string {
	tb.Helper()
	return must(tb)(sampletraces.RealDir(name))
}

// must returns a function that hands back a path found by one of
// sampletraces' locators, or ends the test tb with the locator's error, so
// a missing sample trace fails a test instead of skipping it.
func must(tb testing.TB) func(path string, err error) string {
	return func(path string, err error) string {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return path
	}
}

// MustSVGText returns the text of an SVG chart (SVGText), failing tb when
// it is not XML.
func MustSVGText(tb testing.TB, svg []byte) string {
	tb.Helper()
	text, err := SVGText(svg)
	if err != nil {
		tb.Fatal(err)
	}
	return text
}

// FreePort returns a TCP port of 127.0.0.1 that nothing listened on a
// moment ago, for a test server started as its own process.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
