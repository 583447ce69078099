package render

import (
	"bytes"
	"fmt"
	"image/png"
	"io"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
	"kinetoscope/sampletraces/synth"
)

// analyzeRun ingests and analyses a run once per test binary.
func analyzeRun(t *testing.T, path string) *analyze.Report {
	t.Helper()
	return reports.Of(t, path)
}

// synth8 writes and analyses an 8-rank synthetic run.
func synth8(t *testing.T) *analyze.Report {
	cfg := synth.DefaultConfig()
	cfg.Ranks, cfg.Layers, cfg.DecodeSteps, cfg.PythonFunctions, cfg.Gzip = 8, 3, 3, 0, false
	dir := t.TempDir()
	if _, err := synth.Generate(dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	return analyzeRun(t, dir)
}

// rowOf returns the report's bandwidth row of a phase, kind and size.
func rowOf(t *testing.T, r *analyze.Report, phase string, b analyze.BucketID, bytes int64) analyze.BandwidthRow {
	t.Helper()
	for _, row := range r.Bandwidth.Rows {
		if row.Phase == phase && row.Bucket == b && row.Bytes == bytes {
			return row
		}
	}
	t.Fatalf("no %s %s %d B row in %+v", phase, b, bytes, r.Bandwidth.Rows)
	return analyze.BandwidthRow{}
}

// TestBandwidthTable: the report's bandwidth section, in text and
// Markdown, on the real CUDA-graph run: the peak and its source, the 4 MiB
// prefill AllReduce with its figures, and the decode AllReduces without
// sizes.
func TestBandwidthTable(t *testing.T) {
	r := analyzeRun(t, testkit.Real(t, "cudagraph"))
	ar := rowOf(t, r, analyze.PhasePrefill, analyze.AllReduce, 4<<20)
	for format, write := range map[string]func(io.Writer, *analyze.Report) error{"table": WriteReportText, "markdown": WriteReportMarkdown} {
		var b bytes.Buffer
		if err := write(&b, r); err != nil {
			t.Fatal(err)
		}
		out := strings.ReplaceAll(b.String(), `\_`, "_")
		want := []string{
			"Collective bandwidth per message size",
			"Link peak: NVLink 4, 450 GB/s per GPU and direction (from device name NVIDIA H200)",
			"NCCL_P2P_DISABLE=1",
			"2,097,152 BFloat16",
			gbps(ar.BusBW), pct(ar.ShareOfPeak), usStr(ar.TransferUSPerCall),
			analyze.NoSizes,
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s report lacks %q", format, w)
			}
		}
	}
}

// TestBandwidthTableNoPeak: without a known peak the section says so and
// gives no share; grouped sizes print as a range; kernel-time rows say
// they include waiting.
func TestBandwidthTableNoPeak(t *testing.T) {
	r := fakeReport(2, 4, 2)
	r.Bandwidth = &analyze.Bandwidth{PeakNote: `no link known for GPU "Tesla V100"`, Rows: []analyze.BandwidthRow{{
		Phase: "decode", Bucket: analyze.AllReduce, Label: "AllReduce", GroupSize: 2, Bytes: 3 << 19, BytesMin: 1 << 20, BytesMax: 2<<20 - 2,
		Grouped: true, Calls: 40, CallsPerStep: 5, KernelUSPerCall: 50, Basis: analyze.BasisKernel, AlgBW: 31.4, BusFactor: 1, BusBW: 31.4,
	}}}
	var b bytes.Buffer
	if err := WriteReportText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Link peak: none known (no link known for GPU \"Tesla V100\"); no share of peak is given.",
		"1 MiB-2.00 MiB", "kernel, includes waiting", "31.4"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, b.String())
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasSuffix(line, "kernel, includes waiting") && strings.Contains(line, "%") {
			t.Errorf("a share of peak is printed without a peak: %q", line)
		}
	}
}

