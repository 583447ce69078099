package render

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"kinetoscope/analyze"
)

// rooflineBlocks lays out the roofline section of a report: the GPU's
// peaks (or why none is known), how the figures are made, one table row
// per kernel class and phase, what has no figure and why, and the decode
// step's speed of light.
func rooflineBlocks(r *analyze.Report) []block {
	rf := r.Roofline
	if rf == nil || len(rf.Rows) == 0 {
		return nil
	}
	lines := []string{gpuPeakText(rf), rooflineMethod}
	lines = append(lines, rf.Notes...)
	bs := []block{
		{Heading: "Roofline: GEMM and attention against the GPU's peaks", Level: 2},
		{Lines: lines},
		{Table: rooflineTable(rf)},
	}
	if gaps := unshapedLines(rf); len(gaps) > 0 {
		bs = append(bs, block{Lines: gaps, List: true})
	}
	return append(bs, speedOfLightBlocks(rf.SpeedOfLight)...)
}

// rooflineMethod says how the roofline's figures are made.
const rooflineMethod = "Work from each op's recorded input shapes (record_shapes), split over its kernels by their time: " +
	"GEMM 2·M·N·K FLOPs and A + B + C bytes at their dtypes (a quantised weight at its packed size: 4 bits a weight, plus scales and zeros); " +
	"attention 2·B·H·Sq·Sk·(D + Dv) FLOPs (causal: Sq·(Sq+1)/2 pairs) and Q + K + V + O bytes. " +
	"Rates are over the kernels with shapes only. Bound: the roof the work meets first (memory when its FLOPs per byte are below the ridge point, " +
	"the dtype's tensor peak over the memory bandwidth); % of peak is of that roof. At roof: the time at the bound's peak."

// gpuPeakText names the GPU's peaks and their source, or says none is
// known.
func gpuPeakText(rf *analyze.Roofline) string {
	p := rf.Peak
	if p == nil {
		return "GPU peak: none known (" + rf.PeakNote + "); no bound or share of peak is given."
	}
	keys := make([]string, 0, len(p.TFLOPS))
	for _, k := range analyze.PeakKeys() {
		if v, ok := p.TFLOPS[k]; ok {
			keys = append(keys, fmt.Sprintf("%s %g", k, v))
		}
	}
	s := fmt.Sprintf("GPU peak: %s, memory %g TB/s, dense tensor TFLOP/s %s (from %s", p.Name, p.HBMTBPerS, strings.Join(keys, ", "), p.Source)
	if p.Cite != "" {
		s += "; " + p.Cite
	}
	return s + ")."
}

// rooflineTable has one row per phase and kernel class.
func rooflineTable(rf *analyze.Roofline) *table {
	t := &table{
		Header: []string{"phase", "class", "kernels", "with shapes", "ms/step", "TFLOP/s", "TB/s", "FLOP/B", "dtype",
			"bound", "% of peak", "at roof ms/step"},
		Right: []bool{false, false, true, true, true, true, true, true, false, false, true, true},
	}
	for _, r := range rf.Rows {
		steps := float64(max(r.RankSteps, 1))
		tflops, tbps, ai, bound, share, roof := "-", "-", "-", "-", "-", "-"
		if r.ShapedUS > 0 {
			tflops, tbps, ai = sig3(r.TFLOPS, 2), sig3(r.TBPerS, 3), sig3(r.Intensity, 1)
		}
		if r.Bound != "" {
			bound, share, roof = r.Bound, pct(r.PeakShare), msFine(r.RoofUS/steps)
		}
		t.Rows = append(t.Rows, []string{r.Phase, r.Label, strconv.Itoa(r.Kernels), shapedText(r), msFine(r.KernelUS / steps),
			tflops, tbps, ai, orDash(r.Dtype), bound, share, roof})
	}
	return t
}

