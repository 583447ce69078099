package api

import (
	"slices"
	"strings"

	"kinetoscope/api/web"
)

// SetWatched records what a followed profile directory holds now (serve
// --watch): the run list shows it while vLLM writes it.
func (s *Server) SetWatched(d web.WatchedDir) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watched == nil {
		s.watched = map[string]web.WatchedDir{}
	}
	s.watched[d.Dir] = d
}

// Watched lists the followed profile directories by path.
func (s *Server) Watched() []web.WatchedDir {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	out := make([]web.WatchedDir, 0, len(s.watched))
	for _, d := range s.watched {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b web.WatchedDir) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}
