// Package render turns an analysis Report into tables (plain text, Markdown,
// CSV, JSON) and charts (SVG, PNG) drawn with gonum.org/v1/plot. Every
// function is a pure transformation of its input: the command line and the
// REST service share one implementation.
//
// Every share printed says its base: "% kernel" is a percentage of the sum
// of kernel durations, "% span" of the steps' first-kernel-start to
// last-kernel-end span.
package render
