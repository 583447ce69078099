package sampletraces

import (
	"embed"
	"io/fs"
)

// bundled holds sampletraces/real in the binary, so that a service started
// anywhere has the real sample runs.
//
//go:embed real
var bundled embed.FS

// Bundled returns the real sample runs (sampletraces/real: one directory
// of rank files per run, with its truth.json) built into the binary.
func Bundled() fs.FS {
	sub, err := fs.Sub(bundled, "real")
	if err != nil {
		panic(err) // the embed pattern above names real: it is there
	}
	return sub
}
