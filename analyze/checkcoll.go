package analyze

import (
	"fmt"
	"strings"
)

// UnnamedCollective is a kernel name whose bucket hangs on the collective
// it runs (RCCL's ncclDevKernel_Generic) on events whose collective
// nothing in the trace names: no collective args, and no record_param_comms
// op, nccl:NAME annotation or collective op (vllm::all_reduce) at their
// launch. They are in Other comm, and the collective they run is
// undercounted by their time.
type UnnamedCollective struct {
	Name  string  `json:"name"`
	Count int     `json:"count"`
	US    float64 `json:"us"`
	// NoLaunch counts those whose launch is not in the trace: launched
	// before the profile began, the only CPU events that could name them
	// were never recorded.
	NoLaunch int `json:"no_launch"`
}

// unnamedCollectives lists, most time first, the kernels of the trace
// whose collective is unknown (see UnnamedCollective): the events of the
// names whose rules depend on the collective that are in Other comm for
// want of one. links.collective, the one place a collective is found, is
// asked again for those events only.
func (p *rankPass) unnamedCollectives() []UnnamedCollective {
	comm := p.tab.index[CommOther]
	at := map[string]int{}
	var out []UnnamedCollective
	for i, ev := range p.t.GPU.All() {
		if p.bucketOf[i] != comm || !p.ec.info(ev).collDep {
			continue
		}
		l := p.launch(i)
		if p.ec.links.collective(ev, l) != "" {
			continue
		}
		name := p.t.Name(ev.Name)
		j, ok := at[name]
		if !ok {
			j = len(out)
			at[name] = j
			out = append(out, UnnamedCollective{Name: name})
		}
		out[j].Count++
		out[j].US += us(ev.Dur)
		if l == nil {
			out[j].NoLaunch++
		}
	}
	for a := 1; a < len(out); a++ { // few names: insertion sort, most time first
		for b := a; b > 0 && out[b].US > out[b-1].US; b-- {
			out[b], out[b-1] = out[b-1], out[b]
		}
	}
	return out
}

// unnamedCollCaveat says how many collective kernels, on every rank, run
// a collective the trace does not name.
func (c *Checks) unnamedCollCaveat(r *Report) string {
	var n, noLaunch int
	var total float64
	var names []string
	for i := range c.Ranks {
		for _, u := range c.Ranks[i].Rules.UnnamedCollectives {
			n, noLaunch, total = n+u.Count, noLaunch+u.NoLaunch, total+u.US
			if !containsString(names, shortName(u.Name)) {
				names = append(names, shortName(u.Name))
			}
		}
	}
	if n == 0 {
		return ""
	}
	why := "none has collective args, or a record_param_comms op, nccl:NAME annotation or collective op at its launch"
	if noLaunch > 0 {
		why = fmt.Sprintf("%d of them were launched before the profile began, so no CPU event of theirs is in it", noLaunch)
	}
	return fmt.Sprintf("%d calls of %s (%s in all) run a collective nothing in the trace names, so they are in Other comm "+
		"and the collective they run is undercounted by their time: %s",
		n, strings.Join(names, ", "), msText(total), why)
}

// containsString says whether ss holds s.
func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
