// Package wire builds the server's analysis pipeline from the ingest,
// analyze and render packages.
package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/api"
	"kinetoscope/ingest"
	"kinetoscope/render"
	"kinetoscope/render/fromtrace"
)

// Pipeline returns the real pipeline: ingest.Open with the decompressed
// size limit, analyze.Analyze, and the render charts.
func Pipeline(maxUncompressed int64) api.Pipeline {
	return api.Pipeline{
		Analyze: func(ctx context.Context, path string, progress func(api.Progress)) (*analyze.Report, error) {
			return analyzePath(ctx, path, maxUncompressed, progress)
		},
		ChartKinds: []string{"breakdown", "ranks", "steps"},
		Chart:      chart,
		DiffChart: func(d *diff.Diff, format string) ([]byte, error) {
			f, err := render.ParseFormat(format)
			if err != nil {
				return nil, err
			}
			return render.Diff(d, f)
		},
		Timeline: func(ctx context.Context, path string, r *analyze.Report, rank, step int, format string) ([]byte, error) {
			return timeline(path, maxUncompressed, r, rank, step, format)
		},
	}
}

// analyzeOptions are the options of every analysis the server runs: every
// kernel of each bucket is listed, so that a diff of two stored runs names
// every kernel present in one run only (reports grow 1x to 3.5x, to at most
// about 100 KB, on the sample and public traces).
func analyzeOptions() analyze.Options { return analyze.Options{TopKernels: diff.AllKernels} }

// timeline reads the traces at path again and draws the kernels of one
// step of one rank, as the analysis r of the same traces placed them.
func timeline(path string, maxUncompressed int64, r *analyze.Report, rank, step int, format string) ([]byte, error) {
	f, err := render.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	set, err := ingest.Open(path, ingest.Options{MaxUncompressedBytes: maxUncompressed})
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	in, err := fromtrace.Timeline(set, r, analyzeOptions(), rank, step)
	if err != nil {
		return nil, fmt.Errorf("timeline of rank %d, step %d: %w", rank, step, err)
	}
	return render.Timeline(in, f)
}

// analyzePath reads and analyses the traces at path; a cancelled ctx stops
// the read block by block, and is checked again before analysing.
func analyzePath(ctx context.Context, path string, maxUncompressed int64, progress func(api.Progress)) (*analyze.Report, error) {
	opt := ingest.Options{
		Context:              ctx,
		MaxUncompressedBytes: maxUncompressed,
		Progress: func(p ingest.Progress) {
			progress(api.Progress{Phase: "reading", Path: p.Path, Bytes: p.Bytes, TotalBytes: p.TotalBytes, Events: p.Events})
		},
	}
	set, err := ingest.Open(path, opt)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(set.Traces) == 0 {
		return nil, noTraces(set)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("analysis of %s stopped: %w", path, err)
	}
	progress(api.Progress{Phase: "analyzing"})
	rep, err := analyze.Analyze(set, analyzeOptions())
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	return rep, nil
}

// noTraces explains why a set holds nothing to analyse.
func noTraces(set *ingest.Set) error {
	var why []string
	for _, e := range set.Errors {
		why = append(why, e.Error())
	}
	for _, a := range set.SetAside {
		why = append(why, a.Path+": "+a.Reason)
	}
	if len(why) == 0 {
		return errors.New("no trace file found (want *.json or *.json.gz)")
	}
	return fmt.Errorf("no trace with GPU events to analyse: %s", strings.Join(why, "; "))
}

// chart draws one chart kind of a report.
func chart(r *analyze.Report, kind, format string, rank int) ([]byte, error) {
	f, err := render.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "breakdown":
		return render.Breakdown(r, f)
	case "ranks":
		return render.Ranks(r, f)
	case "steps":
		return render.Steps(r, rank, f)
	}
	return nil, fmt.Errorf("unknown chart kind %q", kind)
}
