package render

import (
	"fmt"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// diffBandwidthBlocks compares collective bus bandwidth per phase, kind
// and message size; nothing when neither run has any.
func diffBandwidthBlocks(d *diff.Diff) []block {
	if len(d.Bandwidth) == 0 {
		return nil
	}
	t := &table{
		Header: []string{"phase", "collective", "size", "ranks", "base busbw GB/s", "head busbw GB/s", "change",
			"base µs/call", "head µs/call", "base time", "head time"},
		Right: []bool{false, false, true, true, true, true, true, true, true, false, false},
	}
	for _, b := range d.Bandwidth {
		size := "-"
		if b.Bytes > 0 {
			size = analyze.FormatBytes(b.Bytes)
		}
		change := "-"
		if b.DeltaPct != 0 {
			change = fmt.Sprintf("%+.1f%%", b.DeltaPct)
		}
		t.Rows = append(t.Rows, []string{b.Phase, b.Label, size, groupText(b.GroupSize),
			diffGBps(b.BaseBusBW, b.Only == "head"), diffGBps(b.HeadBusBW, b.Only == "base"), change,
			diffUS(b.BaseUSPerCall, b.Only == "head"), diffUS(b.HeadUSPerCall, b.Only == "base"),
			diffBasis(b.BaseBasis, b.BaseNote, b.Only == "head"), diffBasis(b.HeadBasis, b.HeadNote, b.Only == "base")})
	}
	return []block{
		{Heading: "Collective bandwidth per message size", Level: 2},
		{Lines: []string{"Bus bandwidth as nccl-tests computes it, over all ranks of each run; time per call: transfer where the ranks were aligned, else kernel time (includes waiting)."}},
		{Table: t},
	}
}

// diffGBps is a bus bandwidth, "-" without a figure or on the missing side.
func diffGBps(v float64, missing bool) string {
	if missing || v == 0 {
		return "-"
	}
	return gbps(v)
}

// diffUS is a time per call, "-" on the missing side.
func diffUS(v float64, missing bool) string {
	if missing {
		return "-"
	}
	return usStr(v)
}

// diffBasis is a side's time basis or why it has no figure.
func diffBasis(basis, note string, missing bool) string {
	switch {
	case missing:
		return "not in this run"
	case note != "":
		return note
	case basis == analyze.BasisTransfer:
		return "transfer"
	}
	return "kernel, includes waiting"
}
