package driver

import (
	"errors"
	"fmt"
	"os"

	json "github.com/goccy/go-json"

	"kinetoscope/analyze"
)

// maxReportBytes bounds the size of a saved JSON report.
const maxReportBytes = 1 << 30

// ReadReport reads a JSON report written in the "json" report format.
func ReadReport(path string) (*analyze.Report, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	if fi.Size() > maxReportBytes {
		return nil, fmt.Errorf("%s: %d bytes, larger than a report can be (%d); is it a trace?", path, fi.Size(), maxReportBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var r analyze.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a JSON report (at byte %d): %w", path, jsonOffset(err, len(b)), err)
	}
	if len(r.Ranks) == 0 {
		return nil, fmt.Errorf("%s: report has no ranks (is it an analyze --format json output?)", path)
	}
	if r.Source == "" {
		r.Source = path
	}
	return &r, nil
}

// jsonOffset returns the byte offset of a JSON decoding error; an error
// without one (the input ended early) is placed at the end, size.
func jsonOffset(err error, size int) int64 {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Offset
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Offset
	}
	return int64(size)
}

// EncodeReport encodes r as compact JSON, the form the service stores and
// serves (the report JSON contract, as the "json" format writes it
// indented).
func EncodeReport(r *analyze.Report) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return b, nil
}
