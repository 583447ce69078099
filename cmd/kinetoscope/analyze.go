package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/ingest"
	"kinetoscope/render"
)

// analyzeUsage is the analyze command's synopsis.
const analyzeUsage = `usage: kinetoscope analyze PATH [--format table|json|markdown|csv|csv-summary] [--rules FILE] [--step-regex RE] [--rank N]

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
	set, err := ingest.Open(a.path, ingest.Options{})
	if err != nil {
		return err
	}
	if len(set.Traces) == 0 {
		return fmt.Errorf("%s: no trace with GPU events (%s)", a.path, setProblems(set))
	}
	r, err := analyze.Analyze(set, a.opt)
	if err != nil {
		return err
	}
	return render.WriteReport(stdout, r, a.format)
}

// setProblems summarises why a set holds no trace to analyse.
func setProblems(set *ingest.Set) string {
	var ps []string
	for _, s := range set.SetAside {
		ps = append(ps, s.Path+": "+s.Reason)
	}
	for _, e := range set.Errors {
		ps = append(ps, e.Error())
	}
	if len(ps) == 0 {
		return "nothing found"
	}
	return strings.Join(ps, "; ")
}

// parseAnalyzeArgs parses flags given before or after the path.
func parseAnalyzeArgs(args []string, stderr io.Writer) (analyzeArgs, error) {
	var a analyzeArgs
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, analyzeUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&a.format, "format", "table", "output format: "+strings.Join(render.ReportFormats(), ", "))
	fs.StringVar(&a.opt.RulesFile, "rules", "", "YAML file of classification rules tried before the built-in ones")
	fs.StringVar(&a.opt.StepRegex, "step-regex", "", "RE2 regex: CPU annotations whose name matches start a step (overrides built-in step markers)")
	fs.Func("rank", "analyse this rank only", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("rank %q is not a number", s)
		}
		a.opt.Rank = &n
		return nil
	})
	var paths []string
	for {
		if err := fs.Parse(args); err != nil {
			return a, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		paths = append(paths, args[0])
		args = args[1:]
	}
	if len(paths) != 1 {
		fs.Usage()
		return a, errors.New("want exactly one PATH")
	}
	if !validFormat(a.format) {
		return a, fmt.Errorf("unknown format %q (want %s)", a.format, strings.Join(render.ReportFormats(), ", "))
	}
	a.path = paths[0]
	return a, nil
}

func validFormat(f string) bool {
	for _, x := range render.ReportFormats() {
		if x == f {
			return true
		}
	}
	return false
}
