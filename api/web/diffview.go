package web

import "kinetoscope/analyze/diff"

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
}

// kernelRow is one kernel of the diff page's tables.
type kernelRow struct {
	Name, Match, Bucket string
	BaseUS, HeadUS      float64
	BaseCalls           float64
	HeadCalls           float64
}

// newDiffView orders a diff for the page: the first kernels of each list,
// metadata that differs apart from metadata that agrees.
func newDiffView(d *diff.Diff) *diffView {
	v := &diffView{}
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