// shapedText is a row's kernels with shapes and their share of its time.
func shapedText(r analyze.RooflineRow) string {
	return fmt.Sprintf("%d (%s)", r.ShapedKernels, pct(ratioPct(r.ShapedUS, r.KernelUS)))
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// gapRemedies say, per reason a kernel has no figure, what records it.
var gapRemedies = map[string]string{
	analyze.GapGraph:     "graph replays record no ops; profile an eager run (vLLM enforce_eager, SGLang --disable-cuda-graph) with record_shapes=True",
	analyze.GapNoTrace:   "record with record_shapes=True",
	analyze.GapNoExtID:   "wrap the kernel's launch in a torch custom op (torch.library) so that the profiler records its shapes",
	analyze.GapOldFormat: "profile with PyTorch 2",
}

// RooflineNotes says, per row of the roofline, how many kernels took
// their shapes from a graph-capture trace or borrowed them from an eager
// step, how many have no figure, why, and what
// records them: the lines under the report's roofline table.
func RooflineNotes(rf *analyze.Roofline) []string {
	if rf == nil {
		return nil
	}
	return unshapedLines(rf)
}

// unshapedLines say, per row, how many kernels have no figure and why:
// "decode GEMM: 1536 of 1600 kernels, 96.0% of the class's time, have no
// figure: CUDA graph replay ...".
func unshapedLines(rf *analyze.Roofline) []string {
	var out []string
	for _, r := range rf.Rows {
		if r.CapturedKernels > 0 {
			out = append(out, fmt.Sprintf("%s %s: %d of %d kernels, replayed from CUDA graphs, take their shapes from the graph-capture trace (each the op of the launch at its place in the captured graph).",
				r.Phase, r.Label, r.CapturedKernels, r.Kernels))
		}
		if r.BorrowedKernels > 0 {
			out = append(out, fmt.Sprintf("%s %s: %d of %d kernels, replayed from CUDA graphs, take their shapes from an eager step of the same phase, tokens and kernel sequence.",
				r.Phase, r.Label, r.BorrowedKernels, r.Kernels))
		}
		for _, g := range r.Unshaped {
			s := fmt.Sprintf("%s %s: %d of %d kernels, %s of the class's time, have no figure: %s", r.Phase, r.Label,
				g.Kernels, r.Kernels, pct(ratioPct(g.US, r.KernelUS)), g.Reason)
			if fix := gapRemedies[g.Reason]; fix != "" {
				s += " (" + fix + ")"
			}
			out = append(out, s+".")
		}
	}
	return out
}

// speedOfLightBlocks lay out the decode step's speed of light beside the
// measured step.
func speedOfLightBlocks(s *analyze.SpeedOfLight) []block {
	if s == nil {
		return nil
	}
	t := &table{
		Header: []string{"part", "measured ms/step", "at its roof ms/step", "how"},
		Right:  []bool{false, true, true, false},
	}
	for _, p := range s.Parts {
		t.Rows = append(t.Rows, []string{p.Name, msFine(p.MeasuredUS), msFine(p.EstimateUS), p.Basis})
	}
	t.Rows = append(t.Rows, []string{"step", msFine(s.MeasuredKernelUS) + " kernel, " + msFine(s.MeasuredSpanUS) + " span",
		msFine(s.EstimateUS), "the parts back to back"})
	head := fmt.Sprintf("Speed of light of the %s step (an estimate): %s ms against %s ms measured (step span: GPU busy %s ms, idle %s ms, as the step-time account splits it; %s ms of kernel time), %s of the span.",
		s.Phase, msFine(s.EstimateUS), msFine(s.MeasuredSpanUS), msFine(s.MeasuredBusyUS), msFine(max(0, s.MeasuredSpanUS-s.MeasuredBusyUS)),
		msFine(s.MeasuredKernelUS), pct(ratioPct(s.EstimateUS, s.MeasuredSpanUS)))
	return []block{
		{Heading: "Speed of light: the " + s.Phase + " step at the GPU's roofs", Level: 3},
		{Lines: []string{head, "An estimate, not a measurement: it assumes " + s.Assumption + "."}},
		{Table: t},
	}
}

// rooflineHeader is the header of the "csv-roofline" format: one row per
// phase and kernel class over every rank, the GPU's peak on each row.
var rooflineHeader = []string{
	"phase", "bucket", "label", "rank_steps", "kernels", "kernel_us", "shaped_kernels", "shaped_us", "flops", "bytes",
	"tflops", "tb_per_s", "intensity", "dtype", "bound", "peak_share", "ridge", "roof_us",
	"unshaped_kernels", "unshaped_us", "unshaped_reasons", "peak_gpu", "peak_hbm_tb_per_s", "peak_tflops",
}

// WriteRooflineCSV writes one row per phase and kernel class of the
// roofline: achieved TFLOP/s and TB/s from the shapes, intensity, bound
// and share of the GPU's peak; a report without one has the header only.
func WriteRooflineCSV(w io.Writer, r *analyze.Report) error {
	if r == nil {
		return errNoReport
	}
	return writeCSV(w, rooflineHeader, func(emit func(...string)) {
		rf := r.Roofline
		if rf == nil {
			return
		}
		gpu, hbm, peak := "", "", ""
		if p := rf.Peak; p != nil {
			gpu, hbm = p.Name, num(p.HBMTBPerS)
		}
		for _, row := range rf.Rows {
			peak = ""
			if rf.Peak != nil && row.Dtype != "" {
				peak = num(rf.Peak.Rate(row.Dtype))
			}
			n, us, reasons := 0, 0.0, make([]string, 0, len(row.Unshaped))
			for _, g := range row.Unshaped {
				n += g.Kernels
				us += g.US
				reasons = append(reasons, fmt.Sprintf("%d: %s", g.Kernels, g.Reason))
			}
			sort.Strings(reasons)
			emit(row.Phase, string(row.Bucket), row.Label, strconv.Itoa(row.RankSteps), strconv.Itoa(row.Kernels),
				num(row.KernelUS), strconv.Itoa(row.ShapedKernels), num(row.ShapedUS),
				strconv.FormatFloat(row.FLOPs, 'f', 0, 64), strconv.FormatFloat(row.Bytes, 'f', 0, 64),
				num(row.TFLOPS), num(row.TBPerS), num(row.Intensity), row.Dtype, row.Bound, num(row.PeakShare),
				num(row.Ridge), num(row.RoofUS), strconv.Itoa(n), num(us), strings.Join(reasons, "; "), gpu, hbm, peak)
		}
	})
}
