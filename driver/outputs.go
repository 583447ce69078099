package driver

import (
	"context"
	"fmt"
	"io"
	"runtime/trace"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/render"
)

// This file is the one table of outputs: every text format and every chart
// Kinetoscope offers, each row carrying its name, what it is, its content
// type and the function that writes or draws it. The command line's usage
// and checks, the REST service's validation, its OpenAPI document and the
// web page's menus are all read from it (as google/pprof's
// internal/driver/commands.go is the one table of pprof's outputs).

// Format is one text output format: of a run's report, of a diff of two
// runs, or of both.
type Format struct {
	Name    string
	Summary string
	// ContentType is the HTTP content type of the output.
	ContentType string
	// Report writes a report in this format; nil when it is not a report
	// format.
	Report func(io.Writer, *analyze.Report) error
	// Diff writes a diff in this format; nil when it is not a diff format.
	Diff func(io.Writer, *diff.Diff) error
}

// Content types of the outputs.
const (
	typeText     = "text/plain; charset=utf-8"
	typeMarkdown = "text/markdown; charset=utf-8"
	typeCSV      = "text/csv; charset=utf-8"
	typeJSON     = "application/json"
)

// Formats returns every text output format, the default one first.
func Formats() []Format {
	return []Format{
		{"table", "aligned plain text for a terminal, headline first", typeText,
			render.WriteReportText, render.WriteDiffText},
		{"json", "the whole analysis as JSON (a stable contract: fields are added, never renamed)", typeJSON,
			render.WriteReportJSON, render.WriteDiffJSON},
		{"markdown", "the same as GitHub-flavoured Markdown, for a results document", typeMarkdown,
			render.WriteReportMarkdown, render.WriteDiffMarkdown},
		{"csv", "one row per rank, step and bucket, the step's totals on each row", typeCSV,
			render.WriteStepsCSV, nil},
		{"csv-summary", "one row per rank, phase and bucket: per-step means and shares", typeCSV,
			render.WriteSummaryCSV, nil},
		{"csv-bandwidth", "one row per phase, collective and message size: algbw, busbw, share of the link's peak", typeCSV,
			render.WriteBandwidthCSV, nil},
		{"csv-roofline", "one row per phase and kernel class: achieved TFLOP/s and TB/s from the shapes, intensity, bound, share of the GPU's peak", typeCSV,
			render.WriteRooflineCSV, nil},
		{"csv-layers", "one row per rank, phase, layer and bucket of the steps folded into layers", typeCSV,
			render.WriteLayersCSV, nil},
		{"csv-slots", "one row per rank, phase and position in the layer: kernel, grid, block, duration", typeCSV,
			render.WriteSlotsCSV, nil},
		{"csv-costmodel", "one row per rank, phase and fitted time (step span, each bucket): slopes against tokens (or requests) and context, R², verdict, and the --predict estimate", typeCSV,
			render.WriteCostModelCSV, nil},
		{"csv-account", "one row per rank, step (and phase mean) and part of the step-time account; a step's parts add up to its span", typeCSV,
			render.WriteAccountCSV, nil},
	}
}

// ReportFormats returns the names of the formats a report is written in,
// the default first.
func ReportFormats() []string {
	return formatNames(func(f Format) bool { return f.Report != nil })
}

// DiffFormats returns the names of the formats a diff is written in, the
// default first.
func DiffFormats() []string {
	return formatNames(func(f Format) bool { return f.Diff != nil })
}

// formatNames returns the names of the formats that keep says to.
func formatNames(keep func(Format) bool) []string {
	var out []string
	for _, f := range Formats() {
		if keep(f) {
			out = append(out, f.Name)
		}
	}
	return out
}

// format returns the format named name among those that keep accepts.
func format(name string, keep func(Format) bool, what string) (Format, error) {
	for _, f := range Formats() {
		if f.Name == name && keep(f) {
			return f, nil
		}
	}
	return Format{}, fmt.Errorf("unknown %s format %q (want one of %s)", what, name,
		strings.Join(formatNames(keep), ", "))
}

