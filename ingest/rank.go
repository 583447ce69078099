package ingest

import (
	"fmt"
	"path"
	"regexp"
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

// setRank fills the rank from the file name when distributedInfo has none;
// a rank assigned to the file (Options.Ranks) overrides both.
func (p *builder) setRank() {
	if p.assigned >= 0 {
		p.t.Rank, p.t.RankSource = p.assigned, "assigned"
		return
	}
	r := RankFromName(p.t.Path)
	if p.t.RankSource == "distributedInfo" {
		if r >= 0 && r != p.t.Rank {
			p.warn("the file name says rank %d but distributedInfo.rank is %d; using %d", r, p.t.Rank, p.t.Rank)
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
// archives) whose names claim one rank, the way a set of them would be
// read (execution traces and CUDA-graph captures apart), or nil. It lets
// an upload refuse them before reading their content; files whose names
// say no rank are left to the read (Set.Errors).
func NameDuplicate(paths []string) *DuplicateRankError {
	type key struct {
		capture bool
		rank    int
	}
	first := map[key]string{}
	for _, p := range paths {
		k := key{isCapture(p), RankFromName(p)}
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

// RankAssignments say which rank trace files are, overriding what their
// distributedInfo.rank and their names say: file -> rank (Options.Ranks;
// --rank FILE=N on the command line, a rank field on upload). A file is
// named by its path as read (Trace.Path: as given, below a directory, or
// "archive!member") or by the end of that path after a "/" or "!", its
// base name say. Each file named must be one trace of the set read, else
// the read fails (a *RankAssignmentError in Set.Errors).
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

// names says whether the assigned file name names the trace at path.
func names(file, path string) bool {
	if file == path {
		return true
	}
	if !strings.HasSuffix(path, file) {
		return false
	}
	c := path[len(path)-len(file)-1]
	return c == '/' || c == '!' || c == '\\'
}

// rankOf returns the rank assigned to the trace at path, or -1. When two
// files given name it (an error the read reports), the lowest rank wins,
// so that the answer does not depend on map order.
func (a RankAssignments) rankOf(path string) int {
	r := -1
	for file, n := range a {
		if names(file, path) && (r < 0 || n < r) {
			r = n
		}
	}
	return r
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

// check returns the errors of the assignments against the traces read:
// a file that names none or several, two files that name one.
func (a RankAssignments) check(traces []*Trace) []*FileError {
	files := make([]string, 0, len(a))
	for f := range a {
		files = append(files, f)
	}
	sort.Strings(files)
	var errs []*FileError
	by := map[string]string{} // trace path -> the file given that names it
	for _, f := range files {
		var m []string
		for _, t := range traces {
			if names(f, t.Path) {
				m = append(m, t.Path)
			}
		}
		var e *RankAssignmentError
		switch {
		case len(m) != 1:
			e = &RankAssignmentError{File: f, Matches: m}
		case by[m[0]] != "":
			e = &RankAssignmentError{File: f, Matches: m, Other: by[m[0]]}
		default:
			by[m[0]] = f
			continue
		}
		errs = append(errs, &FileError{Path: f, Err: e})
	}
	return errs
}
