package api

import (
	"net/http"

	"kinetoscope/api/store"
	"kinetoscope/ingest"
)

// rankClash refuses an upload whose trace files' names claim one rank
// twice (two runs' files sent as one): a 400 naming both. Archives are
// read later, where the same duplicate fails the run with the same words.
func rankClash(files []store.File) error {
	var names []string
	for _, f := range files {
		if f.Format == ingest.FormatJSON || f.Format == ingest.FormatGzip {
			names = append(names, f.Name)
		}
	}
	if dup := ingest.NameDuplicate(names); dup != nil {
		return &inputError{Code: http.StatusBadRequest, Msg: dup.Error() + ": upload one file per rank (the files of one run)"}
	}
	return nil
}
