package watch

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// Entry is one file below a watched directory and what a Watcher makes
// of it.
type Entry struct {
	Path    string
	Size    int64
	ModTime time.Time
	// Ignored says why a Watcher passes the file over; "" for a trace
	// file it follows.
	Ignored string
}

// Survey lists the files below dir, in path order, as a Watcher whose
// Options.After is after sees them: to say what a directory holds when no
// trace turns up.
func Survey(dir string, after time.Time) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && p == dir:
			return err
		case err != nil:
			return nil
		case d.IsDir() && skipDir(d.Name()):
			out = append(out, Entry{Path: p, Ignored: "a directory the watcher does not enter"})
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		e := Entry{Path: p}
		st, err := d.Info()
		if err != nil {
			return nil // removed between listing and stat
		}
		e.Size, e.ModTime, e.Ignored = st.Size(), st.ModTime(), ignored(d, st, after)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("survey %s: %w", dir, err)
	}
	return out, nil
}

// skipDir reports whether the watcher passes over a directory of that
// name: vLLM's capture_traces/ holds CUDA graph capture traces, not steps.
func skipDir(name string) bool { return name == "capture_traces" }

// ignored says why a Watcher passes over the file d (stat st) when it
// ignores the files last modified before after; "" when it follows it.
func ignored(d fs.DirEntry, st fs.FileInfo, after time.Time) string {
	switch {
	case !d.Type().IsRegular():
		return "not a regular file"
	case !isTraceName(d.Name()):
		return "not a trace file name (.json or .json.gz)"
	case st.ModTime().Before(after):
		return "last written before the profile started"
	}
	return ""
}
