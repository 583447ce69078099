package render

import (
	"fmt"
	"strconv"

	"kinetoscope/analyze"
)

// bandwidthBlocks lays out the collective bandwidth section of a report:
// the link peak used (or why none is known), how the figures are made,
// and one table row per phase, collective kind and message size.
func bandwidthBlocks(r *analyze.Report) []block {
	b := r.Bandwidth
	if b == nil || len(b.Rows) == 0 {
		return nil
	}
	lines := []string{peakText(b), bandwidthMethod}
	lines = append(lines, b.Notes...)
	return []block{
		{Heading: "Collective bandwidth per message size", Level: 2},
		{Lines: lines},
		{Table: bandwidthTable(b)},
	}
}

// bandwidthMethod says how the figures of the bandwidth table are made.
const bandwidthMethod = "algbw = bytes / time; busbw = algbw x nccl-tests' factor for the group of n ranks " +
	"(AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; Broadcast, Reduce, SendRecv 1), " +
	"comparable to the link's peak per GPU and direction. Size: the whole buffer as nccl-tests counts it (AllGather: the gathered output). " +
	"Time: transfer (last rank's arrival to first end) where the ranks were aligned; kernel time otherwise, which includes waiting."

// peakText names the link peak and its source, or says none is known.
func peakText(b *analyze.Bandwidth) string {
	p := b.Peak
	if p == nil {
		return "Link peak: none known (" + b.PeakNote + "); no share of peak is given."
	}
	s := fmt.Sprintf("Link peak: %s, %g GB/s per GPU and direction (from %s)", p.Name, p.GBPerS, p.Source)
	if b.PeakNote != "" {
		s += "; " + b.PeakNote
	}
	return s + "."
}

// bandwidthTable has one row per phase, collective kind and size.
func bandwidthTable(b *analyze.Bandwidth) *table {
	t := &table{
		Header: []string{"phase", "collective", "size", "elements", "ranks", "calls/step", "kernel µs/call",
			"transfer µs/call", "ms/step", "wait ms/step", "algbw GB/s", "busbw GB/s", "% of peak", "time"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, true, true, true, false},
	}
	for _, r := range b.Rows {
		transfer, wait := "-", "-"
		if r.Instances > 0 {
			transfer, wait = usStr(r.TransferUSPerCall), msFine(r.WaitUSPerStep)
		}
		alg, bus, share := "-", "-", "-"
		if r.Basis != "" {
			alg = gbps(r.AlgBW)
		}
		if r.BusBW > 0 {
			bus = gbps(r.BusBW)
			if b.Peak != nil {
				share = pct(r.ShareOfPeak)
			}
		}
		t.Rows = append(t.Rows, []string{r.Phase, r.Label, sizeText(r), elementsText(r), groupText(r.GroupSize),
			count(r.CallsPerStep), usStr(r.KernelUSPerCall), transfer, msFine(r.KernelUSPerStep), wait, alg, bus, share, basisText(r)})
	}
	return t
}

// sizeText is a row's message size: exact, a range when grouped, "-"
// when unknown.
func sizeText(r analyze.BandwidthRow) string {
	switch {
	case r.Bytes == 0:
		return "-"
	case r.Grouped && r.BytesMin != r.BytesMax:
		return analyze.FormatBytes(r.BytesMin) + "-" + analyze.FormatBytes(r.BytesMax)
	}
	return analyze.FormatBytes(r.Bytes)
}

// elementsText is the element count and dtype behind the size.
func elementsText(r analyze.BandwidthRow) string {
	if r.Elements == 0 {
		return r.Dtype
	}
	return thousands(r.Elements) + " " + r.Dtype
}

// groupText is a group size, "?" when unknown.
func groupText(n int) string {
	if n <= 0 {
		return "?"
	}
	return strconv.Itoa(n)
}

// basisText says what time the row's bandwidth comes from, or why it has
// none.
func basisText(r analyze.BandwidthRow) string {
	switch {
	case r.Note != "":
		return r.Note
	case r.Basis == analyze.BasisTransfer:
		return "transfer"
	}
	return "kernel, includes waiting"
}

// gbps formats a bandwidth in GB/s with three significant digits, two
// decimals at most: 412, 41.2, 4.12, 0.41.
func gbps(v float64) string { return sig3(v, 2) }

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
