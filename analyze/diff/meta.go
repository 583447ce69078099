package diff

import (
	"slices"
	"strconv"
	"strings"

	"kinetoscope/analyze"
)

// metadata compares what the reports say about each run: GPUs, world size,
// ranks, phases present, how steps were found, and whether the trace was
// generated.
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
	out := make([]MetaDiff, len(pairs))
	for i, p := range pairs {
		bv, hv := p.get(b), p.get(h)
		out[i] = MetaDiff{Key: p.key, Base: bv, Head: hv, Differs: bv != hv}
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
