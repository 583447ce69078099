package diff

import (
	"slices"

	"kinetoscope/analyze"
)

// BandwidthDiff compares the bandwidth of one phase, collective kind and
// message size (analyze.BandwidthRow) between the runs. The bandwidth is a
// run's figure over all its ranks, whatever Options.Rank selects.
type BandwidthDiff struct {
	Phase     string           `json:"phase"`
	Bucket    analyze.BucketID `json:"bucket"`
	Label     string           `json:"label"`
	GroupSize int              `json:"group_size"`
	// Bytes is the message size (the lower end of a grouped range): the
	// one side's where the other recorded none, 0 when neither did.
	Bytes int64 `json:"bytes"`
	// Only is "base" or "head" when the row is in one run only.
	Only string `json:"only,omitempty"`
	// Basis is each side's time basis (analyze.BasisTransfer or
	// analyze.BasisKernel, "" without a figure), USPerCall that time per
	// call.
	BaseBasis     string  `json:"base_basis,omitempty"`
	HeadBasis     string  `json:"head_basis,omitempty"`
	BaseUSPerCall float64 `json:"base_us_per_call"`
	HeadUSPerCall float64 `json:"head_us_per_call"`
	// BusBW is the bus bandwidth in GB/s, 0 without a figure; DeltaPct
	// the head's change from the base, 0 unless both have one.
	BaseBusBW        float64 `json:"base_busbw_gb_per_s"`
	HeadBusBW        float64 `json:"head_busbw_gb_per_s"`
	DeltaPct         float64 `json:"delta_pct"`
	BaseCallsPerStep float64 `json:"base_calls_per_step"`
	HeadCallsPerStep float64 `json:"head_calls_per_step"`
	// Note says why a side has no figure (analyze.NoSizes, ...).
	BaseNote string `json:"base_note,omitempty"`
	HeadNote string `json:"head_note,omitempty"`
}

// bwKey matches rows across runs.
type bwKey struct {
	phase  string
	bucket analyze.BucketID
	group  int
	bytes  int64
}

func keyOf(r *analyze.BandwidthRow) bwKey {
	b := r.Bytes
	if r.Grouped {
		b = r.BytesMin
	}
	return bwKey{r.Phase, r.Bucket, r.GroupSize, b}
}

// compareBandwidth pairs the bandwidth rows of the compared phase ("all":
// every phase), base's order first, then the head's rows left unpaired;
// nil when neither run has any.
func compareBandwidth(base, head *analyze.Report, phase string) []BandwidthDiff {
	b, h := phaseRows(base.Bandwidth, phase), phaseRows(head.Bandwidth, phase)
	toH := pairIndex(b, h)
	used := make([]bool, len(h))
	var out []BandwidthDiff
	for i := range b {
		var hr *analyze.BandwidthRow
		if j := toH[i]; j >= 0 {
			hr, used[j] = &h[j], true
		}
		out = append(out, pairRows(&b[i], hr))
	}
	for j := range h {
		if !used[j] {
			out = append(out, pairRows(nil, &h[j]))
		}
	}
	return out
}

// pairIndex returns, per base row, the index of its head row or -1: the
// row of the same phase, kind, group size and message size; else, when a
// phase, kind and group size is left with one unpaired row on each side
// and one of them has no recorded size (a CUDA-graph replay against an
// eager run), those two.
func pairIndex(b, h []analyze.BandwidthRow) []int {
	toH := make([]int, len(b))
	used := make([]bool, len(h))
	for i := range b {
		toH[i] = slices.IndexFunc(h, func(r analyze.BandwidthRow) bool { return keyOf(&r) == keyOf(&b[i]) })
		if toH[i] >= 0 {
			used[toH[i]] = true
		}
	}
	for i := range b {
		if toH[i] >= 0 {
			continue
		}
		var bs, hs []int
		for k := range b {
			if toH[k] < 0 && sameKind(&b[k], &b[i]) {
				bs = append(bs, k)
			}
		}
		for j := range h {
			if !used[j] && sameKind(&h[j], &b[i]) {
				hs = append(hs, j)
			}
		}
		if len(bs) == 1 && len(hs) == 1 && (b[i].Bytes == 0) != (h[hs[0]].Bytes == 0) {
			toH[i], used[hs[0]] = hs[0], true
		}
	}
	return toH
}

// sameKind says whether two rows are of one phase, kind and group size.
func sameKind(a, b *analyze.BandwidthRow) bool {
	return a.Phase == b.Phase && a.Bucket == b.Bucket && a.GroupSize == b.GroupSize
}

// phaseRows returns the rows of phase, every row for "all".
func phaseRows(bw *analyze.Bandwidth, phase string) []analyze.BandwidthRow {
	if bw == nil {
		return nil
	}
	var rows []analyze.BandwidthRow
	for _, r := range bw.Rows {
		if phase == phaseAll || r.Phase == phase {
			rows = append(rows, r)
		}
	}
	return rows
}

// pairRows compares a base and a head row; either may be nil, not both.
func pairRows(b, h *analyze.BandwidthRow) BandwidthDiff {
	ref := b
	d := BandwidthDiff{}
	switch {
	case b == nil:
		ref, d.Only = h, "head"
	case h == nil:
		d.Only = "base"
	}
	k := keyOf(ref)
	if k.bytes == 0 && h != nil {
		k.bytes = keyOf(h).bytes
	}
	d.Phase, d.Bucket, d.Label, d.GroupSize, d.Bytes = k.phase, k.bucket, ref.Label, k.group, k.bytes
	if b != nil {
		d.BaseBasis, d.BaseUSPerCall, d.BaseBusBW, d.BaseCallsPerStep, d.BaseNote = b.Basis, timePerCall(b), b.BusBW, b.CallsPerStep, b.Note
	}
	if h != nil {
		d.HeadBasis, d.HeadUSPerCall, d.HeadBusBW, d.HeadCallsPerStep, d.HeadNote = h.Basis, timePerCall(h), h.BusBW, h.CallsPerStep, h.Note
	}
	if d.BaseBusBW > 0 && d.HeadBusBW > 0 {
		d.DeltaPct = 100 * (d.HeadBusBW - d.BaseBusBW) / d.BaseBusBW
	}
	return d
}

// timePerCall is the time a row's bandwidth comes from (or would, for a
// row without sizes): transfer when aligned, else kernel time.
func timePerCall(r *analyze.BandwidthRow) float64 {
	if r.Instances > 0 {
		return r.TransferUSPerCall
	}
	return r.KernelUSPerCall
}
