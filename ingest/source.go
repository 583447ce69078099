package ingest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// An Input is what one run is read from: its files, wherever they are held,
// and the name the run goes by. FromPath and FromPaths make one from local
// paths; a service makes one of the files it holds ({Name, Sources}).
type Input struct {
	// Name names the run: it is Set.Path, and so the report's source and
	// the subject of the errors about the whole run.
	Name string
	// Sources are the run's files, filed in their order: trace files, and
	// tar, tar.gz or zip archives of them.
	Sources []Source
	// many is set when the input stands for more than one file even if it
	// has one source (a directory's): there a JSON file that is not a trace
	// is set aside, not an error. Several sources always are many.
	many bool
	// dir is the local directory the sources were found in, when the
	// input is one directory.
	dir string
	// err is why the input could not be made (a path that cannot be
	// looked at); OpenInput returns it.
	err error
}

// Dir returns the local directory the input's sources were found in, when
// the input is one directory ("" otherwise): the error that finds no trace
// in it says what it holds instead.
func (in Input) Dir() string { return in.dir }

// A Source is one file to read that need not be on the local disk: a trace
// file, or a tar, tar.gz or zip archive of them, held in an object store,
// say.
type Source struct {
	// Name stands for the file in errors, in Trace.Path and in rank sets
	// (under a capture_traces directory it is a capture trace).
	Name string
	// Size is the file's length in bytes.
	Size int64
	// Format is the file's format when known (FormatJSON, FormatGzip,
	// FormatTar, FormatTarGz, FormatZip: what Limits.Check found when it
	// was stored); "" has it told from the file's first bytes, which costs
	// one more Open.
	Format string
	// Open opens the file. It may be called more than once; each reader is
	// closed once read.
	Open func() (SourceReader, error)
	// Capture has the file read as a CUDA-graph capture trace (Set.Captures)
	// wherever it lies (WithCaptures).
	Capture bool
	// What a directory's walk found out about the file before it was read:
	// a trace file by its name (read as a trace whatever its first bytes),
	// one set aside unread and why, or why it could not be looked at.
	trace bool
	aside string
	err   error
}

// SourceReader reads a Source from its start, or at any offset (a zip
// archive's directory is at its end).
type SourceReader interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// FromPath is the input at a local path: a trace file, a directory of them
// (a vLLM profile directory: every *.json and *.json.gz below it), or a
// tar, tar.gz or zip archive of one, named by path. A path that cannot be
// looked at is an error that OpenInput returns.
func FromPath(path string) Input {
	return FromPaths([]string{path})
}

// FromPaths is the input of several local paths read as one run, each as
// FromPath reads one: the rank files of one run given one by one, named by
// the paths joined with spaces.
func FromPaths(paths []string) Input {
	in := Input{Name: strings.Join(paths, " "), many: len(paths) > 1}
	if len(paths) == 0 {
		in.err = errors.New("open: no path")
	}
	for _, p := range paths {
		srcs, dir, err := pathSources(p)
		if err != nil {
			in.err = err
			break
		}
		if dir {
			in.many = true
			if len(paths) == 1 {
				in.dir = p
			}
		}
		in.Sources = append(in.Sources, srcs...)
	}
	return in
}

// pathSources returns the sources at one local path, and whether it is a
// directory.
func pathSources(path string) ([]Source, bool, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, false, err
	}
	switch {
	case st.IsDir():
		return dirSources(path), true, nil
	case st.Mode().IsRegular():
		return []Source{localSource(path, st.Size())}, false, nil
	}
	return nil, false, fmt.Errorf("%s: not a regular file or directory (%s)", path, st.Mode().Type())
}

// localSource is the local file at path, of size bytes.
func localSource(path string, size int64) Source {
	return Source{Name: path, Size: size, Open: func() (SourceReader, error) { return os.Open(path) }}
}

// dirSources returns every trace file below root, in the order of the walk
// (a file that cannot be looked at, or that is not a regular file, is
// filed as such in its place).
func dirSources(root string) []Source {
	var found []Source
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			found = append(found, Source{Name: p, err: err})
			return nil
		}
		if d.IsDir() || !isTraceName(d.Name()) {
			return nil
		}
		info, err := os.Stat(p) // through a symbolic link
		switch {
		case err != nil:
			found = append(found, Source{Name: p, err: err})
		case !info.Mode().IsRegular(): // a FIFO would block the walk
			found = append(found, Source{Name: p, aside: "not a regular file (" + info.Mode().Type().String() + ")"})
		default:
			src := localSource(p, info.Size())
			src.trace = true
			found = append(found, src)
		}
		return nil
	})
	return found
}

// OpenInput reads every source of in, into one set named in.Name. Trace
// files are read several at a time, an archive's members at its turn, and
// everything is filed in the order of the sources; two files of one rank
// are an error naming both. A source that cannot be read is recorded in
// Set.Errors and the others are still read; OpenInput itself fails only
// when in could not be made, holds no source at all, or opt.Context is
// done.
func OpenInput(in Input, opt Options) (*Set, error) {
	if in.err != nil {
		return nil, in.err
	}
	if len(in.Sources) == 0 && !in.many {
		return nil, errors.New("open: no source")
	}
	found := make([]dirEntry, len(in.Sources))
	for i, src := range in.Sources {
		found[i] = sourceEntry(src)
	}
	c := &collector{set: &Set{Path: in.Name}, opt: opt}
	own := 0 // the sources other than capture traces given apart
	for _, src := range in.Sources {
		if src.Capture {
			c.captures = append(c.captures, src.Name)
		} else {
			own++
		}
	}
	c.many = in.many || own > 1
	c.readAll(found)
	if ctx := opt.Context; ctx != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("reading %s: %w", c.set.Path, ctx.Err())
	}
	c.finish()
	return c.set, nil
}

// sourceEntry files src by what the walk found out, else by its format
// (from its first bytes when not given): an archive is read at its turn, a
// trace file with the others.
func sourceEntry(src Source) dirEntry {
	e := dirEntry{path: src.Name, size: src.Size, open: src.Open, aside: src.aside, err: src.err}
	switch {
	case src.err != nil || src.aside != "":
		return e
	case src.trace:
		e.read = true
		return e
	}
	switch src.Format {
	case FormatTar, FormatTarGz, FormatZip:
		e.archive = true
		return e
	case FormatJSON, FormatGzip:
		e.read = true
		return e
	}
	r, err := src.Open()
	if err != nil {
		e.err = err
		return e
	}
	defer r.Close()
	if kind, _ := sniffArchive(r, src.Size); kind != "" {
		e.archive = true
	} else {
		e.read = true
	}
	return e
}
