// Package driver is Kinetoscope's one pipeline, from a run's input (an
// ingest.Input: trace files, a profile directory, archives, files held in
// a blob store) to every output: it reads the traces (ingest; Read),
// analyses them (analyze, analyze/diff; Analyze reads and analyses) and
// writes or draws the result (render), and it holds the one table of
// outputs that the command line, the REST service and the web page offer
// alike. cmd and api only translate flags and HTTP requests into its
// calls.
package driver

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"kinetoscope/analyze"
	"kinetoscope/ingest"
)

// Options control how a run is read and analysed.
type Options struct {
	// Options are how the traces are read (context, limits, progress,
	// memory budget), as ingest takes them.
	ingest.Options
	// Analyze are the analysis options.
	Analyze analyze.Options
	// Analyzing, when set, is called once the files are read, before the
	// analysis.
	Analyzing func()
}

// Run is one run read and analysed.
//
// It keeps the ingested traces (Set) beside the Report: the outputs that
// need per-event data (the step timeline) take it from there instead of
// reading the files again. That costs the traces' memory (about 70 bytes a
// kept event) for as long as the Run is held; the service, which keeps
// only reports, drops the Set and reads the run's files again for a
// timeline (see Read).
type Run struct {
	Report *analyze.Report
	// Set is what was read; nil for a run known only by its report.
	Set *ingest.Set
	// Analyze are the options the report was made with: per-event outputs
	// place events in steps and buckets with the same ones.
	Analyze analyze.Options
}

// Read reads the input (ingest.OpenInput: ingest.FromPath for a trace
// file, profile directory or archive, ingest.FromPaths for rank files
// given one by one, an ingest.Input of sources for files held anywhere)
// and fails, naming the input once, when it holds no trace with GPU
// events.
func Read(in ingest.Input, opt Options) (*ingest.Set, error) {
	set, err := ingest.OpenInput(in, opt.Options)
	if err == nil {
		err = opt.Budget.Err()
	}
	if err != nil {
		return nil, err
	}
	if err := duplicateRanks(set); err != nil {
		return nil, err
	}
	if len(set.Traces) == 0 {
		return nil, noTraces(set.Path, set, dirContents(in.Dir()))
	}
	return set, nil
}

// duplicateRanks is the error for a set in which two files claim one rank
// (two runs' files given as one, say, or one file copied): it names both
// files of each such rank and the ways to say which rank a file is, and
// unwraps to *ingest.DuplicateRankError. Analysing one of them, picked by
// name, would answer for a run nobody asked about. A rank assigned to no
// single trace (Options.Ranks) fails the read the same way, unwrapping to
// *ingest.RankAssignmentError.
func duplicateRanks(set *ingest.Set) error {
	var errs []error
	for _, e := range set.Errors {
		var dup *ingest.DuplicateRankError
		var bad *ingest.RankAssignmentError
		switch {
		case errors.As(e, &dup):
			errs = append(errs, fmt.Errorf("%w: give one file per rank (the files of one run), or say which rank a file is with %s", dup, RankHint))
		case errors.As(e, &bad):
			errs = append(errs, bad)
		}
	}
	return errors.Join(errs...)
}

// RankHint names the ways to say which rank a trace file is, for the
// errors that ask for them: the command line's flag and the upload's field
// (api/upload.go), both FILE=N.
const RankHint = "--rank FILE=N, or on upload a rank field FILE=N for each trace file sent (not one inside an archive)"

// Analyze is the pipeline: it reads the input (Read) and analyses what
// was read. The analysis options are compiled while the input is read. A
// cancelled Context stops it between the two as well.
func Analyze(in ingest.Input, opt Options) (*Run, error) {
	var pr *analyze.Prepared
	var prErr error
	var prepared sync.WaitGroup
	prepared.Go(func() { pr, prErr = analyze.Prepare(opt.Analyze) })
	set, err := Read(in, opt)
	prepared.Wait()
	if err != nil {
		return nil, err
	}
	path := set.Path
	if opt.Context != nil {
		if err := opt.Context.Err(); err != nil {
			return nil, fmt.Errorf("analysis of %s stopped: %w", path, err)
		}
	}
	if opt.Analyzing != nil {
		opt.Analyzing()
	}
	r, err := (*analyze.Report)(nil), prErr
	if err == nil {
		r, err = pr.Analyze(set)
	}
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", path, err)
	}
	return &Run{Report: r, Set: set, Analyze: opt.Analyze}, nil
}

// noTraces explains why a set holds nothing to analyse: the one file's own
// error when there is one file (it names the file), else every file's
// reason; held says what a directory at path holds instead (dirContents).
func noTraces(path string, set *ingest.Set, held string) error {
	var why []string
	for _, e := range set.Errors {
		why = append(why, e.Error())
	}
	for _, a := range set.SetAside {
		why = append(why, a.Path+": "+a.Reason)
	}
	switch len(why) {
	case 0:
		return fmt.Errorf("%s: no *.json or *.json.gz trace file found%s", path, held)
	case 1:
		if len(set.Errors) == 1 {
			return set.Errors[0]
		}
		return errors.New("no trace with GPU events to analyse: " + why[0])
	}
	return fmt.Errorf("%s: no trace with GPU events to analyse: %s", path, strings.Join(why, "; "))
}

// dirContents says what a directory holds instead of traces, for the
// error that finds none: " (it holds a.png, notes.txt)"; "" for no
// directory.
func dirContents(path string) string {
	if path == "" {
		return ""
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return ""
	}
	if len(entries) == 0 {
		return " (the directory is empty)"
	}
	const most = 8
	var names []string
	for _, e := range entries[:min(len(entries), most)] {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	if len(entries) > most {
		names = append(names, fmt.Sprintf("and %d more", len(entries)-most))
	}
	return " (it holds " + strings.Join(names, ", ") + ")"
}

// SelectRank returns r with the per-rank sections and checks of one rank
// only; the run-wide parts (headline, collectives, bandwidth, clock
// checks) stay those of every rank, so that the cross-rank alignment is
// kept.
func SelectRank(r *analyze.Report, rank int) (*analyze.Report, error) {
	out := *r
	out.Ranks = nil
	var have []int
	for _, rk := range r.Ranks {
		have = append(have, rk.Rank)
		if rk.Rank == rank {
			out.Ranks = append(out.Ranks, rk)
		}
	}
	if len(out.Ranks) == 0 {
		return nil, fmt.Errorf("%s: no rank %d (ranks: %v)", r.Source, rank, have)
	}
	if r.Checks != nil {
		c := *r.Checks
		c.Ranks = nil
		for _, rc := range r.Checks.Ranks {
			if rc.Rank == rank {
				c.Ranks = append(c.Ranks, rc)
			}
		}
		out.Checks = &c
	}
	return &out, nil
}
