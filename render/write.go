package render

import (
	"fmt"
	"io"

	json "github.com/goccy/go-json"

	"kinetoscope/analyze"
)

// ReportFormats returns the formats WriteReport accepts.
func ReportFormats() []string {
	return []string{"table", "markdown", "csv", "csv-summary", "csv-bandwidth", "json"}
}

// WriteReport writes r to w in format:
//
//   - table: aligned plain text for a terminal, headline first, then ranks
//     side by side, collectives, and per rank the phase summary, bucket
//     table, transfer/wait split, top and unclassified kernels, launch
//     delay and warnings.
//   - markdown: the same content as GitHub-flavoured Markdown, ready to
//     paste into a results document.
//   - csv: one row per rank x step x bucket, the step totals repeated on
//     each row.
//   - csv-summary: one row per rank x phase (decode, prefill) x bucket with
//     per-step means and shares.
//   - csv-bandwidth: one row per phase x collective kind x message size
//     (the collective bandwidth table: algbw, busbw, share of the link's
//     peak).
//   - json: the Report itself, indented (the analyze JSON contract).
func WriteReport(w io.Writer, r *analyze.Report, format string) error {
	if r == nil {
		return fmt.Errorf("write report: no report")
	}
	switch format {
	case "table", "text", "":
		return writeText(w, reportBlocks(r))
	case "markdown", "md":
		return writeMarkdown(w, reportBlocks(r))
	case "csv":
		return writeStepsCSV(w, r)
	case "csv-summary":
		return writeSummaryCSV(w, r)
	case "csv-bandwidth":
		return writeBandwidthCSV(w, r)
	case "json":
		return writeJSON(w, r)
	}
	return fmt.Errorf("write report: unknown format %q (want one of %v)", format, ReportFormats())
}

// writeJSON writes v as indented JSON with a trailing newline.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}
