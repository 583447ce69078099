package web

import (
	"context"
	"slices"
	"strings"
	"sync"

	"kinetoscope/analyze"
	"kinetoscope/api/store"
	"kinetoscope/render"
)

// maxSummaries bounds the summaries kept; past it the cache starts over.
const maxSummaries = 1000

// runSummary is what the run list shows of an analysed run.
type runSummary struct {
	Ranks   int
	Devices string
	Phase   string  // the phase of SpanUS
	SpanUS  float64 // mean step span, mean over the ranks
	Finding string  // the headline, short
}

// summaries keeps the run list's summaries: reports never change once
// stored, so each is decoded once.
type summaries struct {
	mu sync.Mutex
	m  map[string]*runSummary
}

// of returns the summaries of the done runs among runs, by run id.
func (s *summaries) of(ctx context.Context, b Backend, runs []*store.Run) map[string]*runSummary {
	out := map[string]*runSummary{}
	for _, r := range runs {
		if r.Status != store.StatusDone {
			continue
		}
		if sum := s.get(r.ID); sum != nil {
			out[r.ID] = sum
			continue
		}
		rep, err := b.Report(ctx, r.ID)
		if err != nil {
			continue
		}
		out[r.ID] = s.put(r.ID, summarize(rep))
	}
	return out
}

func (s *summaries) get(id string) *runSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id]
}

func (s *summaries) put(id string, sum *runSummary) *runSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxSummaries {
		s.m = map[string]*runSummary{}
	}
	s.m[id] = sum
	return sum
}

// summarize reduces a report to its run list line.
func summarize(r *analyze.Report) *runSummary {
	sum := &runSummary{Ranks: len(r.Ranks)}
	var devices []string
	for i := range r.Ranks {
		rk := &r.Ranks[i]
		if rk.Device != "" && !slices.Contains(devices, rk.Device) {
			devices = append(devices, rk.Device)
		}
		name, ph := phaseOf(rk)
		sum.Phase = name
		sum.SpanUS += ph.SpanMeanUS / float64(len(r.Ranks))
	}
	sum.Devices = strings.Join(devices, ", ")
	if h := r.Headline; h != nil && h.Problem != "" {
		sum.Finding = "steps look wrong: " + h.Problem
	} else if h != nil {
		sum.Finding = render.FindingText(h)
	}
	return sum
}
