package render

import (
	"bytes"
	"encoding/csv"
	"io"
	"path/filepath"
	"strings"
	"testing"

	json "github.com/goccy/go-json"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
	"kinetoscope/sampletraces"
)

func TestHeadlineText(t *testing.T) {
	tests := []struct {
		h    *analyze.Headline
		want string
	}{
		{&analyze.Headline{Bucket: analyze.AllReduce, Label: "AllReduce", ShareOfKernel: 51.5, USPerStep: 11170, CallsPerStep: 122, Steps: 32, Ranks: 2, Phase: "decode",
			SpanMeanUS: 21690, SpanP50US: 21500, BusyShare: 96.2},
			"Decode step 21.69 ms (p50 21.50 ms), GPU busy 96.2% of it; AllReduce leads decode kernel time: 51.5%, 11.17 ms/step, 122 calls/step (2 ranks, 32 decode steps)"},
		{&analyze.Headline{Bucket: analyze.GEMM, ShareOfKernel: 40, USPerStep: 500, CallsPerStep: 2.5, Steps: 1, Ranks: 1, Phase: "all", SpanMeanUS: 1250, SpanP50US: 1250, BusyShare: 2.5,
			Outlier: &analyze.StepOutlier{Rank: 0, Step: 0, SpanUS: 1250, BusyShare: 2.5, MedianSpanUS: 1250}},
			"Step 1.25 ms (p50 1.25 ms), GPU busy 2.5% of it; GEMM leads kernel time: 40.0%, 0.50 ms/step, 2.5 calls/step (1 rank, 1 step). Outlier: step 0 of rank 0 spans 1.25 ms, GPU busy 2.5% of it"},
		{&analyze.Headline{Bucket: analyze.AllReduce, Label: "AllReduce", ShareOfKernel: 74.9, USPerStep: 2550, CallsPerStep: 8, Steps: 32, Ranks: 2, Phase: "decode",
			SpanMeanUS: 7090, SpanP50US: 6940, BusyShare: 48,
			Comm: &analyze.HeadlineComm{TransferUSPerStep: 60, WaitUSPerStep: 2650, TransferShareNetOfWait: 7.7, WaitShare: 48.5, Straggler: 0}},
			"Decode step 7.09 ms (p50 6.94 ms), GPU busy 48.0% of it; AllReduce leads decode kernel time: 74.9%, 2.55 ms/step, 8 calls/step; aligned across ranks, communication is 0.06 ms/step transfer (7.7% of kernel time net of wait) and 2.65 ms/step wait (48.5% of kernel time), waiting mostly for rank 0 (2 ranks, 32 decode steps)"},
		{&analyze.Headline{Bucket: analyze.AllReduce, Label: "AllReduce", ShareOfKernel: 74.9, USPerStep: 2550, CallsPerStep: 8, Steps: 32, Ranks: 2, Phase: "decode",
			SpanMeanUS: 7090, SpanP50US: 6940, BusyShare: 48,
			PerRank: []analyze.HeadlineRank{{Rank: 0, BusyShare: 11.7, WaitShare: 9.6}, {Rank: 1, BusyShare: 84.4, WaitShare: 87.3}},
			Comm:    &analyze.HeadlineComm{TransferUSPerStep: 60, WaitUSPerStep: 2650, TransferShareNetOfWait: 7.7, WaitShare: 48.5, Straggler: 0}},
			"Decode step 7.09 ms (p50 6.94 ms), GPU busy 11.7% of it on rank 0, 84.4% on rank 1; AllReduce leads decode kernel time: 74.9%, 2.55 ms/step, 8 calls/step; aligned across ranks, communication is 0.06 ms/step transfer (7.7% of kernel time net of wait) and 2.65 ms/step wait; rank 1 spends 87.3% of its kernel time waiting, mostly for rank 0 (2 ranks, 32 decode steps)"},
		{&analyze.Headline{Bucket: analyze.Sampling, ShareOfKernel: 72.7, Steps: 10, Ranks: 2, Phase: "decode", Problem: "the trace has 1320 communication kernels but its decode steps have none", Fix: "use --step-regex"},
			"No headline: the steps look wrong (the trace has 1320 communication kernels but its decode steps have none), so any figure per step would be wrong too. To fix: use --step-regex."},
		{nil, "No headline: the trace has no kernels in any step."},
	}
	for _, tc := range tests {
		if got := HeadlineText(&analyze.Report{Headline: tc.h}); got != tc.want {
			t.Errorf("HeadlineText = %q, want %q", got, tc.want)
		}
	}
}

