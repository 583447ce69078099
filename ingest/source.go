package ingest

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

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
}

// SourceReader reads a Source from its start, or at any offset (a zip
// archive's directory is at its end).
type SourceReader interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// OpenSources reads every source as Open reads a file, into one set: the
// files of one run (Set.Path joins their names with spaces). Trace files
// are read several at a time, as a directory's are; two files of one rank
// are an error naming both. A source that cannot be read is recorded in
// Set.Errors; OpenSources itself fails only when there is no source or
// opt.Context is done.
func OpenSources(srcs []Source, opt Options) (*Set, error) {
	if len(srcs) == 0 {
		return nil, errors.New("open: no source")
	}
	names := make([]string, len(srcs))
	found := make([]dirEntry, len(srcs))
	for i, src := range srcs {
		names[i] = src.Name
		found[i] = sourceEntry(src)
	}
	c := &collector{set: &Set{Path: strings.Join(names, " ")}, opt: opt, many: len(srcs) > 1}
	c.readAll(found)
	if ctx := opt.Context; ctx != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("reading %s: %w", c.set.Path, ctx.Err())
	}
	c.finish()
	return c.set, nil
}

// sourceEntry files src by its format (from its first bytes when not
// given): an archive is read at its turn, a trace file with the others.
func sourceEntry(src Source) dirEntry {
	e := dirEntry{path: src.Name, size: src.Size, open: src.Open}
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
