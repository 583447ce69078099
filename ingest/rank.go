package ingest

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// rankInName matches the rank in vLLM worker trace names:
// "dp0_pp0_tp0_dcp0_ep0_rank3", "{instance}-rank-3", "rank-3", "rank3",
// "rank_3".
var rankInName = regexp.MustCompile(`(?i)(?:^|[^a-z])rank[-_]?(\d+)`)

// RankFromName returns the rank found in the base name of p (as vLLM and
// torch name rank files), or -1.
func RankFromName(p string) int {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	m := rankInName.FindAllStringSubmatch(base, -1)
	if len(m) == 0 {
		return -1
	}
	r, err := strconv.Atoi(m[len(m)-1][1])
	if err != nil || r > 1<<20 {
		return -1
	}
	return r
}

// setRank fills the rank from the file name when distributedInfo has none.
// A rank assigned to the file (Options.Ranks) overrides both once the set
// is read (RankAssignments.apply).
func (p *builder) setRank() {
	r := RankFromName(p.t.Path)
	if p.t.RankSource == "distributedInfo" {
		if r >= 0 && r != p.t.Rank {
			p.warn("%s", nameRankWarning(r, p.t.Rank))
		}
		return
	}
	if r >= 0 {
		p.t.Rank, p.t.RankSource = r, "filename"
		return
	}
	p.warn("rank unknown: no distributedInfo.rank and no rank in the file name")
}

// NameDuplicate returns the first two of paths (trace files, not
// archives) that claim one rank by their names or by the ranks assigned to
// them (assigned[i] for paths[i], -1 or nil for none: an assigned rank
// overrides the name), the way a set of them would be read (execution
// traces and CUDA-graph captures apart), or nil. It lets an upload refuse
// them before reading their content; files whose names say no rank are
// left to the read (Set.Errors).
func NameDuplicate(paths []string, assigned []int) *DuplicateRankError {
	type key struct {
		capture bool
		rank    int
	}
	first := map[key]string{}
	for i, p := range paths {
		k := key{isCapture(p), RankFromName(p)}
		if i < len(assigned) && assigned[i] >= 0 {
			k.rank = assigned[i]
		}
		if k.rank < 0 {
			continue
		}
		if f, ok := first[k]; ok {
			return &DuplicateRankError{Rank: k.rank, First: f, Second: p}
		}
		first[k] = p
	}
	return nil
}

// nameRankWarning is the warning of a trace whose name and
// distributedInfo.rank disagree; a rank assigned to the trace withdraws it.
func nameRankWarning(name, info int) string {
	return fmt.Sprintf("the file name says rank %d but distributedInfo.rank is %d; using %d", name, info, info)
}

// RankAssignments say which rank trace files are, overriding what their
// distributedInfo.rank and their names say: file -> rank (Options.Ranks;
// --rank FILE=N on the command line, a rank field on upload). A file is
// named by its path as read (Trace.Path: as given, below a directory, or
// "archive!member"), or, when no trace has that path, by the end of a
// path after a "/" or "!" (its base name, say). Each file named must be
// one trace of the set read, else the read fails (a *RankAssignmentError
// in Set.Errors).
type RankAssignments map[string]int

// maxAssignedRank bounds an assigned rank, as RankFromName bounds one in a
// name.
const maxAssignedRank = 1 << 20

// Add parses "FILE=N" (the last "=" splits it, so a FILE may hold one)
// and adds it; a FILE given twice is an error.
func (a RankAssignments) Add(s string) error {
	i := strings.LastIndexByte(s, '=')
	if i <= 0 {
		return fmt.Errorf("rank %q: want FILE=N, the file and its rank", s)
	}
	file, num := s[:i], s[i+1:]
	r, err := strconv.Atoi(num)
	if err != nil || r < 0 || r > maxAssignedRank {
		return fmt.Errorf("rank %q: want FILE=N with N a rank from 0 to %d, got %q", s, maxAssignedRank, num)
	}
	if prev, ok := a[file]; ok {
		return fmt.Errorf("rank %q: %s is already given rank %d", s, file, prev)
	}
	a[file] = r
	return nil
}

