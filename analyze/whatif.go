package analyze

import "fmt"

// WhatIf is an estimate of the step's span under one assumption, from the
// step-time account of the headline's phase: a bound, not a measurement.
type WhatIf struct {
	Name string `json:"name"`
	// Assumption says what the estimate assumes.
	Assumption string `json:"assumption"`
	// StepUS is the estimated mean step span (the slowest rank's); NowUS
	// the measured one it is set against.
	StepUS float64 `json:"step_us"`
	NowUS  float64 `json:"now_us"`
}

// What-if names.
const (
	WhatIfLinkPeak   = "collectives ran at the link's peak"
	WhatIfNoWait     = "no rank waited"
	WhatIfHostOnTime = "the host were never late"
)

// whatIfs estimates the headline phase's step under each assumption; nil
// without accounts.
func whatIfs(r *Report) []WhatIf {
	phase, get := headlinePhase(r.Ranks)
	accounts := make(map[int]*Account)
	var order []int
	now := 0.0
	for i := range r.Ranks {
		if a := get(&r.Ranks[i]).Account; a != nil {
			accounts[r.Ranks[i].Rank] = a
			order = append(order, r.Ranks[i].Rank)
			now = max(now, a.SpanUS)
		}
	}
	if len(order) == 0 {
		return nil
	}
	slowest := func(f func(rank int, a *Account) float64) float64 {
		m := 0.0
		for _, rank := range order {
			m = max(m, f(rank, accounts[rank]))
		}
		return m
	}
	var out []WhatIf
	if save, peak := linkPeakSaving(r.Bandwidth, phase); peak != "" {
		out = append(out, WhatIf{Name: WhatIfLinkPeak, NowUS: now,
			Assumption: fmt.Sprintf("every collective's transfer runs at %s's peak bus bandwidth for its message size, its time scaled by the bandwidth table's share of peak; a rank saves at most its exposed communication", peak),
			StepUS: slowest(func(_ int, a *Account) float64 {
				return a.SpanUS - min(save, a.TransferUS+a.CommUnsplitUS)
			})})
	}
	if len(order) > 1 {
		out = append(out, WhatIf{Name: WhatIfNoWait, NowUS: now,
			Assumption: "balanced ranks: no rank waits in a collective for another, every other part unchanged; the step is the slowest rank's span less its wait",
			StepUS:     slowest(func(_ int, a *Account) float64 { return a.SpanUS - a.WaitUS })})
	}
	out = append(out, WhatIf{Name: WhatIfHostOnTime, NowUS: now,
		Assumption: "no idle with the host late or after a host sync, as under CUDA graphs, and no wait for a rank whose largest idle cause is one of them; every other part unchanged",
		StepUS: slowest(func(rank int, a *Account) float64 {
			s := a.SpanUS - a.Idle.HostLateUS - a.Idle.AfterSyncUS
			for _, w := range a.WaitFor {
				if l, ok := accounts[w.Rank]; ok && w.Rank != rank && hostBound(l) {
					s -= w.US
				}
			}
			return s
		})})
	return out
}

// hostBound says whether a's largest idle cause is the host: late or
// after a sync.
func hostBound(a *Account) bool {
	c := a.LargestIdle()
	return c.Name == PartHostLate || c.Name == PartAfterSync
}

// linkPeakSaving returns the time per step (per rank) the phase's
// collectives would save at the link's peak bus bandwidth, and the link's
// name; "" when no peak is known.
func linkPeakSaving(b *Bandwidth, phase string) (float64, string) {
	if b == nil || b.Peak == nil {
		return 0, ""
	}
	save := 0.0
	for _, row := range b.Rows {
		if row.Phase != phase || row.ShareOfPeak <= 0 {
			continue
		}
		t := row.TransferUSPerStep
		if row.Basis == BasisKernel {
			t = row.KernelUSPerStep
		}
		save += t * (1 - min(1, row.ShareOfPeak/100))
	}
	return save, b.Peak.Name
}
