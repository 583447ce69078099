package web

import (
	"fmt"
	"slices"
	"strings"

	"kinetoscope/analyze/diff"
	"kinetoscope/render"
)

// diffRows is how many kernels each kernel table of the diff page lists.
const diffRows = 15

// diffView is what the diff page lays out beyond the Diff itself.
type diffView struct {
	Changed, Added, Removed []kernelRow
	// MoreChanged, MoreAdded and MoreRemoved count the kernels left out of
	// the tables (all are in the JSON).
	MoreChanged, MoreAdded, MoreRemoved int
	Differs, Same                       []diff.MetaDiff
	Significant                         int // buckets changed beyond noise
	// Warnings say how the two runs differ in what makes a comparison
	// fair: GPU, rank count, the phase compared, model.
	Warnings []string
	// CostModel compares the runs' cost models (render's view); nil when
	// neither run's steps were fitted.
	CostModel *render.CostModelView
}

// kernelRow is one kernel of the diff page's tables.
type kernelRow struct {
	Name, Match, Bucket string
	BaseUS, HeadUS      float64
	BaseCalls           float64
	HeadCalls           float64
}

// newDiffView orders a diff for the page: the first kernels of each list,
// metadata that differs apart from metadata that agrees, and warnings when
// the runs are not alike. asked is the phase the query asked for ("" for
// the default, decode).
func newDiffView(d *diff.Diff, asked string) *diffView {
	v := &diffView{Warnings: diffWarnings(d, asked), CostModel: render.DiffCostModelView(d)}
	for _, k := range d.Kernels.Changed {
		v.Changed = append(v.Changed, kernelRow{Name: k.Name, Match: k.Match, Bucket: string(k.Bucket),
			BaseUS: k.BaseUSPerStep, HeadUS: k.HeadUSPerStep, BaseCalls: k.BaseCallsPerStep, HeadCalls: k.HeadCallsPerStep})
	}
	for _, k := range d.Kernels.Added {
		v.Added = append(v.Added, kernelRow{Name: k.Name, Bucket: string(k.Bucket), HeadUS: k.USPerStep, HeadCalls: k.CallsPerStep})
	}
	for _, k := range d.Kernels.Removed {
		v.Removed = append(v.Removed, kernelRow{Name: k.Name, Bucket: string(k.Bucket), BaseUS: k.USPerStep, BaseCalls: k.CallsPerStep})
	}
	v.Changed, v.MoreChanged = firstRows(v.Changed)
	v.Added, v.MoreAdded = firstRows(v.Added)
	v.Removed, v.MoreRemoved = firstRows(v.Removed)
	for _, m := range d.Metadata {
		if m.Differs {
			v.Differs = append(v.Differs, m)
		} else {
			v.Same = append(v.Same, m)
		}
	}
	for _, b := range d.Buckets {
		if b.Significant {
			v.Significant++
		}
	}
	return v
}

// firstRows keeps the first diffRows rows and counts the others.
func firstRows(rows []kernelRow) ([]kernelRow, int) {
	if len(rows) <= diffRows {
		return rows, 0
	}
	return rows[:diffRows], len(rows) - diffRows
}

// diffWarnings says how base and head differ in what makes their diff a
// fair comparison: the GPU, the number of ranks, the phase compared (one
// run without the steps asked for), the model.
func diffWarnings(d *diff.Diff, asked string) []string {
	var w []string
	b, h := d.Base, d.Head
	if bd, hd := strings.Join(b.Devices, ", "), strings.Join(h.Devices, ", "); bd != hd {
		w = append(w, fmt.Sprintf("The runs ran on different GPUs: %s against %s.", orUnknown(bd), orUnknown(hd)))
	}
	if b.Ranks != h.Ranks || b.WorldSize != h.WorldSize {
		w = append(w, fmt.Sprintf("The runs differ in ranks: %d rank(s) of %s against %d of %s.", b.Ranks, worldSize(b.WorldSize), h.Ranks, worldSize(h.WorldSize)))
	}
	if asked == "" {
		asked = "decode"
	}
	if d.Phase != asked {
		w = append(w, fmt.Sprintf("Not both runs have %s steps (base: %s; head: %s), so %s were compared.",
			asked, strings.Join(b.Phases, ", "), strings.Join(h.Phases, ", "), stepsOf(d.Phase)))
	} else if !slices.Equal(b.Phases, h.Phases) {
		w = append(w, fmt.Sprintf("The runs hold different kinds of steps (base: %s; head: %s).", strings.Join(b.Phases, ", "), strings.Join(h.Phases, ", ")))
	}
	for _, m := range d.Metadata {
		if m.Differs && strings.Contains(strings.ToLower(m.Key), "model") {
			w = append(w, fmt.Sprintf("The runs differ in %s: %s against %s.", m.Key, orUnknown(m.Base), orUnknown(m.Head)))
		}
	}
	return w
}

func orUnknown(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// worldSize names a world size, "an unrecorded world size" for 0.
func worldSize(n int) string {
	if n <= 0 {
		return "an unrecorded world size"
	}
	return fmt.Sprintf("world size %d", n)
}
