package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"kinetoscope/analyze/crossrank"
)

// Bandwidth is the achieved bandwidth of the collectives in the steps, per
// phase, collective kind and message size, in nccl-tests' terms: algorithm
// bandwidth (bytes / time) and bus bandwidth (algorithm bandwidth times a
// factor of the kind and the group size, comparable to the link's peak
// whatever the number of ranks).
type Bandwidth struct {
	// Peak is the link's peak bandwidth; nil when none is known, and then
	// PeakNote says why.
	Peak *LinkPeak `json:"peak,omitempty"`
	// PeakNote says what the peak assumes that the trace cannot tell, or
	// why no peak is known.
	PeakNote string `json:"peak_note,omitempty"`
	// Rows are in phase order (prefill, decode, mixed, unknown), then
	// bucket display order, then message size; rows without sizes last.
	Rows []BandwidthRow `json:"rows"`
	// Notes are findings about the figures as a whole (a bandwidth above
	// the peak, sizes grouped).
	Notes []string `json:"notes,omitempty"`
}

// The time bases of BandwidthRow.Basis.
const (
	// BasisTransfer: the time all ranks were inside the collective, from
	// the last arrival to the first end (collectives aligned across
	// ranks): the link's own figure.
	BasisTransfer = "transfer"
	// BasisKernel: the kernel duration, which includes waiting for the
	// late ranks (collectives not aligned).
	BasisKernel = "kernel"
)

// NoSizes is BandwidthRow.Note for collectives whose message size the
// trace does not record (vLLM's pynccl kernels without args, CUDA-graph
// replays without a record_param_comms op).
const NoSizes = "no message sizes recorded"

// BandwidthRow is one collective kind and message size in one phase,
// over every rank. Per-call times are means; per-step figures are means
// over the steps of the phase of the ranks that ran the collective.
type BandwidthRow struct {
	Phase      string   `json:"phase"`
	Bucket     BucketID `json:"bucket"`
	Label      string   `json:"label"`                // "AllReduce"
	Collective string   `json:"collective,omitempty"` // the trace's name: allreduce, _allgather_base
	Dtype      string   `json:"dtype,omitempty"`      // "BFloat16"; "mixed" when grouped over several
	GroupSize  int      `json:"group_size"`           // ranks in the process group, 0 when unknown
	// Bytes is the message size of one call as nccl-tests counts it: the
	// larger of the input and output element counts times the element
	// size, that is the whole buffer (AllReduce, Broadcast, Reduce,
	// SendRecv: the message; AllGather: the gathered output, n times the
	// input; ReduceScatter: the input, n times the output; AllToAll: the
	// buffer each rank sends). 0 when no size is recorded. For grouped
	// sizes it is the mean over the calls, within [BytesMin, BytesMax].
	Bytes    int64 `json:"bytes"`
	BytesMin int64 `json:"bytes_min"`
	BytesMax int64 `json:"bytes_max"`
	// Elements is the element count behind Bytes, for exact sizes.
	Elements int64 `json:"elements,omitempty"`
	// Grouped says the row joins several sizes (a phase with many).
	Grouped bool `json:"grouped,omitempty"`
	// Calls counts the GPU events over all ranks; Ranks the ranks that
	// ran them and Steps the phase's steps of those ranks, summed.
	Calls        int     `json:"calls"`
	Ranks        int     `json:"ranks"`
	Steps        int     `json:"steps"`
	CallsPerStep float64 `json:"calls_per_step"` // per rank
	// Instances counts the calls matched across ranks (one per
	// collective, not per rank).
	Instances         int     `json:"instances"`
	KernelUSPerCall   float64 `json:"kernel_us_per_call"`
	TransferUSPerCall float64 `json:"transfer_us_per_call"` // 0 unless aligned
	KernelUSPerStep   float64 `json:"kernel_us_per_step"`
	TransferUSPerStep float64 `json:"transfer_us_per_step"`
	WaitUSPerStep     float64 `json:"wait_us_per_step"`
	// Basis is the time the bandwidth is computed from: BasisTransfer or
	// BasisKernel (includes waiting); "" when there is no figure.
	Basis     string  `json:"basis,omitempty"`
	AlgBW     float64 `json:"algbw_gb_per_s"` // GB/s, 10^9 bytes a second
	BusFactor float64 `json:"bus_factor"`     // nccl-tests' factor for the kind and group size
	BusBW     float64 `json:"busbw_gb_per_s"`
	// ShareOfPeak is BusBW as a percent of Bandwidth.Peak; 0 without one.
	ShareOfPeak float64 `json:"share_of_peak"`
	// Note says why a figure is missing: NoSizes, or no bus factor.
	Note string `json:"note,omitempty"`
}