// WriteReport writes r to w in the report format named name.
func WriteReport(w io.Writer, r *analyze.Report, name string) error {
	f, err := format(name, func(f Format) bool { return f.Report != nil }, "report")
	if err != nil {
		return err
	}
	defer trace.StartRegion(context.Background(), "write report "+name).End()
	return f.Report(w, r)
}

// WriteDiff writes d to w in the diff format named name.
func WriteDiff(w io.Writer, d *diff.Diff, name string) error {
	f, err := format(name, func(f Format) bool { return f.Diff != nil }, "diff")
	if err != nil {
		return err
	}
	return f.Diff(w, d)
}

// ImageFormat is one image format of the charts.
type ImageFormat struct {
	Format      render.Format
	ContentType string
}

// ImageFormats returns the image formats of the charts, the default first.
func ImageFormats() []ImageFormat {
	return []ImageFormat{{render.SVG, "image/svg+xml"}, {render.PNG, "image/png"}}
}

// ContentType is the HTTP content type of an output format: a text format
// (Formats) or an image format (ImageFormats); "" for none.
func ContentType(name string) string {
	for _, f := range Formats() {
		if f.Name == name {
			return f.ContentType
		}
	}
	for _, f := range ImageFormats() {
		if string(f.Format) == name {
			return f.ContentType
		}
	}
	return ""
}

// Input is what a chart is drawn from.
type Input int

// Chart inputs.
const (
	FromReport Input = iota // the report alone
	FromTrace               // the report and the traces (per-event data)
	FromDiff                // a diff of two runs
)

// ChartKind is one chart the outputs offer.
type ChartKind struct {
	Name    string
	Summary string
	Input   Input
	// PerRank says that the chart shows one rank (ChartRequest.Rank).
	PerRank bool
	// draw draws the chart of a run (Input FromReport or FromTrace);
	// drawDiff the chart of a diff (FromDiff).
	draw     func(*Run, ChartRequest) ([]byte, error)
	drawDiff func(*diff.Diff, render.Format) ([]byte, error)
}

// ChartKinds returns every chart, the main one of a run first.
func ChartKinds() []ChartKind {
	return []ChartKind{
		{Name: "breakdown", Summary: "ms per decode step by bucket, with shares (mean over ranks)", Input: FromReport,
			draw: func(run *Run, req ChartRequest) ([]byte, error) { return render.Breakdown(run.Report, req.Format) }},
		{Name: "steps", Summary: "kernel time per step by bucket, prefill marked (one rank)", Input: FromReport, PerRank: true,
			draw: func(run *Run, req ChartRequest) ([]byte, error) {
				return render.Steps(run.Report, req.Rank, req.Format)
			}},
		{Name: "ranks", Summary: "per rank, compute next to communication transfer and wait", Input: FromReport,
			draw: func(run *Run, req ChartRequest) ([]byte, error) { return render.Ranks(run.Report, req.Format) }},
		{Name: "layers", Summary: "time per layer by bucket, outlier and irregular layers marked (one rank)", Input: FromReport, PerRank: true,
			draw: func(run *Run, req ChartRequest) ([]byte, error) {
				return render.Layers(run.Report, req.Rank, req.Format)
			}},
		{Name: "timeline", Summary: "one step's kernels per stream on a time axis (one rank)", Input: FromTrace, PerRank: true,
			draw: (*Run).timeline},
		{Name: "bandwidth", Summary: "collective bus bandwidth per message size, against the link's peak", Input: FromReport,
			draw: func(run *Run, req ChartRequest) ([]byte, error) { return render.Bandwidth(run.Report, req.Format) }},
		{Name: "roofline", Summary: "achieved TFLOP/s by FLOPs per byte per kernel class and phase, under the GPU's memory and tensor roofs", Input: FromReport,
			draw: func(run *Run, req ChartRequest) ([]byte, error) { return render.Roofline(run.Report, req.Format) }},
		{Name: "steptime", Summary: "per rank, the step's span by part of the step-time account: compute, memory, transfer, wait, GPU idle by cause", Input: FromReport,
			draw: func(run *Run, req ChartRequest) ([]byte, error) { return render.StepTime(run.Report, req.Format) }},
		{Name: "diff", Summary: "base vs head ms per step by bucket, with the delta", Input: FromDiff,
			drawDiff: render.Diff},
		{Name: "diff-steptime", Summary: "base vs head, per rank, the step's span by part of the step-time account", Input: FromDiff,
			drawDiff: render.DiffStepTime},
	}
}

