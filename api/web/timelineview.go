package web

import (
	"cmp"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strconv"

	"kinetoscope/analyze"
	"kinetoscope/render"
)

// maxStepOptions is the most steps the step picker lists in its menu;
// longer runs get a number field.
const maxStepOptions = 2000

// timelineView is the run page's step timeline and its step picker. Its
// state (rank and step) lives in the page URL.
type timelineView struct {
	Step    *analyze.Step
	Query   template.URL // rank=N&step=M of the chart URL
	Chosen  string       // how the step was chosen: "slowest decode step" or "step picked"
	Note    string       // why the step asked for is not shown
	Links   []stepLink
	Options []stepOption // the menu; nil when the rank has too many steps
	Last    int          // the last step index (for the number field)
}

// stepLink is one quick link of the picker.
type stepLink struct {
	Label   string
	Href    template.URL
	Current bool
}

// stepOption is one step of the picker's menu.
type stepOption struct {
	Index    int
	Label    string
	Selected bool
}

// newTimelineView picks the step the timeline shows on rank rk: the step
// query when that step exists, else the slowest step of the shown phase.
func newTimelineView(r *analyze.Report, rk *analyze.Rank, phase, stepQuery string) *timelineView {
	if len(rk.Steps) == 0 {
		return nil
	}
	v := &timelineView{Chosen: "slowest " + phaseStep(phase)}
	asked := -1
	if stepQuery != "" {
		n, err := strconv.Atoi(stepQuery)
		if err != nil {
			v.Note = fmt.Sprintf("step %q is not a step number: showing the slowest %s", stepQuery, phaseStep(phase))
		} else {
			asked = n
		}
	}
	_, st, err := render.TimelineStep(r, rk.Rank, asked)
	if err != nil {
		v.Note = fmt.Sprintf("rank %d has no step %d: showing the slowest %s", rk.Rank, asked, phaseStep(phase))
		_, st, err = render.TimelineStep(r, rk.Rank, -1)
	} else if asked >= 0 {
		v.Chosen = "step picked"
	}
	if err != nil || st == nil {
		return nil
	}
	v.Step = st
	v.Query = template.URL(stepQueryString(rk.Rank, st.Index))
	v.Links = stepLinks(rk, phase, st.Index)
	v.Last = rk.Steps[len(rk.Steps)-1].Index
	if len(rk.Steps) <= maxStepOptions {
		for i := range rk.Steps {
			s := &rk.Steps[i]
			v.Options = append(v.Options, stepOption{Index: s.Index, Selected: s.Index == st.Index,
				Label: fmt.Sprintf("step %d · %s · span %s · %d kernels", s.Index, s.Phase, render.MSText(s.SpanUS), s.Kernels)})
		}
	}
	return v
}

// phaseStep names one step of a phase: "decode step", or "step" for all
// steps ("all steps" on the run page, "all" in a diff).
func phaseStep(phase string) string {
	if phase == "all steps" || phase == "all" {
		return "step"
	}
	return phase + " step"
}

// stepsOf names the steps of a phase: "the decode steps", or "all steps".
func stepsOf(phase string) string {
	if phase == "all steps" || phase == "all" {
		return "all steps"
	}
	return "the " + phase + " steps"
}

// stepQueryString is the URL query that shows one step of one rank.
func stepQueryString(rank, step int) string {
	return url.Values{"rank": {strconv.Itoa(rank)}, "step": {strconv.Itoa(step)}}.Encode()
}

// stepLinks returns the picker's quick links: the previous and next step,
// and the fastest, median and slowest step of the shown phase by span.
func stepLinks(rk *analyze.Rank, phase string, cur int) []stepLink {
	var inPhase []*analyze.Step
	pos := -1
	for i := range rk.Steps {
		s := &rk.Steps[i]
		if s.Index == cur {
			pos = i
		}
		if (phase == "all steps" || s.Phase == phase) && s.Kernels > 0 {
			inPhase = append(inPhase, s)
		}
	}
	var links []stepLink
	add := func(label string, s *analyze.Step) {
		links = append(links, stepLink{Label: label, Current: s.Index == cur,
			Href: template.URL("?" + stepQueryString(rk.Rank, s.Index) + "#timeline")})
	}
	if pos > 0 {
		add("← previous step", &rk.Steps[pos-1])
	}
	if pos >= 0 && pos+1 < len(rk.Steps) {
		add("next step →", &rk.Steps[pos+1])
	}
	if len(inPhase) > 0 {
		slices.SortStableFunc(inPhase, func(a, b *analyze.Step) int { return cmp.Compare(a.SpanUS, b.SpanUS) })
		w := phaseStep(phase)
		add("fastest "+w, inPhase[0])
		add("median "+w, inPhase[len(inPhase)/2])
		add("slowest "+w, inPhase[len(inPhase)-1])
	}
	return links
}