// Lead returns the row of the given phase and bucket with the most kernel
// time per step among those with a bandwidth figure, or nil: the figure a
// headline cites when that bucket leads.
func (b *Bandwidth) Lead(phase string, bucket BucketID) *BandwidthRow {
	if b == nil {
		return nil
	}
	var best *BandwidthRow
	for i := range b.Rows {
		r := &b.Rows[i]
		if r.Phase == phase && r.Bucket == bucket && r.Basis != "" && (best == nil || r.KernelUSPerStep > best.KernelUSPerStep) {
			best = r
		}
	}
	return best
}

// maxExactSizes is the most distinct message sizes a phase's collective
// kind is listed with one row each; with more, sizes are grouped into
// power-of-two ranges.
const maxExactSizes = 12

// collectiveBandwidth measures the bandwidth of the communication kernels
// in the steps of every rank. a is the cross-rank alignment (nil when
// there is none); link the --link peak (nil when not given).
func collectiveBandwidth(r *Report, passes []*rankPass, a *crossrank.Alignment, link *LinkPeak) *Bandwidth {
	accs := map[bwKey]*bwAcc{}
	for i, p := range passes {
		var rc *crossrank.RankComm
		if a != nil && a.Matched > 0 && i < len(a.Ranks) {
			rc = a.Ranks[i]
		}
		addRankBandwidth(accs, &r.Ranks[i], i, p, rc)
	}
	if len(accs) == 0 {
		return nil
	}
	b := &Bandwidth{}
	groups, _ := groupSizes(accs)
	for _, acc := range groups {
		b.Rows = append(b.Rows, acc.row(r.Ranks))
	}
	sortRows(b.Rows)
	b.holdAgainst(link, r.Ranks)
	return b
}

// holdAgainst sets what depends on the link: the peak (link, else the GPU
// name's, see choosePeak) and its note, each row's share of it, and the
// notes.
func (b *Bandwidth) holdAgainst(link *LinkPeak, ranks []Rank) {
	b.Peak, b.PeakNote = choosePeak(link, ranks)
	for i := range b.Rows {
		r := &b.Rows[i]
		r.ShareOfPeak = 0
		if b.Peak != nil {
			r.ShareOfPeak = 100 * r.BusBW / b.Peak.GBPerS
		}
	}
	b.Notes = bandwidthNotes(b)
}

// WithLink returns r with its collective bandwidth held against the link
// that link names (an Options.Link value; "" for the GPU name's), as
// Analyze with that option makes it: the same report otherwise. r is not
// changed; without bandwidth figures it is returned as it is.
func WithLink(r *Report, link string) (*Report, error) {
	peak, err := ParseLink(link)
	if err != nil || r.Bandwidth == nil {
		return r, err
	}
	b := *r.Bandwidth
	b.Rows = slices.Clone(b.Rows)
	b.holdAgainst(peak, r.Ranks)
	out := *r
	out.Bandwidth = &b
	out.WhatIf = whatIfs(&out) // the link-peak estimate reads the peak
	if r.Roofline != nil {     // so does the speed of light's collectives part
		rf := *r.Roofline
		rf.SpeedOfLight = speedOfLight(&out, &rf)
		out.Roofline = &rf
	}
	return &out, nil
}

// bandwidthNotes says which figures read against the peak need care:
// the phases' collectives whose sizes were grouped (their rows say so),
// and a bus bandwidth above the peak.
func bandwidthNotes(b *Bandwidth) []string {
	var grouped []string
	for _, r := range b.Rows {
		if g := r.Phase + " " + r.Label; r.Grouped && !slices.Contains(grouped, g) {
			grouped = append(grouped, g)
		}
	}
	slices.Sort(grouped)
	var notes []string
	for _, g := range grouped {
		notes = append(notes, fmt.Sprintf("%s: more than %d message sizes, grouped into power-of-two ranges", g, maxExactSizes))
	}
	if b.Peak == nil {
		return notes
	}
	for _, r := range b.Rows {
		if r.Basis == BasisTransfer && r.BusBW > 1.05*b.Peak.GBPerS {
			notes = append(notes, fmt.Sprintf("%s %s %s reaches %.1f GB/s bus bandwidth, above the %s peak of %.0f GB/s: the link is faster than assumed",
				r.Phase, r.Label, FormatBytes(r.Bytes), r.BusBW, b.Peak.Name, b.Peak.GBPerS))
			break
		}
	}
	return notes
}

// row turns an accumulator into a row (its share of the peak is set by
// holdAgainst).
func (a *bwAcc) row(ranks []Rank) BandwidthRow {
	k := a.key
	row := BandwidthRow{Phase: k.phase, Bucket: k.bucket, Label: bucketLabel(k.bucket), Collective: k.coll,
		Dtype: a.dtype, GroupSize: k.group, BytesMin: a.bytesMin, BytesMax: a.bytesMax,
		Grouped: a.grouped, Calls: a.calls, Ranks: len(a.ranks), Instances: len(a.inst)}
	for ri := range a.ranks {
		row.Steps += phaseSteps(&ranks[ri], k.phase)
	}
	if !a.grouped {
		row.Elements = k.elems
	}
	if a.calls > 0 {
		row.Bytes = a.callBytes / int64(a.calls)
		row.KernelUSPerCall = us(a.kernelNS) / float64(a.calls)
	}
	if n := len(a.inst); n > 0 {
		row.TransferUSPerCall = us(a.instNS) / float64(n)
	}
	if row.Steps > 0 {
		st := float64(row.Steps)
		row.CallsPerStep = float64(a.calls) / st
		row.KernelUSPerStep, row.TransferUSPerStep, row.WaitUSPerStep = us(a.kernelNS)/st, us(a.transferNS)/st, us(a.waitNS)/st
	}
	a.figures(&row)
	return row
}

