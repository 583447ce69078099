package render

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
)

// chartCase is one chart drawn from fixed input, with texts its SVG must
// carry.
type chartCase struct {
	name string
	draw func(Format) ([]byte, error)
	want []string
}

func chartCases(t testing.TB) []chartCase {
	one, eight := fakeReport(1, 32, 61), fakeReport(8, 32, 61)
	d := fakeDiff(t)
	ar := d.Buckets[analyze.AllReduce]
	return []chartCase{
		{"breakdown 1 rank", func(f Format) ([]byte, error) { return Breakdown(one, f) }, breakdownWant(one)},
		{"breakdown 8 ranks", func(f Format) ([]byte, error) { return Breakdown(eight, f) },
			[]string{"mean of 8 ranks, 32 decode steps", "AllReduce", meanLabel(eight, analyze.AllReduce)}},
		{"steps", func(f Format) ([]byte, error) { return Steps(eight, 3, f) },
			[]string{"rank 3", "1 prefill step", "32 decode steps", "Slowest decode step: #16", "prefill (shaded)", "Marlin GEMM"}},
		{"ranks 8", func(f Format) ([]byte, error) { return Ranks(eight, f) }, ranksWant(eight)},
		{"ranks 1", func(f Format) ([]byte, error) { return Ranks(one, f) },
			[]string{"single rank: transfer and wait cannot be told apart from one rank", ms(one.Ranks[0].Decode.KernelPerStepUS) + " ms"}},
		{"timeline", func(f Format) ([]byte, error) { return Timeline(fakeTimeline(61), f) },
			[]string{"Step 5 (decode) on rank 0", "1159 GPU events", "stream 7", "stream 9", "stream 20", "AllReduce", "Memcpy"}},
		{"diff", func(f Format) ([]byte, error) { return Diff(d, f) },
			[]string{"AllReduce", signedTime(ar.DeltaUS) + fmt.Sprintf(" (%+.1f%%)", ar.DeltaPct), "base (pale, upper)"}},
	}
}

// breakdownWant is every bucket's label and its "ms · share" label.
func breakdownWant(r *analyze.Report) []string {
	var want []string
	for id, b := range r.Ranks[0].Decode.Buckets {
		want = append(want, bucketInfo(r.Buckets, id).Label, msFine(b.USPerStep)+" ms · "+pct(b.ShareOfKernel))
	}
	return want
}

// meanLabel is the breakdown label of a bucket averaged over ranks.
func meanLabel(r *analyze.Report, id analyze.BucketID) string {
	var us, kernel float64
	for _, rk := range r.Ranks {
		us += rk.Decode.Buckets[id].USPerStep
		kernel += rk.Decode.KernelPerStepUS
	}
	n := float64(len(r.Ranks))
	return msFine(us/n) + " ms · " + pct(100*us/kernel)
}

// ranksWant is each rank's tick and wait label.
func ranksWant(r *analyze.Report) []string {
	want := []string{"comm transfer", "comm wait", "rank 7 (straggler)"}
	for _, rk := range r.Ranks {
		c := rk.Decode.Comm
		want = append(want, fmt.Sprintf("wait %s ms (%s)", ms(c.WaitUS/32), pct(c.WaitShare)))
	}
	return want
}

// fakeDiff compares the 8-rank fake with a copy whose AllReduce is halved.
func fakeDiff(t testing.TB) *diff.Diff {
	base, head := fakeReport(8, 32, 61), fakeReport(8, 32, 61)
	for i := range head.Ranks {
		for j := range head.Ranks[i].Steps {
			b := head.Ranks[i].Steps[j].Buckets[analyze.AllReduce]
			b.US *= 0.5 + 0.01*float64(j%5)
			head.Ranks[i].Steps[j].Buckets[analyze.AllReduce] = b
		}
	}
	d, err := diff.Compare(base, head, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCharts(t *testing.T) {
	for _, tc := range chartCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			svg, err := tc.draw(SVG)
			if err != nil {
				t.Fatal(err)
			}
			w, h, texts := parseSVG(t, svg)
			for _, want := range tc.want {
				if !strings.Contains(texts, want) {
					t.Errorf("SVG lacks %q; its texts:\n%s", want, texts)
				}
			}
			img, err := tc.draw(PNG)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(img))
			if err != nil {
				t.Fatalf("PNG does not decode: %v", err)
			}
			// The PNG is the SVG's layout at 144 dpi: twice its points.
			if cfg.Width != int(2*w) || cfg.Height != int(2*h+0.5) {
				t.Errorf("PNG %dx%d px, SVG %gx%g pt: want PNG twice the SVG", cfg.Width, cfg.Height, w, h)
			}
			if w != float64(chartWidth) || h < float64(minHeight) || h > float64(maxHeight) {
				t.Errorf("SVG %gx%g pt out of bounds", w, h)
			}
		})
	}
}

