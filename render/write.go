package render

import (
	"errors"
	"fmt"
	"io"

	json "github.com/goccy/go-json"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// The report and diff writers, one per output format. The table of outputs
// that names them, and that the command line, the REST service and the web
// page read, is driver.Formats.

// WriteReportText writes r as aligned plain text for a terminal: headline
// first, then ranks side by side, collectives, and per rank the phase
// summary, bucket table, transfer/wait split, top and unclassified kernels,
// launch delay and warnings.
func WriteReportText(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeText(w, reportBlocks(r))
}

// WriteReportMarkdown writes the content of WriteReportText as
// GitHub-flavoured Markdown, ready to paste into a results document.
func WriteReportMarkdown(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeMarkdown(w, reportBlocks(r))
}

// WriteReportJSON writes the Report itself, indented: the analyze JSON
// contract.
func WriteReportJSON(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	if err := writeReportJSON(w, r, stepsPerPart); !errors.Is(err, errStepsLayout) {
		return err
	}
	return writeJSON(w, r)
}

// WriteStepsCSV writes one row per rank x step x bucket, the step totals
// repeated on each row.
func WriteStepsCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeStepsCSV(w, r)
}

// WriteSummaryCSV writes one row per rank x phase (decode, prefill) x
// bucket, with per-step means and shares.
func WriteSummaryCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeSummaryCSV(w, r)
}

// WriteBandwidthCSV writes one row per phase x collective kind x message
// size: the collective bandwidth table (algbw, busbw, share of the link's
// peak).
func WriteBandwidthCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeBandwidthCSV(w, r)
}

// WriteLayersCSV writes one row per rank x phase x layer x bucket of the
// steps folded into layers, the layer's time repeated on each row.
func WriteLayersCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeLayersCSV(w, r)
}

// WriteSlotsCSV writes one row per rank x phase x position in the
// repeated layer: kernel, launch shape and duration.
func WriteSlotsCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeSlotsCSV(w, r)
}

// WriteCostModelCSV writes one row per rank x phase x fitted time (the
// step span and each bucket) of the cost model: slopes against the step's
// tokens (or requests) and context, R², residual spread, verdict, and the
// prediction when there is one.
func WriteCostModelCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeCostModelCSV(w, r)
}

// WriteDiffText writes a comparison of two runs as aligned plain text: the
// headline first, then the step figures, buckets ordered by the size of
// their change, transfer and wait, kernels changed, added and removed,
// metadata and warnings.
func WriteDiffText(w io.Writer, d *diff.Diff) error {
	if d == nil {
		return errNoDiff
	}
	return writeText(w, diffBlocks(d))
}

// WriteDiffMarkdown writes the content of WriteDiffText as GitHub-flavoured
// Markdown.
func WriteDiffMarkdown(w io.Writer, d *diff.Diff) error {
	if d == nil {
		return errNoDiff
	}
	return writeMarkdown(w, diffBlocks(d))
}

// WriteDiffJSON writes the Diff itself, indented: the diff JSON contract.
func WriteDiffJSON(w io.Writer, d *diff.Diff) error {
	if d == nil {
		return errNoDiff
	}
	return writeJSON(w, d)
}

// The errors of a writer given nothing to write.
var (
	errNoReport = fmt.Errorf("write report: no report")
	errNoDiff   = fmt.Errorf("write diff: no diff")
)

// writeJSON writes v as indented JSON with a trailing newline. The
// encoder writes from its own buffer: no copy of the text is made to add
// the newline.
func writeJSON(w io.Writer, v any) error {
	ew := &errWriter{w: w}
	enc := json.NewEncoder(ew)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		if ew.err != nil {
			return fmt.Errorf("write json: %w", ew.err)
		}
		return fmt.Errorf("encode json: %w", err)
	}
	return nil
}

// errWriter is a writer that keeps the error its writer returned, to tell
// a failed write from a failed encoding.
type errWriter struct {
	w   io.Writer
	err error
}

// Write implements io.Writer.
func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}