func TestWriteReportText(t *testing.T) {
	tests := []struct {
		name   string
		write  func(io.Writer, *analyze.Report) error
		ranks  int
		want   []string
		absent []string
	}{
		{"table 2 ranks", WriteReportText, 2, []string{
			"AllReduce leads decode kernel time: 53.3%, 11.25 ms/step, 122 calls/step (2 ranks, 32 decode steps)",
			"Ranks side by side",
			"Straggler: rank 1",
			"% kernel = share of decode kernel time",
			"transfer", "share of", "decode kernel time net of wait",
			"Marlin GEMM", "my_custom_kernel<float, 128>",
			"Launch delay (CPU launch to kernel start, eager launches): 1000 launches, p50 12.5 us, p99 80.0 us.",
			"Prefill: 1 step",
		}, []string{"single rank"}},
		{"table 1 rank", WriteReportText, 1, []string{"Single rank: transfer and wait cannot be told apart from one rank."}, []string{"Ranks side by side", "Straggler"}},
		{"markdown", WriteReportMarkdown, 2, []string{"# Kinetoscope report: fake/run", "| bucket | group | ms/step |", "|---|---|---:|", "my\\_custom\\_kernel&lt;float, 128>"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b, fakeReport(tc.ranks, 32, 61)); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(out, a) {
					t.Errorf("output has %q", a)
				}
			}
		})
	}
}

func TestWriteReportBucketFigures(t *testing.T) {
	r := fakeReport(1, 4, 10)
	var b bytes.Buffer
	if err := WriteReportText(&b, r); err != nil {
		t.Fatal(err)
	}
	// Every bucket row carries the phase's own figures.
	for id, s := range r.Ranks[0].Decode.Buckets {
		label := bucketInfo(r.Buckets, id).Label
		found := false
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, label+" ") && strings.Contains(line, msFine(s.USPerStep)) && strings.Contains(line, " "+count(s.CallsPerStep)+" ") && strings.Contains(line, pct(s.ShareOfKernel)) && strings.HasSuffix(line, pct(s.ShareOfSpan)) {
				found = true
			}
		}
		if !found {
			t.Errorf("no row for %s with %s ms/step and %s of span", label, msFine(s.USPerStep), pct(s.ShareOfSpan))
		}
	}
}

func TestWriteReportCSV(t *testing.T) {
	r := fakeReport(2, 3, 5)
	tests := []struct {
		format string
		write  func(io.Writer, *analyze.Report) error
		rows   int // data rows
		header []string
	}{
		{"csv", WriteStepsCSV, 2 * 4 * len(fakeDecode), stepsHeader},
		{"csv-summary", WriteSummaryCSV, 2 * 2 * len(fakeDecode), summaryHeader},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		if err := tc.write(&b, r); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if len(recs)-1 != tc.rows {
			t.Errorf("%s: %d data rows, want %d", tc.format, len(recs)-1, tc.rows)
		}
		if strings.Join(recs[0], ",") != strings.Join(tc.header, ",") {
			t.Errorf("%s: header %v", tc.format, recs[0])
		}
	}
}

func TestWriteReportJSONRoundTrip(t *testing.T) {
	r := fakeReport(2, 3, 5)
	var b bytes.Buffer
	if err := WriteReportJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back analyze.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Ranks[1].Decode.Buckets[analyze.AllReduce] != r.Ranks[1].Decode.Buckets[analyze.AllReduce] {
		t.Errorf("round trip changed allreduce: %+v", back.Ranks[1].Decode.Buckets[analyze.AllReduce])
	}
	if !strings.Contains(b.String(), "\n  \"source\": \"fake/run\"") {
		t.Errorf("not indented: %.80s", b.String())
	}
}

// TestWritersNil: every writer refuses nothing to write.
func TestWritersNil(t *testing.T) {
	for i, w := range []func(io.Writer, *analyze.Report) error{WriteReportText, WriteReportMarkdown,
		WriteReportJSON, WriteStepsCSV, WriteSummaryCSV, WriteBandwidthCSV, WriteLayersCSV, WriteSlotsCSV} {
		if err := w(io.Discard, nil); err == nil {
			t.Errorf("report writer %d: nil report, no error", i)
		}
	}
	for i, w := range []func(io.Writer, *diff.Diff) error{WriteDiffText, WriteDiffMarkdown, WriteDiffJSON} {
		if err := w(io.Discard, nil); err == nil {
			t.Errorf("diff writer %d: nil diff, no error", i)
		}
	}
}

