package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// diffUsage is the diff command's synopsis.
func diffUsage() string {
	return `usage: kinetoscope diff BASE HEAD [--format ` + diffFormatList() + `] [--rank N] [--rank FILE=N]... [--phase ` + strings.Join(diff.Phases(), "|") + `] [--reports] [--link L]

Compares two profiling runs bucket by bucket: step span, time and calls per
step per bucket, kernels present in one run only, launch delay, metadata.
Each change in step time and bucket time is tested against run-to-run noise
(bootstrap confidence interval of the difference of means over the steps).
BASE and HEAD are trace files, profile directories or archives; with
--reports they are JSON reports written by 'kinetoscope analyze --format json'.

formats:
` + formatLines(driver.DiffFormats())
}

// diffArgs are the diff command's parsed arguments.
type diffArgs struct {
	base, head string
	format     string
	reports    bool
	opt        diff.Options
	analyze    analyze.Options
	ranks      ingest.RankAssignments
}

// runDiff is the diff command.
func runDiff(args []string, stdout, stderr io.Writer) error {
	a, err := parseDiffArgs(args, stderr)
	if err != nil {
		return err
	}
	d, err := comparePaths(a.base, a.head, a.reports, a.opt, a.analyze, a.ranks)
	if err != nil {
		return err
	}
	return driver.WriteDiff(stdout, d, a.format)
}

// comparePaths loads two runs, as trace paths or (reports) saved JSON
// reports, and compares them. ranks are the files' rank assignments
// (--rank FILE=N): each applies to the side its FILE lies under, or to
// both when it lies under neither.
func comparePaths(base, head string, reports bool, opt diff.Options, aopt analyze.Options, ranks ingest.RankAssignments) (*diff.Diff, error) {
	if reports && len(ranks) > 0 {
		return nil, errors.New("--rank FILE=N says which rank a trace file is: with --reports there are no trace files to read (give it to the analyze that wrote the reports)")
	}
	var sides [2]*analyze.Report
	paths := []string{base, head}
	for i, p := range paths {
		var err error
		if sides[i], err = loadDiffSide(p, reports, aopt, sideRanks(ranks, p, paths[1-i])); err != nil {
			return nil, err
		}
	}
	return driver.Compare(sides[0], sides[1], opt)
}

// parseDiffArgs parses flags given before, between or after the two paths.
func parseDiffArgs(args []string, stderr io.Writer) (diffArgs, error) {
	var a diffArgs
	fs := newFlagSet("diff", diffUsage(), stderr)
	fs.StringVar(&a.format, "format", "table", "output format: "+strings.Join(driver.DiffFormats(), ", "))
	fs.StringVar(&a.opt.Phase, "phase", "decode", "steps compared: "+strings.Join(diff.Phases(), ", "))
	fs.BoolVar(&a.reports, "reports", false, "BASE and HEAD are JSON reports from 'kinetoscope analyze --format json'")
	linkFlag(fs, &a.analyze.Link)
	rank := -1
	a.ranks = ingest.RankAssignments{}
	rankFlag(fs, "N: compare this rank only (default: all ranks, pooled per step)", &rank, a.ranks)
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return a, err
	}
	if len(paths) != 2 {
		fs.Usage()
		return a, fmt.Errorf("want two paths, BASE and HEAD; got %d", len(paths))
	}
	if err := checkOneOf("format", a.format, driver.DiffFormats()); err != nil {
		return a, err
	}
	a.base, a.head = paths[0], paths[1]
	if rank >= 0 {
		a.opt.Rank = &rank
	}
	return a, nil
}

// loadDiffSide reads one side: a saved JSON report, or a trace path to
// ingest and analyse.
func loadDiffSide(path string, report bool, opt analyze.Options, ranks ingest.RankAssignments) (*analyze.Report, error) {
	if report {
		r, err := driver.ReadReport(path)
		if err != nil {
			return nil, fmt.Errorf("%w (or drop --reports)", err)
		}
		return r, nil
	}
	ropt, done := readOptions(os.Stderr)
	ropt.Analyze = opt
	ropt.Ranks = ranks
	run, err := driver.Analyze(ingest.FromPath(path), ropt)
	done()
	if err != nil {
		return nil, err
	}
	return run.Report, nil
}