// RunChartKinds returns the names of the charts of one run, the main one
// first.
func RunChartKinds() []string {
	return chartNames(func(k ChartKind) bool { return k.Input != FromDiff })
}

// DiffChartKinds returns the names of the charts of a diff.
func DiffChartKinds() []string {
	return chartNames(func(k ChartKind) bool { return k.Input == FromDiff })
}

// chartNames returns the names of the charts that keep says to.
func chartNames(keep func(ChartKind) bool) []string {
	var out []string
	for _, k := range ChartKinds() {
		if keep(k) {
			out = append(out, k.Name)
		}
	}
	return out
}

// chartKind returns the kind named name among those that keep accepts.
func chartKind(name string, keep func(ChartKind) bool, what string) (ChartKind, error) {
	for _, k := range ChartKinds() {
		if k.Name == name && keep(k) {
			return k, nil
		}
	}
	return ChartKind{}, fmt.Errorf("unknown %s %q (want one of %s)", what, name, strings.Join(chartNames(keep), ", "))
}

// ChartRequest selects one chart of a run.
type ChartRequest struct {
	Kind   string
	Format render.Format
	// Rank is the rank a per-rank chart shows, or render.FirstRank.
	Rank int
	// Step is the step a timeline shows, or render.SlowestStep for the
	// slowest step of the rank's shown phase.
	Step int
}

// Chart draws one chart of the run. A chart drawn from the traces needs
// run.Set.
func (run *Run) Chart(req ChartRequest) ([]byte, error) {
	k, err := chartKind(req.Kind, func(k ChartKind) bool { return k.draw != nil }, "chart kind of a run")
	if err != nil {
		return nil, err
	}
	return k.draw(run, req)
}

// DiffChart draws the chart of a diff named kind.
func DiffChart(d *diff.Diff, kind string, f render.Format) ([]byte, error) {
	k, err := chartKind(kind, func(k ChartKind) bool { return k.drawDiff != nil }, "chart kind of a diff")
	if err != nil {
		return nil, err
	}
	return k.drawDiff(d, f)
}

// IsChartKind says whether name is a chart of one run.
func IsChartKind(name string) bool {
	_, err := chartKind(name, func(k ChartKind) bool { return k.draw != nil }, "")
	return err == nil
}

// timeline draws the kernels of one step of one rank.
func (run *Run) timeline(req ChartRequest) ([]byte, error) {
	in, err := run.TimelineInput(req.Rank, req.Step)
	if err != nil {
		return nil, err
	}
	return render.Timeline(in, req.Format)
}

// TimelineInput returns the GPU events of one step of one rank (or
// render.FirstRank; step render.SlowestStep: the slowest step of the rank's
// shown phase), placed in steps and buckets as the run's analysis placed
// them. It needs run.Set.
func (run *Run) TimelineInput(rank, step int) (*render.TimelineInput, error) {
	if run.Set == nil {
		return nil, fmt.Errorf("timeline of %s: the traces were not kept (read them with Read)", run.Report.Source)
	}
	rk, s, err := render.TimelineStep(run.Report, rank, step)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	evs, err := analyze.StepEvents(run.Set, run.Analyze, rk.Rank, s.Index)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	in, err := render.NewTimelineInput(rk.Rank, s, run.Report.Buckets, evs)
	if err != nil {
		return nil, fmt.Errorf("timeline %s step %d: %w", rk.File, s.Index, err)
	}
	return in, nil
}

// Compare diffs two runs' reports, with the headline as render words it.
func Compare(base, head *analyze.Report, opt diff.Options) (*diff.Diff, error) {
	d, err := diff.Compare(base, head, opt)
	if err != nil {
		return nil, err
	}
	d.HeadlineText = render.DiffHeadlineText(d)
	return d, nil
}
