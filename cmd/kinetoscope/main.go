// Command kinetoscope analyses PyTorch profiler traces of LLM inference
// servers: where GPU time goes per step, bucket by bucket, across ranks, and
// how two runs differ.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// verb is one subcommand.
type verb struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// verbs returns the subcommands by name.
func verbs() map[string]verb {
	return map[string]verb{
		"inspect": {"show what each trace file holds (rank, events by category, warnings)", runInspect},
		"analyze": {"per-step breakdown of GPU time by bucket (" + strings.Join(driver.ReportFormats(), ", ") + ")", runAnalyze},
		"chart":   {"draw a chart (" + strings.Join(chartKinds(), ", ") + ") as SVG or PNG", runChart},
		"diff":    {"compare two runs bucket by bucket, with a noise test", runDiff},
		"serve":   {"start the REST service and web page", runServe},
		"synth":   {"write a synthetic vLLM-style multi-rank trace of any size", runSynth},
		"bench":   {"measure ingest speed and memory on a trace file against baselines", runBench},
		"watch":   {"follow a vLLM profile directory as it fills and analyse each set of rank files", runWatch},
		"capture": {"profile a running vLLM server (start_profile, stop_profile) and analyse its traces", runCapture},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a verb and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	vs := verbs()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, vs)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	v, ok := vs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "kinetoscope: unknown command %q\n\n", args[0])
		usage(stderr, vs)
		return 2
	}
	if err := v.run(args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "kinetoscope %s: %v\n", args[0], err)
		return errorCode(err)
	}
	return 0
}

// errorCode is the exit code of a command that failed with err: 2 when
// the input given cannot be one run (two files claim one rank, a rank
// given for no single file), as for a usage error; else 1.
func errorCode(err error) int {
	var dup *ingest.DuplicateRankError
	var bad *ingest.RankAssignmentError
	if errors.As(err, &dup) || errors.As(err, &bad) {
		return 2
	}
	return 1
}

func usage(w io.Writer, vs map[string]verb) {
	fmt.Fprintln(w, "usage: kinetoscope COMMAND [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, vs[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'kinetoscope COMMAND -h' for a command's flags.")
}
