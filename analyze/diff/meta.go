package diff

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"kinetoscope/analyze"
)

// metadata compares what the reports say about each run: GPUs, world size,
// ranks, phases present, how steps were found, whether the trace was
// generated, and the software versions (one key each, by name).
func metadata(b, h *side) []MetaDiff {
	pairs := []struct {
		key string
		get func(*side) string
	}{
		{"gpu", func(s *side) string { return strings.Join(devices(s.ranks), ", ") }},
		{"world_size", func(s *side) string { return strconv.Itoa(worldSize(s.ranks)) }},
		{"ranks", func(s *side) string { return strconv.Itoa(len(s.report.Ranks)) }},
		{"phases", func(s *side) string { return strings.Join(phasesPresent(s.report), ", ") }},
		{"step_source", func(s *side) string { return stepSources(s.ranks) }},
		{"synthetic", func(s *side) string { return strconv.FormatBool(s.report.Synthetic) }},
	}
	out := make([]MetaDiff, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, metaDiff(p.key, p.get(b), p.get(h)))
	}
	bv, hv := versions(b.ranks), versions(h.ranks)
	keys := maps.Clone(bv)
	maps.Copy(keys, hv)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		out = append(out, metaDiff(k, bv[k], hv[k]))
	}
	return out
}

func metaDiff(key, base, head string) MetaDiff {
	return MetaDiff{Key: key, Base: base, Head: head, Differs: base != head}
}

// versions maps each version key of the ranks to its distinct values,
// sorted and joined.
func versions(ranks []*analyze.Rank) map[string]string {
	all := map[string][]string{}
	for _, rk := range ranks {
		for k, v := range rk.Versions {
			if !slices.Contains(all[k], v) {
				all[k] = append(all[k], v)
			}
		}
	}
	out := make(map[string]string, len(all))
	for k, vs := range all {
		slices.Sort(vs)
		out[k] = strings.Join(vs, ", ")
	}
	return out
}

// devices lists the distinct GPU names of the ranks, sorted.
func devices(ranks []*analyze.Rank) []string {
	var out []string
	for _, rk := range ranks {
		if rk.Device != "" && !slices.Contains(out, rk.Device) {
			out = append(out, rk.Device)
		}
	}
	slices.Sort(out)
	return out
}

// worldSize is the largest world size any rank states.
func worldSize(ranks []*analyze.Rank) int {
	n := 0
	for _, rk := range ranks {
		n = max(n, rk.WorldSize)
	}
	return n
}

// stepSources lists the distinct step sources of the ranks, sorted.
func stepSources(ranks []*analyze.Rank) string {
	var out []string
	for _, rk := range ranks {
		if !slices.Contains(out, rk.StepSource) {
			out = append(out, rk.StepSource)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
