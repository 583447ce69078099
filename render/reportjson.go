package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	json "github.com/goccy/go-json"

	"kinetoscope/analyze"
)

// A large report is mostly its ranks' steps (a thousand steps of a rank
// are megabytes of JSON). writeReportJSON encodes them in parts side by
// side and writes them into the rest of the report, encoded without them:
// the text is writeJSON's, byte for byte.

// stepsPerPart is how many steps of a rank one goroutine encodes.
const stepsPerPart = 128

// stepsIndent is the indentation of a rank's "steps" key: the report's
// members are at one level, the ranks' at three.
const stepsIndent = "      "

// stepsMarker is the text of a rank's steps encoded with none.
const stepsMarker = "\n" + stepsIndent + `"steps": null`

// errStepsLayout says the report's text without its steps is not laid out
// as writeReportJSON expects (one stepsMarker a rank), before anything is
// written.
var errStepsLayout = errors.New("the report's steps are not where expected")

// writeReportJSON writes r as writeJSON does, its ranks' steps encoded in
// parts of perPart side by side when they are more than one part; when
// their place in the rest is not found (errStepsLayout) it writes nothing.
func writeReportJSON(w io.Writer, r *analyze.Report, perPart int) error {
	total := 0
	for i := range r.Ranks {
		total += len(r.Ranks[i].Steps)
	}
	if total <= perPart {
		return writeJSON(w, r)
	}
	bare := *r
	bare.Ranks = slices.Clone(r.Ranks)
	for i := range bare.Ranks {
		bare.Ranks[i].Steps = nil
	}
	var wg sync.WaitGroup
	steps := make([][][]byte, len(r.Ranks)) // per rank, the text of each part
	errs := make([][]error, len(r.Ranks))
	for i := range r.Ranks {
		all := r.Ranks[i].Steps
		n := (len(all) + perPart - 1) / perPart
		steps[i], errs[i] = make([][]byte, n), make([]error, n)
		for k := range n {
			wg.Go(func() {
				steps[i][k], errs[i][k] = stepsPart(all[k*perPart : min((k+1)*perPart, len(all))])
			})
		}
	}
	rest, err := json.MarshalIndent(&bare, "", "  ")
	wg.Wait()
	for _, e := range errs {
		err = firstErr(err, e)
	}
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	if bytes.Count(rest, []byte(stepsMarker)) != len(r.Ranks) {
		return errStepsLayout
	}
	ew := &errWriter{w: w}
	write := func(b []byte) {
		if ew.err == nil {
			ew.Write(b)
		}
	}
	for i := range r.Ranks {
		at := bytes.Index(rest, []byte(stepsMarker)) + len(stepsMarker) - len("null")
		write(rest[:at])
		rest = rest[at+len("null"):]
		switch {
		case r.Ranks[i].Steps == nil:
			write([]byte("null"))
		case len(r.Ranks[i].Steps) == 0:
			write([]byte("[]"))
		default:
			write([]byte("[\n"))
			for k, part := range steps[i] {
				if k > 0 {
					write([]byte(",\n"))
				}
				write(part)
			}
			write([]byte("\n" + stepsIndent + "]"))
		}
	}
	write(rest)
	write([]byte("\n"))
	if ew.err != nil {
		return fmt.Errorf("write json: %w", ew.err)
	}
	return nil
}

// stepsPart returns the text of steps as elements of a rank's steps array:
// indented as there, without the brackets.
func stepsPart(steps []analyze.Step) ([]byte, error) {
	b, err := json.MarshalIndent(steps, stepsIndent, "  ")
	if err != nil {
		return nil, err
	}
	head, tail := "[\n", "\n"+stepsIndent+"]"
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) {
		return nil, fmt.Errorf("steps encoded as %q...", strings.TrimSpace(string(b[:min(len(b), 16)])))
	}
	return b[len(head) : len(b)-len(tail)], nil
}

// firstErr returns err, else the first of errs that is not nil.
func firstErr(err error, errs []error) error {
	for _, e := range errs {
		if err == nil {
			err = e
		}
	}
	return err
}
