package driver

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/render"
)

// ReportFormats returns the formats a report is written in.
func ReportFormats() []string { return render.ReportFormats() }

// DiffFormats returns the formats a diff is written in.
func DiffFormats() []string { return render.DiffFormats() }

// WriteReport writes r to w in one of ReportFormats.
func WriteReport(w io.Writer, r *analyze.Report, format string) error {
	return render.WriteReport(w, r, format)
}

// WriteDiff writes d to w in one of DiffFormats.
func WriteDiff(w io.Writer, d *diff.Diff, format string) error {
	return render.WriteDiff(w, d, format)
}

// ContentType is the HTTP content type of an output format: a report or
// diff format, or an image format; "" for none.
func ContentType(format string) string {
	switch format {
	case "json":
		return "application/json"
	case "markdown":
		return "text/markdown; charset=utf-8"
	case "table":
		return "text/plain; charset=utf-8"
	case "csv", "csv-summary", "csv-bandwidth":
		return "text/csv; charset=utf-8"
	case "svg":
		return "image/svg+xml"
	case "png":
		return "image/png"
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
}

// ChartKinds returns every chart, the main one of a run first.
func ChartKinds() []ChartKind {
	return []ChartKind{
		{"breakdown", "ms per decode step by bucket, with shares (mean over ranks)", FromReport, false},
		{"steps", "kernel time per step by bucket, prefill marked (one rank)", FromReport, true},
		{"ranks", "per rank, compute next to communication transfer and wait", FromReport, false},
		{"timeline", "one step's kernels per stream on a time axis (one rank)", FromTrace, true},
		{"bandwidth", "collective bus bandwidth per message size, against the link's peak", FromReport, false},
		{"diff", "base vs head ms per step by bucket, with the delta", FromDiff, false},
	}
}

// RunChartKinds returns the names of the charts of one run, the main one
// first.
func RunChartKinds() []string {
	var out []string
	for _, k := range ChartKinds() {
		if k.Input != FromDiff {
			out = append(out, k.Name)
		}
	}
	return out
}

// chartKind returns the kind named name.
func chartKind(name string) (ChartKind, error) {
	for _, k := range ChartKinds() {
		if k.Name == name {
			return k, nil
		}
	}
	var names []string
	for _, k := range ChartKinds() {
		names = append(names, k.Name)
	}
	return ChartKind{}, fmt.Errorf("unknown chart kind %q (want one of %s)", name, strings.Join(names, ", "))
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
	k, err := chartKind(req.Kind)
	if err != nil {
		return nil, err
	}
	r := run.Report
	switch k.Name {
	case "breakdown":
		return render.Breakdown(r, req.Format)
	case "steps":
		return render.Steps(r, req.Rank, req.Format)
	case "ranks":
		return render.Ranks(r, req.Format)
	case "timeline":
		return run.timeline(req)
	case "bandwidth":
		return render.Bandwidth(r, req.Format)
	}
	return nil, fmt.Errorf("chart %s: drawn from a diff, not from one run (see DiffChart)", k.Name)
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
		return nil, fmt.Errorf("timeline of %s: the traces were not kept (read them with ReadSet)", run.Report.Source)
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

// DiffChart draws the chart of a diff.
func DiffChart(d *diff.Diff, f render.Format) ([]byte, error) { return render.Diff(d, f) }

// Compare diffs two runs' reports, with the headline as render words it.
func Compare(base, head *analyze.Report, opt diff.Options) (*diff.Diff, error) {
	d, err := diff.Compare(base, head, opt)
	if err != nil {
		return nil, err
	}
	d.Headline = render.DiffHeadlineText(d)
	return d, nil
}

// IsChartKind says whether name is a chart of one run.
func IsChartKind(name string) bool { return slices.Contains(RunChartKinds(), name) }