// endsWith says whether path ends with file after a separator.
func endsWith(path, file string) bool {
	if len(path) <= len(file) || !strings.HasSuffix(path, file) {
		return false
	}
	c := path[len(path)-len(file)-1]
	return c == '/' || c == '!' || c == '\\'
}

// Resolve returns the rank assigned to each of paths (-1 for none): the
// one decision of which file each FILE names, for the read
// (RankAssignments.apply) and for an upload's check of its files' names.
// A FILE that names no path or several, or two FILEs that name one path,
// are errors (*RankAssignmentError, joined).
func (a RankAssignments) Resolve(paths []string) ([]int, error) {
	ranks := make([]int, len(paths))
	for i := range ranks {
		ranks[i] = -1
	}
	files := make([]string, 0, len(a))
	for f := range a {
		files = append(files, f)
	}
	sort.Strings(files)
	by := map[int]string{} // path index -> the FILE that names it
	var errs []error
	for _, f := range files {
		m := a.named(f, paths)
		switch {
		case len(m) != 1:
			names := make([]string, len(m))
			for j, i := range m {
				names[j] = paths[i]
			}
			errs = append(errs, &RankAssignmentError{File: f, Matches: names})
		case by[m[0]] != "":
			errs = append(errs, &RankAssignmentError{File: f, Matches: []string{paths[m[0]]}, Other: by[m[0]]})
		default:
			by[m[0]], ranks[m[0]] = f, a[f]
		}
	}
	return ranks, errors.Join(errs...)
}

// named returns the indexes of the paths that file names: the one equal
// to it, else those that end with it.
func (a RankAssignments) named(file string, paths []string) []int {
	var m []int
	for i, p := range paths {
		if p == file {
			return []int{i}
		}
		if endsWith(p, file) {
			m = append(m, i)
		}
	}
	return m
}

// apply gives the traces read their assigned ranks (RankSource
// "assigned"), withdrawing the warning that their name and
// distributedInfo disagree, and returns the errors of the assignments.
func (a RankAssignments) apply(traces []*Trace) []*FileError {
	if len(a) == 0 {
		return nil
	}
	paths := make([]string, len(traces))
	for i, t := range traces {
		paths[i] = t.Path
	}
	ranks, err := a.Resolve(paths)
	for i, t := range traces {
		if r := ranks[i]; r >= 0 {
			if nr := RankFromName(t.Path); t.RankSource == "distributedInfo" && nr >= 0 {
				t.Warnings = slices.DeleteFunc(t.Warnings, func(w string) bool { return w == nameRankWarning(nr, t.Rank) })
			}
			t.Rank, t.RankSource = r, "assigned"
		}
	}
	var errs []*FileError
	var bad *RankAssignmentError
	for _, e := range unjoin(err) {
		if errors.As(e, &bad) {
			errs = append(errs, &FileError{Path: bad.File, Err: bad})
		}
	}
	return errs
}

// unjoin returns the errors that errors.Join joined into err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// RankAssignmentError is the error for a rank assigned to a file that is
// not exactly one trace of the set, or two files given that name one.
type RankAssignmentError struct {
	File    string   // as given
	Matches []string // the traces it names (none, or more than one)
	Other   string   // another file given that names the same trace
}

// Error implements error.
func (e *RankAssignmentError) Error() string {
	switch {
	case e.Other != "":
		return fmt.Sprintf("rank given twice for %s: as %s and as %s", e.Matches[0], e.Other, e.File)
	case len(e.Matches) == 0:
		return fmt.Sprintf("rank given for %s, which is no trace file of the run", e.File)
	}
	return fmt.Sprintf("rank given for %s, which names %d trace files (%s): give more of the path", e.File, len(e.Matches), strings.Join(e.Matches, ", "))
}