// figures sets the row's bandwidths: from the transfer time of the
// instances matched across ranks when there are any, else from kernel
// time.
func (a *bwAcc) figures(row *BandwidthRow) {
	if a.key.bytes == 0 {
		row.Note = NoSizes
		if a.key.elems > 0 {
			row.Note = fmt.Sprintf("element size of dtype %q unknown", a.key.dtype)
		}
		return
	}
	bytes, ns, basis := a.instBytes, a.instNS, BasisTransfer
	if len(a.inst) == 0 {
		bytes, ns, basis = a.callBytes, a.kernelNS, BasisKernel
	}
	if ns <= 0 {
		row.Note = "no time measured"
		return
	}
	row.Basis = basis
	row.AlgBW = float64(bytes) / float64(ns) // bytes per ns is GB/s
	row.BusFactor = busFactor(row.Bucket, row.Collective, row.GroupSize)
	if row.BusFactor == 0 {
		row.Note = "no bus bandwidth factor for this collective and group size"
		return
	}
	row.BusBW = row.AlgBW * row.BusFactor
}

// busFactor is nccl-tests' bus bandwidth factor (its doc/PERFORMANCE.md)
// of a collective over n ranks: AllReduce 2(n-1)/n; AllGather,
// ReduceScatter and AllToAll (n-1)/n; Broadcast, Reduce and SendRecv 1.
// 0 when none applies (a group of one, a barrier, an unknown collective).
func busFactor(b BucketID, coll string, n int) float64 {
	if n < 2 {
		return 0
	}
	f := float64(n)
	switch b {
	case AllReduce:
		return 2 * (f - 1) / f
	case AllGather, ReduceScatter, AllToAll:
		return (f - 1) / f
	case Broadcast, SendRecv:
		return 1
	}
	if c := strings.ToLower(coll); c == "reduce" || c == "_reduce_oop" {
		return 1
	}
	return 0
}

// phaseSteps returns the number of steps of phase on rk.
func phaseSteps(rk *Rank, phase string) int {
	switch phase {
	case PhaseDecode:
		return rk.Decode.Steps
	case PhasePrefill:
		if rk.Prefill != nil {
			return rk.Prefill.Steps
		}
	case PhaseMixed:
		if rk.Mixed != nil {
			return rk.Mixed.Steps
		}
	default:
		n := 0
		for i := range rk.Steps {
			if rk.Steps[i].Phase == phase {
				n++
			}
		}
		return n
	}
	return 0
}

// bucketLabel returns the display label of a bucket id.
func bucketLabel(id BucketID) string {
	if b, ok := BucketByID(id); ok {
		return b.Label
	}
	return string(id)
}

// phaseRank orders the phases of the rows.
func phaseRank(phase string) int {
	switch phase {
	case PhasePrefill:
		return 0
	case PhaseDecode:
		return 1
	case PhaseMixed:
		return 2
	}
	return 3
}

// bucketRank orders buckets as Buckets does.
func bucketRank(id BucketID) int {
	return slices.IndexFunc(bucketTable, func(b Bucket) bool { return b.ID == id })
}

// sortRows orders rows by phase, bucket, size (no size last), group size.
func sortRows(rows []BandwidthRow) {
	slices.SortStableFunc(rows, func(a, b BandwidthRow) int {
		return cmp.Or(
			cmp.Compare(phaseRank(a.Phase), phaseRank(b.Phase)),
			cmp.Compare(a.Phase, b.Phase),
			cmp.Compare(bucketRank(a.Bucket), bucketRank(b.Bucket)),
			cmp.Compare(noSize(a), noSize(b)),
			cmp.Compare(a.BytesMin, b.BytesMin),
			cmp.Compare(a.GroupSize, b.GroupSize),
			cmp.Compare(a.Collective, b.Collective),
			cmp.Compare(a.Dtype, b.Dtype),
		)
	})
}

// noSize is 1 for a row without a message size, so that it sorts last.
func noSize(r BandwidthRow) int {
	if r.Bytes == 0 {
		return 1
	}
	return 0
}

// FormatBytes writes a message size in binary units: "32 KiB", "4 MiB",
// "1.5 MiB", "501 KiB", "640 B".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	switch {
	case u == 0 || v >= 100 || v == float64(int64(v)):
		return fmt.Sprintf("%.0f %s", v, units[u])
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, units[u])
	}
	return fmt.Sprintf("%.2f %s", v, units[u])
}
