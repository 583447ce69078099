package ingest

import (
	"path"
	"regexp"
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

// setRank fills the rank from the file name when distributedInfo has none.
func (p *builder) setRank() {
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
