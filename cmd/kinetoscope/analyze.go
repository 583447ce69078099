package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/driver"
)

// analyzeUsage is the analyze command's synopsis.
const analyzeUsage = `usage: kinetoscope analyze PATH [--format table|json|markdown|csv|csv-summary] [--rules FILE] [--step-regex RE] [--rank N] [--link L]

Classifies every GPU kernel into buckets (AllReduce, GEMM, attention, ...),
cuts each rank's trace into engine steps (prefill / decode, CUDA-graph
aware) and reports where decode time goes, headline first. PATH is a trace
file, a profile directory or an archive (tar, tar.gz, zip).
`

// analyzeArgs are the analyze command's parsed arguments.
type analyzeArgs struct {
	path   string
	format string
	opt    analyze.Options
}

// runAnalyze is the analyze command.
func runAnalyze(args []string, stdout, stderr io.Writer) error {
	a, err := parseAnalyzeArgs(args, stderr)
	if err != nil {
		return err
	}
	run, err := driver.Analyze(a.path, driver.Options{Analyze: a.opt})
	if err != nil {
		return err
	}
	return driver.WriteReport(stdout, run.Report, a.format)
}

// parseAnalyzeArgs parses flags given before or after the path.
func parseAnalyzeArgs(args []string, stderr io.Writer) (analyzeArgs, error) {
	var a analyzeArgs
	fs := newFlagSet("analyze", analyzeUsage, stderr)
	fs.StringVar(&a.format, "format", "table", "output format: "+strings.Join(driver.ReportFormats(), ", "))
	fs.StringVar(&a.opt.RulesFile, "rules", "", "YAML file of classification rules tried before the built-in ones")
	fs.StringVar(&a.opt.StepRegex, "step-regex", "", "RE2 regex: CPU annotations whose name matches start a step (overrides built-in step markers)")
	linkFlag(fs, &a.opt.Link)
	fs.Func("rank", "analyse this rank only", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("rank %q is not a number", s)
		}
		a.opt.Rank = &n
		return nil
	})
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return a, err
	}
	if len(paths) != 1 {
		fs.Usage()
		return a, errors.New("want exactly one PATH")
	}
	a.path = paths[0]
	return a, checkOneOf("format", a.format, driver.ReportFormats())
}

// linkFlag adds --link, the link behind collective bus bandwidth, to fs.
func linkFlag(fs *flag.FlagSet, link *string) {
	fs.Func("link", "link between the GPUs for collective bus bandwidth: nvlink3|nvlink4|nvlink5|pcie4x16|pcie5x16 or GB/s per GPU and direction (default: from the GPU name)", func(s string) error {
		if _, err := analyze.ParseLink(s); err != nil {
			return err
		}
		*link = s
		return nil
	})
}
