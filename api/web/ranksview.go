package web

import (
	"html/template"
	"net/url"
	"strconv"

	"kinetoscope/analyze"
)

// ranksView is the run page's per-rank table: for each rank, its shown
// phase per step, communication as measured (raw) and split into transfer
// and wait when collectives were aligned across ranks, and how often the
// rank arrived last.
type ranksView struct {
	Rows     []rankRow
	HasComm  bool // some rank has a transfer/wait split
	HasMixed bool // some rank has mixed steps
	// Straggler is the rank that arrives last most often (nil if none).
	Straggler   *analyze.Straggler
	Collectives *analyze.Collectives
}

// rankRow is one line of the per-rank table. Times are per step of Phase.
type rankRow struct {
	Rank     int
	Device   string
	File     string
	Source   string
	Decode   int
	Prefill  int
	Mixed    int
	Phase    string // the phase of the figures (see phaseOf)
	KernelUS float64
	SpanUS   float64 // mean span
	BusyPct  float64 // busy time, percent of span
	// CommUS is the communication kernel time per step as measured, and
	// CommPct its share of kernel time: it includes waiting.
	CommUS  float64
	CommPct float64
	// Split is the phase's transfer/wait split per step; nil without one.
	Split    *analyze.Comm
	Late     *analyze.Straggler // this rank's late arrivals
	Link     template.URL       // the page query that selects this rank
	Selected bool
}

// newRanksView lays out the per-rank table; sel is the selected rank's
// index, step the step query kept by the rank links ("" for none).
func newRanksView(r *analyze.Report, sel int, step string) *ranksView {
	v := &ranksView{Collectives: r.Collectives}
	late := map[int]*analyze.Straggler{}
	if c := r.Collectives; c != nil {
		for i := range c.Straggler {
			late[c.Straggler[i].Rank] = &c.Straggler[i]
		}
		if len(c.Straggler) > 0 && c.Straggler[0].LateCount > 0 {
			v.Straggler = &c.Straggler[0]
		}
	}
	for i := range r.Ranks {
		rk := &r.Ranks[i]
		row := newRankRow(reportBuckets(r), rk)
		row.Selected, row.Late = i == sel, late[rk.Rank]
		q := url.Values{"rank": {strconv.Itoa(rk.Rank)}}
		if step != "" {
			q.Set("step", step)
		}
		row.Link = template.URL("?" + q.Encode())
		v.HasComm = v.HasComm || row.Split != nil
		v.HasMixed = v.HasMixed || row.Mixed > 0
		v.Rows = append(v.Rows, row)
	}
	return v
}

// newRankRow gives one rank's figures per step of its shown phase.
func newRankRow(buckets []analyze.Bucket, rk *analyze.Rank) rankRow {
	name, ph := phaseOf(rk)
	row := rankRow{Rank: rk.Rank, Device: rk.Device, File: rk.File, Source: rk.StepSource,
		Decode: rk.Decode.Steps, Phase: name, KernelUS: ph.KernelPerStepUS, SpanUS: ph.SpanMeanUS,
		BusyPct: percent(ph.BusyUS, ph.SpanUS)}
	if rk.Prefill != nil {
		row.Prefill = rk.Prefill.Steps
	}
	if rk.Mixed != nil {
		row.Mixed = rk.Mixed.Steps
	}
	for _, b := range buckets {
		if b.Group == analyze.GroupCommunication {
			row.CommUS += ph.Buckets[b.ID].USPerStep
		}
	}
	row.CommPct = percent(row.CommUS, row.KernelUS)
	if c := ph.Comm; c != nil && ph.Steps > 0 {
		n := float64(ph.Steps)
		row.Split = &analyze.Comm{KernelUS: c.KernelUS / n, TransferUS: c.TransferUS / n, WaitUS: c.WaitUS / n,
			TransferShareNetOfWait: c.TransferShareNetOfWait, WaitShare: c.WaitShare}
	}
	return row
}

// percent returns 100 * part / whole, 0 when whole is 0.
func percent(part, whole float64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * part / whole
}
