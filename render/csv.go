package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"kinetoscope/analyze"
)

// stepsHeader is the header of the "csv" format: one row per rank, step
// and bucket, with the step's totals repeated on each of its rows so that
// every row stands alone (long format, ready for a data frame).
var stepsHeader = []string{
	"rank", "file", "step", "step_name", "phase", "step_start_us", "step_kernel_us",
	"step_busy_us", "step_span_us", "bucket", "group", "us", "count", "share_of_step_kernel",
}

// summaryHeader is the header of the "csv-summary" format: one row per rank,
// phase (decode, prefill) and bucket.
var summaryHeader = []string{
	"rank", "file", "phase", "steps", "bucket", "group", "us_per_step", "calls_per_step",
	"share_of_kernel", "share_of_span", "phase_kernel_us_per_step", "phase_span_mean_us",
}

// bandwidthHeader is the header of the "csv-bandwidth" format: one row per
// phase, collective kind and message size over every rank, as the
// bandwidth table shows them (sizes as nccl-tests counts them; busbw with
// nccl-tests' factor; the link's peak repeated on each row).
var bandwidthHeader = []string{
	"phase", "bucket", "collective", "dtype", "group_size", "bytes", "bytes_min", "bytes_max", "grouped",
	"calls", "ranks", "calls_per_step", "kernel_us_per_call", "transfer_us_per_call", "kernel_us_per_step",
	"transfer_us_per_step", "wait_us_per_step", "basis", "algbw_gb_per_s", "bus_factor", "busbw_gb_per_s",
	"share_of_peak", "peak_link", "peak_gb_per_s", "note",
}

// writeCSV writes the header and the rows that rows produces, one call of
// emit a row.
func writeCSV(w io.Writer, header []string, rows func(emit func(...string))) error {
	cw := csv.NewWriter(w)
	cw.Write(header)
	rows(func(cells ...string) { cw.Write(cells) })
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// writeStepsCSV writes one row per rank x step x bucket.
func writeStepsCSV(w io.Writer, r *analyze.Report) error {
	return writeCSV(w, stepsHeader, func(emit func(...string)) {
		for i := range r.Ranks {
			rk := &r.Ranks[i]
			for _, s := range rk.Steps {
				for _, id := range bucketOrder(r.Buckets, s.Buckets) {
					b := s.Buckets[id]
					emit(rankID(rk.Rank), rk.File, strconv.Itoa(s.Index), s.Name, s.Phase, num(s.StartUS), num(s.KernelUS),
						num(s.BusyUS), num(s.SpanUS), string(id), string(bucketInfo(r.Buckets, id).Group),
						num(b.US), strconv.Itoa(b.Count), num(ratioPct(b.US, s.KernelUS)))
				}
			}
		}
	})
}

// writeSummaryCSV writes one row per rank x phase x bucket.
func writeSummaryCSV(w io.Writer, r *analyze.Report) error {
	return writeCSV(w, summaryHeader, func(emit func(...string)) {
		for i := range r.Ranks {
			rk := &r.Ranks[i]
			for _, pv := range rankPhases(rk) {
				p := pv.Phase
				for _, id := range bucketOrder(r.Buckets, p.Buckets) {
					b := p.Buckets[id]
					emit(rankID(rk.Rank), rk.File, pv.Name, strconv.Itoa(p.Steps), string(id), string(bucketInfo(r.Buckets, id).Group),
						num(b.USPerStep), num(b.CallsPerStep), num(b.ShareOfKernel), num(b.ShareOfSpan),
						num(p.KernelPerStepUS), num(p.SpanMeanUS))
				}
			}
		}
	})
}

// rankPhases returns the rank's decode, prefill and mixed phases that have
// steps, or every step as phase "all" when there are none.
func rankPhases(rk *analyze.Rank) []phaseView {
	var out []phaseView
	for _, name := range shownPhases {
		if p, ok := phaseNamed(rk, name); ok {
			out = append(out, phaseView{name, p})
		}
	}
	if len(out) == 0 {
		out = append(out, rankPhase(rk))
	}
	return out
}

// bucketOrder returns the keys of m in the report's bucket display order,
// unknown ids last in name order.
func bucketOrder[V any](buckets []analyze.Bucket, m map[analyze.BucketID]V) []analyze.BucketID {
	pos := map[analyze.BucketID]int{}
	for i, b := range buckets {
		pos[b.ID] = i
	}
	for i, b := range analyze.Buckets() {
		if _, ok := pos[b.ID]; !ok {
			pos[b.ID] = len(buckets) + i
		}
	}
	ids := make([]analyze.BucketID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		pi, oki := pos[ids[i]]
		pj, okj := pos[ids[j]]
		if oki != okj {
			return oki
		}
		if pi != pj {
			return pi < pj
		}
		return ids[i] < ids[j]
	})
	return ids
}