// TestHeadlineBandwidth: when a collective leads, the headline cites its
// bus bandwidth at the size with the most time, against the link's peak.
func TestHeadlineBandwidth(t *testing.T) {
	r := &analyze.Report{
		Headline: &analyze.Headline{Bucket: analyze.AllReduce, Label: "AllReduce", ShareOfKernel: 68.5, USPerStep: 1860, CallsPerStep: 8,
			Steps: 32, Ranks: 2, Phase: "decode", SpanMeanUS: 6330, SpanP50US: 6030, BusyShare: 40},
		Bandwidth: &analyze.Bandwidth{Peak: &analyze.LinkPeak{Name: "PCIe Gen5 x16", GBPerS: 64, Source: "--link pcie5x16"},
			Rows: []analyze.BandwidthRow{
				{Phase: "decode", Bucket: analyze.AllReduce, Bytes: 32768, BytesMin: 32768, BytesMax: 32768, Basis: analyze.BasisTransfer, BusBW: 3.044, ShareOfPeak: 4.76, KernelUSPerStep: 1860},
				{Phase: "prefill", Bucket: analyze.AllReduce, Bytes: 4 << 20, BytesMin: 4 << 20, BytesMax: 4 << 20, Basis: analyze.BasisTransfer, BusBW: 25.1, ShareOfPeak: 39.2, KernelUSPerStep: 2170},
			}},
	}
	want := "Decode step 6.33 ms (p50 6.03 ms), GPU busy 40.0% of it; AllReduce leads decode kernel time: 68.5%, 1.86 ms/step, 8 calls/step; at 32 KiB it reaches 3.04 GB/s bus bandwidth, 4.8% of PCIe Gen5 x16 (2 ranks, 32 decode steps)"
	if got := HeadlineText(r); got != want {
		t.Errorf("HeadlineText = %q, want %q", got, want)
	}
}

// TestLayersCSV: csv-layers has a row per rank, phase, layer and bucket of
// the fold, csv-slots a row per slot, on the real MoE sample.
func TestLayersCSV(t *testing.T) {
	r := reports.Of(t, testkit.Real(t, "moe"))
	var layerRows, slotRows int
	for _, rk := range r.Ranks {
		for _, lf := range rk.Layers {
			slotRows += len(lf.Slots)
			for _, l := range lf.PerLayer {
				layerRows += len(l.Buckets)
			}
		}
	}
	for _, tc := range []struct {
		write  func(io.Writer, *analyze.Report) error
		header []string
		rows   int
	}{{WriteLayersCSV, layersHeader, layerRows}, {WriteSlotsCSV, slotsHeader, slotRows}} {
		var b bytes.Buffer
		if err := tc.write(&b, r); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if tc.rows == 0 || len(recs)-1 != tc.rows || strings.Join(recs[0], ",") != strings.Join(tc.header, ",") {
			t.Errorf("%v: %d rows, want %d; header %v", tc.header[3], len(recs)-1, tc.rows, recs[0])
		}
	}
}

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := Grouped(n); got != want {
			t.Errorf("Grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestHeadlineNoBusFactor: a collective without a bus bandwidth factor (a
// group of one rank) is not cited at "0.00 GB/s" in the headline.
func TestHeadlineNoBusFactor(t *testing.T) {
	r := &analyze.Report{
		Headline: &analyze.Headline{Bucket: analyze.AllReduce, Label: "AllReduce", ShareOfKernel: 50, USPerStep: 12420, CallsPerStep: 122,
			Steps: 111, Ranks: 1, Phase: "decode", SpanMeanUS: 25640, SpanP50US: 25640, BusyShare: 96.9},
		Bandwidth: &analyze.Bandwidth{Rows: []analyze.BandwidthRow{
			{Phase: "decode", Bucket: analyze.AllReduce, Bytes: 448 << 10, BytesMin: 448 << 10, BytesMax: 448 << 10, GroupSize: 1,
				Basis: analyze.BasisKernel, AlgBW: 0.2, BusFactor: 0, KernelUSPerStep: 12420, Note: "no bus bandwidth factor for this collective and group size"},
		}},
	}
	if got := HeadlineText(r); strings.Contains(got, "GB/s") || !strings.Contains(got, "AllReduce leads decode kernel time") {
		t.Errorf("HeadlineText = %q", got)
	}
}

// TestWriteReportJSONInParts checks that the report written with its steps
// encoded in parts side by side is the one encoded whole, byte for byte,
// for every real and public sample and parts of 1, 2 and 7 steps.
func TestWriteReportJSONInParts(t *testing.T) {
	var paths []string
	for _, v := range sampletraces.RealAll() {
		paths = append(paths, testkit.Real(t, v))
	}
	pub, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, pub...)
	for _, path := range paths {
		r := reports.Of(t, path)
		var whole bytes.Buffer
		if err := writeJSON(&whole, r); err != nil {
			t.Fatal(err)
		}
		for _, per := range []int{1, 2, 7} {
			var parts bytes.Buffer
			if err := writeReportJSON(&parts, r, per); err != nil {
				t.Fatalf("%s, %d steps a part: %v", path, per, err)
			}
			if !bytes.Equal(parts.Bytes(), whole.Bytes()) {
				t.Errorf("%s, %d steps a part: %d bytes differ from the whole encoding's %d", filepath.Base(path), per, parts.Len(), whole.Len())
			}
		}
	}
}
