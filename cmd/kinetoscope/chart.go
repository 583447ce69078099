package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/render"
)

// chartUsage is the chart command's synopsis.
func chartUsage() string {
	return `usage: kinetoscope chart PATH --kind ` + runChartList() + ` [-o ` + imageFormatList() + `] [--rank N] [--rank FILE=N]... [--step N] [--link L] [--gpu-peak P] [--capture FILE]...
       kinetoscope chart BASE HEAD --kind ` + strings.Join(driver.DiffChartKinds(), "|") + ` [-o ` + imageFormatList() + `] [--reports]

Draws one chart of an analysed run, or of the diff of two:
` + chartLines() + `PATH is a trace file, a profile directory or an archive. The image format
follows the -o extension (default SVG on stdout).
`
}

// chartArgs are the chart command's parsed arguments.
type chartArgs struct {
	paths   []string
	kind    string
	out     string
	format  string
	rank    int
	step    int
	reports bool
	link    string
	gpuPeak string
	ranks   ingest.RankAssignments
	// captures are the CUDA-graph capture traces of a run's chart (--capture).
	captures []string
}

// chartKinds lists the chart kinds.
func chartKinds() []string {
	var out []string
	for _, k := range driver.ChartKinds() {
		out = append(out, k.Name)
	}
	return out
}

// runChart is the chart command.
func runChart(args []string, stdout, stderr io.Writer) error {
	a, err := parseChartArgs(args, stderr)
	if err != nil {
		return err
	}
	f, err := chartFormat(a)
	if err != nil {
		return err
	}
	img, err := drawChart(a, f)
	if err != nil {
		return err
	}
	if a.out == "" || a.out == "-" {
		_, err = stdout.Write(img)
		return err
	}
	if err := os.WriteFile(a.out, img, 0o644); err != nil {
		return fmt.Errorf("write chart: %w", err)
	}
	fmt.Fprintf(stderr, "wrote %s (%d bytes)\n", a.out, len(img))
	return nil
}

// drawChart loads what the kind needs and draws it.
func drawChart(a chartArgs, f render.Format) ([]byte, error) {
	if isDiffChart(a.kind) {
		opt := diff.Options{}
		if a.rank >= 0 { // FirstRank (no --rank): a diff pools all ranks
			opt.Rank = &a.rank
		}
		d, err := comparePaths(a.paths[0], a.paths[1], a.reports, opt, analyze.Options{Link: a.link, GPUPeak: a.gpuPeak}, a.ranks)
		if err != nil {
			return nil, err
		}
		return driver.DiffChart(d, a.kind, f)
	}
	opt, done := readOptions(os.Stderr)
	opt.Analyze = analyze.Options{Link: a.link, GPUPeak: a.gpuPeak}
	opt.Ranks = a.ranks
	run, err := driver.Analyze(ingest.FromPath(a.paths[0]).WithCaptures(a.captures), opt)
	done()
	if err != nil {
		return nil, err
	}
	return run.Chart(driver.ChartRequest{Kind: a.kind, Format: f, Rank: a.rank, Step: a.step})
}

// chartFormat is the image format: --format, else the -o extension, else SVG.
func chartFormat(a chartArgs) (render.Format, error) {
	switch {
	case a.format != "":
		return render.ParseFormat(a.format)
	case a.out != "" && a.out != "-":
		f, err := render.ParseFormat(filepath.Ext(a.out))
		if err != nil {
			return "", fmt.Errorf("-o %s: %w (or give --format)", a.out, err)
		}
		return f, nil
	}
	return render.SVG, nil
}

// parseChartArgs parses flags given before, between or after the paths.
func parseChartArgs(args []string, stderr io.Writer) (chartArgs, error) {
	a := chartArgs{rank: render.FirstRank, step: render.SlowestStep, ranks: ingest.RankAssignments{}}
	fs := newFlagSet("chart", chartUsage(), stderr)
	fs.StringVar(&a.kind, "kind", "breakdown", "chart: "+strings.Join(chartKinds(), ", "))
	fs.StringVar(&a.out, "o", "", "output file, .svg or .png (default: SVG on stdout)")
	fs.StringVar(&a.format, "format", "", "image format, svg or png (default: from -o)")
	rankFlag(fs, "N: rank for steps and timeline (default: the first), or compared in diff (default: all)", &a.rank, a.ranks)
	fs.Func("step", "step index for timeline (default: the slowest step of the shown phase: decode, else prefill, else all; as the steps chart names it)", intFlag(&a.step))
	linkFlag(fs, &a.link)
	gpuPeakFlag(fs, &a.gpuPeak)
	captureFlag(fs, &a.captures)
	fs.BoolVar(&a.reports, "reports", false, "diff: BASE and HEAD are JSON reports from 'kinetoscope analyze --format json'")
	var err error
	if a.paths, err = parseInterspersed(fs, args); err != nil {
		return a, err
	}
	return a, checkChartArgs(a, fs)
}

// checkChartArgs validates the kind and the number of paths.
func checkChartArgs(a chartArgs, fs *flag.FlagSet) error {
	if err := checkOneOf("chart kind", a.kind, chartKinds()); err != nil {
		return err
	}
	want := 1
	if isDiffChart(a.kind) {
		want = 2
	}
	if len(a.paths) != want {
		fs.Usage()
		return fmt.Errorf("--kind %s wants %d path(s), got %d", a.kind, want, len(a.paths))
	}
	if want == 2 && len(a.captures) > 0 {
		return errors.New("--capture is for a run's chart: for a diff, put each run's capture traces under a capture_traces/ directory of its profile directory")
	}
	return nil
}

// isDiffChart says whether kind is drawn from the diff of two runs.
func isDiffChart(kind string) bool { return slices.Contains(driver.DiffChartKinds(), kind) }

// intFlag parses a non-negative integer flag into p.
func intFlag(p *int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return errors.New("want a non-negative integer")
		}
		*p = n
		return nil
	}
}
