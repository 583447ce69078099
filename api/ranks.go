package api

import (
	"fmt"
	"net/http"
	"strings"

	"kinetoscope/api/store"
	"kinetoscope/ingest"
)

// rankParam is the upload's parameter (query or multipart field,
// repeatable or comma-separated, as labels are) that says which rank a
// trace file is: FILE=N, FILE the file's name as uploaded, as kinetoscope
// analyze --rank FILE=N says it.
const rankParam = "rank"

// addRanks parses rank fields (FILE=N, several may be comma-separated).
func (u *upload) addRanks(vals []string) error {
	for _, v := range vals {
		for _, fr := range strings.Split(v, ",") {
			if fr = strings.TrimSpace(fr); fr == "" {
				continue
			}
			if err := u.ranks.Add(fr); err != nil {
				return badRequest("%v", err)
			}
		}
	}
	return nil
}

// assignRanks gives each trace file of the upload the rank its rank
// fields say (store.File.Rank): a 400 for a FILE that is no trace file of
// the upload, or several, or an archive (its members are read later).
func assignRanks(u *upload) error {
	if len(u.ranks) == 0 {
		return nil
	}
	var names []string
	var idx []int
	for i, f := range u.files {
		if isTraceFile(f) {
			names, idx = append(names, f.Name), append(idx, i)
		}
	}
	if len(names) == 0 {
		return badInput("a rank field (FILE=N) gives a rank to a trace file sent, and this upload sends none outside an archive: " +
			"files inside an archive cannot be given a rank; send them as files")
	}
	ranks, err := u.ranks.Resolve(names)
	if err != nil {
		return &inputError{Code: http.StatusBadRequest, Msg: fmt.Sprintf(
			"%v (a rank field is FILE=N, FILE a trace file of this upload: %s)", err, strings.Join(names, ", "))}
	}
	for j, r := range ranks {
		if r >= 0 {
			u.files[idx[j]].Rank = new(r)
		}
	}
	return nil
}

// isTraceFile says whether f is a trace file, not an archive.
func isTraceFile(f store.File) bool {
	return f.Format == ingest.FormatJSON || f.Format == ingest.FormatGzip
}

// rankClash refuses an upload whose trace files claim one rank twice (two
// runs' files sent as one) by their names or the ranks the upload gave
// them: a 400 naming both. Archives are read later, where the same
// duplicate fails the run with the same words.
func rankClash(files []store.File) error {
	var names []string
	var assigned []int
	for _, f := range files {
		if isTraceFile(f) {
			r := -1
			if f.Rank != nil {
				r = *f.Rank
			}
			names, assigned = append(names, f.Name), append(assigned, r)
		}
	}
	if dup := ingest.NameDuplicate(names, assigned); dup != nil {
		return &inputError{Code: http.StatusBadRequest, Msg: dup.Error() +
			": upload one file per rank (the files of one run), or say which rank a file is with a rank field FILE=N"}
	}
	return nil
}

// fileRanks are the rank assignments of files for their analysis, keyed
// by the names the files go by there (layoutNames), which match exactly.
func fileRanks(files []store.File) ingest.RankAssignments {
	a := ingest.RankAssignments{}
	for i, name := range layoutNames(files) {
		if r := files[i].Rank; r != nil {
			a[name] = *r
		}
	}
	return a
}