// TestBandwidthChart draws the chart of a real 2-rank run and an 8-rank
// synthetic run: the peak line, each point's label, the group size, the
// collectives without sizes under the chart, and a PNG twice the SVG.
func TestBandwidthChart(t *testing.T) {
	cg := analyzeRun(t, testkit.Real(t, "cudagraph"))
	s8 := synth8(t)
	ar := rowOf(t, cg, analyze.PhasePrefill, analyze.AllReduce, 4<<20)
	cases := []struct {
		name string
		r    *analyze.Report
		want []string
	}{
		{"cudagraph", cg, []string{"NVLink 4 peak, 450 GB/s per GPU and direction", "process groups of 2 ranks",
			fmt.Sprintf("%s GB/s, 8 calls/step", gbps(ar.BusBW)), "decode AllReduce: " + analyze.NoSizes, "AllReduce, prefill", "link peak"}},
		{"synth 8", s8, []string{"process groups of 8 ranks", "PCIe Gen5 x16 peak, 64 GB/s per GPU and direction",
			"Synthetic trace", "AllGather, decode"}},
	}
	for _, tc := range cases {
		svg, err := Bandwidth(tc.r, SVG)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		w, h, texts := parseSVG(t, svg)
		for _, want := range tc.want {
			if !strings.Contains(texts, want) {
				t.Errorf("%s: SVG lacks %q; its texts:\n%s", tc.name, want, texts)
			}
		}
		img, err := Bandwidth(tc.r, PNG)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil || cfg.Width != int(2*w) || cfg.Height != int(2*h+0.5) {
			t.Errorf("%s: PNG %+v (%v), SVG %gx%g pt", tc.name, cfg, err, w, h)
		}
	}
}

// TestBandwidthChartErrors: no collectives is an error; collectives
// without any size draw a chart that says so.
func TestBandwidthChartErrors(t *testing.T) {
	if _, err := Bandwidth(fakeReport(1, 2, 2), SVG); err == nil || !strings.Contains(err.Error(), "no collective kernels") {
		t.Errorf("no bandwidth: err = %v", err)
	}
	r := fakeReport(2, 2, 2)
	r.Bandwidth = &analyze.Bandwidth{PeakNote: "the trace names no GPU", Rows: []analyze.BandwidthRow{{
		Phase: "decode", Bucket: analyze.AllReduce, Label: "AllReduce", Calls: 8, CallsPerStep: 2, KernelUSPerCall: 7, Note: analyze.NoSizes}}}
	svg, err := Bandwidth(r, SVG)
	if err != nil {
		t.Fatal(err)
	}
	_, _, texts := parseSVG(t, svg)
	for _, w := range []string{"No point to draw", "decode AllReduce: no message sizes recorded (2 calls/step, 7.0 µs per call)", "Link peak: none known"} {
		if !strings.Contains(texts, w) {
			t.Errorf("SVG lacks %q:\n%s", w, texts)
		}
	}
}

// TestDiffBandwidthTable: the diff of the real eager and cudagraph runs
// lists the decode AllReduce with the base's figure and the head's
// missing sizes, and the AllGather's change.
func TestDiffBandwidthTable(t *testing.T) {
	base := analyzeRun(t, testkit.Real(t, "eager"))
	head := analyzeRun(t, testkit.Real(t, "cudagraph"))
	d, err := diff.Compare(base, head, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDiffText(&b, d); err != nil {
		t.Fatal(err)
	}
	ag := rowOf(t, head, analyze.PhaseDecode, analyze.AllGather, 1026048)
	for _, w := range []string{"Collective bandwidth per message size", "32 KiB", analyze.NoSizes, gbps(ag.BusBW),
		fmt.Sprintf("%+.1f%%", 100*(ag.BusBW/rowOf(t, base, analyze.PhaseDecode, analyze.AllGather, 1026048).BusBW-1))} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("diff lacks %q:\n%s", w, b.String())
		}
	}
}
