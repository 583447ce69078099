package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/driver"
	"kinetoscope/ingest"
)

// analyzeUsage is the analyze command's synopsis.
func analyzeUsage() string {
	return `usage: kinetoscope analyze PATH... [--format ` + reportFormatList() + `] [--rules FILE] [--step-regex RE] [--rank N] [--rank FILE=N]... [--link L] [--gpu-peak P] [--capture FILE]... [--launch-gap-us US] [--predict batch=N,context=N]

Classifies every GPU kernel into buckets (AllReduce, GEMM, attention, ...),
cuts each rank's trace into engine steps (prefill / decode, CUDA-graph
aware) and reports where decode time goes, headline first. PATH is a trace
file, a profile directory or an archive (tar, tar.gz, zip); several PATHs
(rank files given one by one) are one run. A CUDA-graph capture trace
(--capture FILE, or a file under a capture_traces/ directory of PATH) gives
the roofline the shapes of the kernels its graphs replay.

formats:
` + formatLines(driver.ReportFormats())
}

// analyzeArgs are the analyze command's parsed arguments.
type analyzeArgs struct {
	paths []string
	// captures are the CUDA-graph capture traces given with --capture.
	captures []string
	format   string
	opt      analyze.Options
	rank     int // the rank whose sections are shown; -1 for all
	ranks    ingest.RankAssignments
	// predict is the workload to estimate each phase's step at from its
	// cost model; nil when none was named.
	predict *analyze.Workload
}

// runAnalyze is the analyze command.
func runAnalyze(args []string, stdout, stderr io.Writer) error {
	a, err := parseAnalyzeArgs(args, stderr)
	if err != nil {
		return err
	}
	opt, done := readOptions(stderr)
	opt.Analyze = a.opt
	opt.Ranks = a.ranks
	run, err := driver.Analyze(ingest.FromPaths(a.paths).WithCaptures(a.captures), opt)
	done()
	if err != nil {
		return err
	}
	r := run.Report
	if a.predict != nil {
		r = analyze.WithPrediction(r, *a.predict)
	}
	if a.rank >= 0 {
		if r, err = driver.SelectRank(r, a.rank); err != nil {
			return err
		}
	}
	return driver.WriteReport(stdout, r, a.format)
}

// readOptions returns the read options of a command that reads traces:
// progress on stderr when it is a terminal. done clears the progress line.
func readOptions(stderr io.Writer) (opt driver.Options, done func()) {
	p := newProgressLine(stderr)
	if p == nil {
		return opt, func() {}
	}
	opt.Progress = p.update
	return opt, p.clear
}

// parseAnalyzeArgs parses flags given before or after the path.
func parseAnalyzeArgs(args []string, stderr io.Writer) (analyzeArgs, error) {
	a := analyzeArgs{rank: -1, ranks: ingest.RankAssignments{}}
	fs := newFlagSet("analyze", analyzeUsage(), stderr)
	fs.StringVar(&a.format, "format", "table", "output format: "+strings.Join(driver.ReportFormats(), ", "))
	fs.StringVar(&a.opt.RulesFile, "rules", "", "YAML file of classification rules tried before the built-in ones")
	fs.StringVar(&a.opt.StepRegex, "step-regex", "", "RE2 regex: CPU annotations whose name matches start a step (overrides built-in step markers)")
	linkFlag(fs, &a.opt.Link)
	gpuPeakFlag(fs, &a.opt.GPUPeak)
	captureFlag(fs, &a.captures)
	fs.Func("launch-gap-us", fmt.Sprintf("step-time account: the longest GPU gap after an early launch called a launch gap, in us (default %g, HTA's consecutive_kernel_delay)", analyze.DefaultLaunchGapUS), func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) {
			return fmt.Errorf("want a positive number of microseconds, got %q", s)
		}
		a.opt.LaunchGapUS = v
		return nil
	})
	fs.Float64Var(&a.opt.OtherThreshold, "other-threshold", analyze.DefaultOtherThreshold, "percent of decode kernel time left unclassified (bucket Other) above which the headline says the rules miss kernels")
	fs.Func("predict", "estimate each phase's step at this workload from its cost model: batch=N (requests), tokens=N, context=N (KV length per request), e.g. batch=64,context=4096; an estimate, extrapolation warned", func(s string) error {
		w, err := analyze.ParseWorkload(s)
		if err != nil {
			return err
		}
		a.predict = &w
		return nil
	})
	rankFlag(fs, "N: show this rank's sections only (the run is still analysed, and aligned, across every rank)", &a.rank, a.ranks)
	paths, err := parseInterspersed(fs, args)
	if err != nil {
		return a, err
	}
	if len(paths) == 0 {
		fs.Usage()
		return a, errors.New("want a PATH: a trace file, a profile directory, an archive, or several rank files of one run")
	}
	a.paths = paths
	return a, checkOneOf("format", a.format, driver.ReportFormats())
}

// gpuPeakFlag adds --gpu-peak, the GPU's peaks the roofline is held
// against, to fs.
func gpuPeakFlag(fs *flag.FlagSet, peak *string) {
	fs.Func("gpu-peak", "the GPU's peaks for the roofline, over the GPU name's: hbm=TB/s and "+strings.Join(analyze.PeakKeys(), "|")+"=TFLOP/s, comma-separated, e.g. hbm=4.8TB/s,bf16=989TFLOPs (default: from the GPU name)", func(s string) error {
		if _, err := analyze.ParseGPUPeak(s, nil); err != nil {
			return err
		}
		*peak = s
		return nil
	})
}

// captureFlag adds --capture, a CUDA-graph capture trace of the run (may
// be repeated, one a rank), to fs.
func captureFlag(fs *flag.FlagSet, captures *[]string) {
	fs.Func("capture", "a CUDA-graph capture trace of the same run (record_shapes on), one a rank, repeatable: the graph replays of its rank take their kernels' shapes from it, for the roofline (a profile directory's capture_traces/ is read so too)", func(s string) error {
		*captures = append(*captures, s)
		return nil
	})
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