// num formats a float for CSV: shortest exact form, three decimals at most.
func num(v float64) string {
	return strconv.FormatFloat(roundTo(v, 3), 'f', -1, 64)
}

// roundTo rounds v to d decimals.
func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// writeBandwidthCSV writes one row per bandwidth row of the report; a
// report without collectives has the header only.
func writeBandwidthCSV(w io.Writer, r *analyze.Report) error {
	return writeCSV(w, bandwidthHeader, func(emit func(...string)) {
		b := r.Bandwidth
		if b == nil {
			return
		}
		link, peak := "", ""
		if b.Peak != nil {
			link, peak = b.Peak.Name, num(b.Peak.GBPerS)
		}
		for _, row := range b.Rows {
			emit(row.Phase, string(row.Bucket), row.Collective, row.Dtype, strconv.Itoa(row.GroupSize),
				strconv.FormatInt(row.Bytes, 10), strconv.FormatInt(row.BytesMin, 10), strconv.FormatInt(row.BytesMax, 10),
				strconv.FormatBool(row.Grouped), strconv.Itoa(row.Calls), strconv.Itoa(row.Ranks), num(row.CallsPerStep),
				num(row.KernelUSPerCall), num(row.TransferUSPerCall), num(row.KernelUSPerStep), num(row.TransferUSPerStep),
				num(row.WaitUSPerStep), row.Basis, num(row.AlgBW), num(row.BusFactor), num(row.BusBW), num(row.ShareOfPeak),
				link, peak, row.Note)
		}
	})
}

// layersHeader is the header of the "csv-layers" format: one row per rank,
// phase, layer and bucket of the fold into layers (Rank.Layers), the
// layer's figures repeated on each of its rows.
var layersHeader = []string{
	"rank", "file", "phase", "layer", "irregular", "layer_mean_us", "layer_p50_us", "layer_p90_us",
	"layer_kernel_us", "layer_kernels", "bucket", "us",
}

// slotsHeader is the header of the "csv-slots" format: one row per rank,
// phase and position in the repeated layer.
var slotsHeader = []string{
	"rank", "file", "phase", "slot", "label", "bucket", "module", "kernel", "grid", "block", "count", "mean_us", "p50_us", "p90_us",
	"shape",
}

// writeLayersCSV writes one row per rank x phase x layer x bucket.
func writeLayersCSV(w io.Writer, r *analyze.Report) error {
	return writeCSV(w, layersHeader, func(emit func(...string)) {
		for i := range r.Ranks {
			rk := &r.Ranks[i]
			for _, lf := range rk.Layers {
				for _, l := range lf.PerLayer {
					for _, id := range bucketOrder(r.Buckets, l.Buckets) {
						emit(rankID(rk.Rank), rk.File, lf.Phase, strconv.Itoa(l.Index), strconv.FormatBool(l.Irregular),
							num(l.MeanUS), num(l.P50US), num(l.P90US), num(l.KernelUS), strconv.Itoa(l.Kernels),
							string(id), num(l.Buckets[id]))
					}
				}
			}
		}
	})
}

// writeSlotsCSV writes one row per rank x phase x slot of the layer.
func writeSlotsCSV(w io.Writer, r *analyze.Report) error {
	return writeCSV(w, slotsHeader, func(emit func(...string)) {
		for i := range r.Ranks {
			rk := &r.Ranks[i]
			for _, lf := range rk.Layers {
				for _, s := range lf.Slots {
					emit(rankID(rk.Rank), rk.File, lf.Phase, strconv.Itoa(s.Index), s.Label, string(s.Bucket), s.Module, s.Name,
						dims(s.Grid), dims(s.Block), strconv.Itoa(s.Count), num(s.MeanUS), num(s.P50US), num(s.P90US), s.Shape)
				}
			}
		}
	})
}
