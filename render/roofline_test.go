package render

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
)

// csv-roofline has one row per roofline row of the report, in its order,
// with the figures of the JSON report, on real traces with and without
// graph replays.
func TestRooflineCSV(t *testing.T) {
	for _, name := range []string{"bare_eager", "cudagraph", "moe"} {
		r := reports.Of(t, testkit.Real(t, name))
		if r.Roofline == nil || len(r.Roofline.Rows) == 0 {
			t.Fatalf("%s: no roofline rows", name)
		}
		var buf bytes.Buffer
		if err := WriteRooflineCSV(&buf, r); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(r.Roofline.Rows)+1 {
			t.Fatalf("%s: %d records, want a header and %d rows", name, len(recs), len(r.Roofline.Rows))
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		for i, row := range r.Roofline.Rows {
			rec := recs[i+1]
			get := func(h string) float64 {
				v, err := strconv.ParseFloat(rec[col[h]], 64)
				if err != nil {
					t.Fatalf("%s row %d %s: %v", name, i, h, err)
				}
				return v
			}
			unshaped := 0
			for _, g := range row.Unshaped {
				unshaped += g.Kernels
			}
			for _, c := range []struct {
				h    string
				want float64
			}{
				{"kernels", float64(row.Kernels)}, {"shaped_kernels", float64(row.ShapedKernels)}, {"flops", row.FLOPs},
				{"bytes", row.Bytes}, {"tb_per_s", row.TBPerS}, {"tflops", row.TFLOPS}, {"peak_share", row.PeakShare},
				{"unshaped_kernels", float64(unshaped)},
			} {
				if got := get(c.h); got < c.want*0.999-1e-3 || got > c.want*1.001+1e-3 {
					t.Errorf("%s row %d %s: %v, want %v", name, i, c.h, got, c.want)
				}
			}
			if rec[col["phase"]] != row.Phase || rec[col["bucket"]] != string(row.Bucket) || rec[col["bound"]] != row.Bound {
				t.Errorf("%s row %d: %v, want phase %s bucket %s bound %s", name, i, rec, row.Phase, row.Bucket, row.Bound)
			}
		}
	}
}

// The text report's roofline section names the GPU's peak, has a row per
// roofline row, says how many kernels have no figure and why, and sets the
// decode step's speed of light beside the measured span.
func TestRooflineText(t *testing.T) {
	r := reports.Of(t, testkit.Real(t, "cudagraph"))
	var buf bytes.Buffer
	if err := WriteReportText(&buf, r); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	sol := r.Roofline.SpeedOfLight
	for _, want := range []string{
		"Roofline: GEMM and attention against the GPU's peaks",
		"GPU peak: " + r.Roofline.Peak.Name,
		"decode GEMM: ",
		"have no figure: CUDA graph replay",
		"Speed of light of the decode step (an estimate): " + msFine(sol.EstimateUS) + " ms against " + msFine(sol.MeasuredSpanUS) + " ms measured (step span: GPU busy " + msFine(sol.MeasuredBusyUS),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if sol.EstimateUS >= sol.MeasuredSpanUS || sol.EstimateUS <= 0 {
		t.Errorf("speed of light %g us for a measured %g us step", sol.EstimateUS, sol.MeasuredSpanUS)
	}
}

// The roofline chart draws a labelled point per row with shapes and the
// GPU's roofs, lists the kernels without a figure under it, and has
// nothing to draw for a report without roofline rows.
func TestRooflineChart(t *testing.T) {
	r := reports.Of(t, testkit.Real(t, "cudagraph"))
	svg, err := Roofline(r, SVG)
	if err != nil {
		t.Fatal(err)
	}
	text := testkit.MustSVGText(t, svg)
	points := 0
	for _, row := range r.Roofline.Rows {
		label := row.Label + " " + row.Phase + ": " + sig3(row.TFLOPS, 2) + " TFLOP/s"
		if row.ShapedUS > 0 {
			points++
			if !strings.Contains(text, label) {
				t.Errorf("chart lacks the point label %q", label)
			}
		} else if strings.Contains(text, label) {
			t.Errorf("chart labels %q, a row without shapes", label)
		}
	}
	for _, want := range []string{"bf16 tensor peak 989.4 TFLOP/s", "memory 4.8 TB/s", "have no figure: CUDA graph replay"} {
		if !strings.Contains(text, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if points == 0 {
		t.Fatal("no row with shapes to draw")
	}
	empty := *r
	empty.Roofline = nil
	if _, err := Roofline(&empty, SVG); !errors.Is(err, ErrNoData) {
		t.Errorf("a report without a roofline: %v, want ErrNoData", err)
	}
}