// parseSVG checks svg is well-formed XML and returns its size in points
// and its texts, one per line.
func parseSVG(t *testing.T, svg []byte) (w, h float64, texts string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var b strings.Builder
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			inText = e.Name.Local == "text"
			if e.Name.Local == "svg" {
				w, h = svgSize(t, e)
			}
		case xml.CharData:
			if inText {
				b.Write(e)
				b.WriteByte('\n')
			}
		case xml.EndElement:
			inText = false
		}
	}
	return w, h, b.String()
}

// svgSize reads the width and height attributes ("720pt") of the root.
func svgSize(t *testing.T, e xml.StartElement) (w, h float64) {
	for _, a := range e.Attr {
		v, err := strconv.ParseFloat(strings.TrimSuffix(a.Value, "pt"), 64)
		switch a.Name.Local {
		case "width":
			w = v
		case "height":
			h = v
		default:
			continue
		}
		if err != nil {
			t.Fatalf("svg %s=%q: %v", a.Name.Local, a.Value, err)
		}
	}
	return w, h
}

func TestChartErrors(t *testing.T) {
	empty := &analyze.Report{}
	noSteps := &analyze.Report{Ranks: []analyze.Rank{{Rank: 0}}}
	tests := []struct {
		name string
		draw func() ([]byte, error)
		want string
	}{
		{"breakdown nil", func() ([]byte, error) { return Breakdown(nil, SVG) }, "no ranks"},
		{"breakdown no steps", func() ([]byte, error) { return Breakdown(noSteps, SVG) }, "no kernel time"},
		{"steps unknown rank", func() ([]byte, error) { return Steps(fakeReport(2, 2, 2), 5, SVG) }, "no rank 5"},
		{"steps none", func() ([]byte, error) { return Steps(noSteps, -1, SVG) }, "no steps"},
		{"ranks empty", func() ([]byte, error) { return Ranks(empty, SVG) }, "no ranks"},
		{"ranks no steps", func() ([]byte, error) { return Ranks(noSteps, SVG) }, "no kernel time"},
		{"timeline empty", func() ([]byte, error) { return Timeline(&TimelineInput{}, SVG) }, "no kernels"},
		{"diff nil", func() ([]byte, error) { return Diff(nil, SVG) }, "no bucket"},
		{"bad format", func() ([]byte, error) { return Breakdown(fakeReport(1, 2, 2), "gif") }, `"gif"`},
	}
	for _, tc := range tests {
		if _, err := tc.draw(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in   string
		want Format
		ok   bool
	}{{"svg", SVG, true}, {".PNG", PNG, true}, {"jpg", "", false}}
	for _, tc := range tests {
		got, err := ParseFormat(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseFormat(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func TestBucketColorsDistinct(t *testing.T) {
	seen := map[string]analyze.BucketID{}
	for _, b := range analyze.Buckets() {
		c := fmt.Sprint(BucketColor(b.ID))
		if other, ok := seen[c]; ok {
			t.Errorf("%s and %s share colour %s", b.ID, other, c)
		}
		seen[c] = b.ID
	}
}

// BenchmarkAllCharts renders the five charts of an 8-rank, 61-layer run
// (32 decode steps) as PNG and as SVG.
func BenchmarkAllCharts(b *testing.B) {
	for _, f := range []Format{PNG, SVG} {
		b.Run(string(f), func(b *testing.B) {
			r := fakeReport(8, 32, 61)
			d := fakeDiff(b)
			tl := fakeTimeline(61)
			for b.Loop() {
				for _, draw := range []func() ([]byte, error){
					func() ([]byte, error) { return Breakdown(r, f) },
					func() ([]byte, error) { return Steps(r, -1, f) },
					func() ([]byte, error) { return Ranks(r, f) },
					func() ([]byte, error) { return Diff(d, f) },
					func() ([]byte, error) { return Timeline(tl, f) },
				} {
					if _, err := draw(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkChart renders each chart of an 8-rank, 61-layer run as PNG.
func BenchmarkChart(b *testing.B) {
	r := fakeReport(8, 32, 61)
	d := fakeDiff(b)
	tl := fakeTimeline(61)
	for _, c := range []struct {
		name string
		draw func() ([]byte, error)
	}{
		{"breakdown", func() ([]byte, error) { return Breakdown(r, PNG) }},
		{"steps", func() ([]byte, error) { return Steps(r, -1, PNG) }},
		{"ranks", func() ([]byte, error) { return Ranks(r, PNG) }},
		{"diff", func() ([]byte, error) { return Diff(d, PNG) }},
		{"timeline", func() ([]byte, error) { return Timeline(tl, PNG) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.draw(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
