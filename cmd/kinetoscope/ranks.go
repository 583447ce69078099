package main

import (
	"flag"
	"path/filepath"
	"strings"

	"kinetoscope/ingest"
)

// rankFlag adds --rank to fs: N, the rank the command shows (usage says
// how), or FILE=N, repeatable, the rank a trace file is (assign), over
// what its distributedInfo.rank and its name say: how two files that claim
// one rank are told apart.
func rankFlag(fs *flag.FlagSet, usage string, show *int, assign ingest.RankAssignments) {
	fs.Func("rank", usage+"; or FILE=N, repeatable: trace file FILE (its path, or the end of it: its name) is rank N, whatever its distributedInfo.rank and its name say", func(s string) error {
		if strings.Contains(s, "=") {
			return assign.Add(s)
		}
		return intFlag(show)(s)
	})
}

// sideRanks returns the rank assignments of a diff that apply to the run
// at path: those whose FILE lies under path, and those that lie under
// neither path nor other (a base name: both sides).
func sideRanks(a ingest.RankAssignments, path, other string) ingest.RankAssignments {
	out := ingest.RankAssignments{}
	for file, r := range a {
		if under(file, path) || !under(file, other) {
			out[file] = r
		}
	}
	return out
}

// under says whether file is root or lies below it, as paths.
func under(file, root string) bool {
	f, r := filepath.Clean(file), filepath.Clean(root)
	return f == r || strings.HasPrefix(f, r+string(filepath.Separator))
}
