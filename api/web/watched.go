package web

import "time"

// WatchedDir is a profile directory the server follows (serve --watch),
// as the run list shows it while vLLM writes it.
type WatchedDir struct {
	Dir       string
	Files     int   // trace files seen
	Bytes     int64 // their size
	Growing   int   // files still being written
	Complete  int   // files complete
	Truncated int   // files left truncated
	WorldSize int   // of the set being filled, 0 until a file says
	// Runs are the ids of the runs made of the sets found so far.
	Runs    []string
	Updated time.Time
}
