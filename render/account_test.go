package render

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
)

// TestAccountHeadlineText checks the headline's account clause on the real
// samples whose cause is known by construction.
func TestAccountHeadlineText(t *testing.T) {
	for _, tc := range []struct {
		sample string
		want   []string
	}{
		// TP2 eager: rank 0's host is late, rank 1 waits for it.
		{"eager", []string{"the largest part of the step of rank 0, the slowest", "is GPU idle with the host late",
			"rank 1: 0.98 ms/step", "rank 1 waits 5.22 ms/step in AllReduce for rank 0, whose GPU idles 6.27 ms/step, mostly with the host late"}},
		{"pair_host_delay", []string{"the largest part of the step is GPU idle with the host late, 3.77 ms/step"}},
		{"bare_cudagraph", []string{"the largest part of the step is compute"}},
	} {
		text := HeadlineText(reports.Of(t, testkit.Real(t, tc.sample)))
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: headline lacks %q:\n%s", tc.sample, w, text)
			}
		}
	}
}

// TestDiffHeadlineNamesIdleCause checks that a diff whose kernels barely
// change but whose idle does names the idle part and its cause: the same
// TP1 eager decoder without and with a 1 ms host sleep a step, and eager
// against CUDA graphs.
func TestDiffHeadlineNamesIdleCause(t *testing.T) {
	for _, tc := range []struct{ base, head, want string }{
		{"pair_eager", "pair_host_delay", "the part that changed most: GPU idle with the host late, 1.65 -> 3.77 ms/step (+2.12 ms)"},
		{"bare_eager", "bare_cudagraph", "the part that changed most: GPU idle with the host late"},
		{"eager", "cudagraph", "the part that changed most: GPU idle with the host late"},
		// The wait falls because rank 0's host is less late: the headline
		// follows the wait to it.
		{"eager", "nccl_simple", "rank 1 waits for rank 0, whose GPU idle with the host late went"},
	} {
		d, err := diff.Compare(reports.Of(t, testkit.Real(t, tc.base)), reports.Of(t, testkit.Real(t, tc.head)), diff.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if text := DiffHeadlineText(d); !strings.Contains(text, tc.want) {
			t.Errorf("%s -> %s: headline lacks %q:\n%s", tc.base, tc.head, tc.want, text)
		}
		if d.Account == nil || len(d.Base.Accounts) == 0 || len(d.Head.Accounts) == 0 {
			t.Errorf("%s -> %s: no account in the diff", tc.base, tc.head)
		}
	}
}

// TestAccountCSV checks that csv-account's parts of every step and phase
// mean add up to the row's span within 0.1%, and that its compute rows add
// up to compute.
func TestAccountCSV(t *testing.T) {
	for _, sample := range []string{"eager", "host_sync_item", "bare_cudagraph"} {
		r := reports.Of(t, testkit.Real(t, sample))
		var b bytes.Buffer
		if err := WriteAccountCSV(&b, r); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		type key struct{ rank, phase, step string }
		sums, compute, span := map[key]float64{}, map[key]float64{}, map[key]float64{}
		parts := map[string]bool{}
		for _, p := range (&analyze.Account{}).Parts() {
			parts[p.Name] = true
		}
		for _, row := range rows[1:] {
			k := key{row[0], row[2], row[3]}
			v, _ := strconv.ParseFloat(row[6], 64)
			span[k], _ = strconv.ParseFloat(row[8], 64)
			switch {
			case parts[row[5]]:
				sums[k] += v
				if row[5] == analyze.PartCompute {
					compute[k] -= v
				}
			case strings.HasPrefix(row[5], "compute: "):
				compute[k] += v
			}
		}
		if len(sums) < 2 {
			t.Fatalf("%s: %d accounts in csv-account", sample, len(sums))
		}
		for k, s := range sums {
			if math.Abs(s-span[k]) > 0.001*span[k] || math.Abs(compute[k]) > 0.01 {
				t.Errorf("%s %+v: parts %.3f us, span %.3f us, compute buckets off by %.3f us", sample, k, s, span[k], compute[k])
			}
		}
	}
}

// TestStepTimeChart draws the step time chart of a run and of a diff and
// checks the bars and the legend.
func TestStepTimeChart(t *testing.T) {
	r := reports.Of(t, testkit.Real(t, "eager"))
	svg, err := StepTime(r, SVG)
	if err != nil {
		t.Fatal(err)
	}
	text := testkit.MustSVGText(t, svg)
	for _, w := range []string{"rank 0", "rank 1", "idle: host late", "comm wait", "span 7.09 ms"} {
		if !strings.Contains(text, w) {
			t.Errorf("steptime chart lacks %q:\n%s", w, text)
		}
	}
	d, err := diff.Compare(reports.Of(t, testkit.Real(t, "pair_eager")), reports.Of(t, testkit.Real(t, "pair_host_delay")), diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svg, err = DiffStepTime(d, SVG)
	if err != nil {
		t.Fatal(err)
	}
	text = testkit.MustSVGText(t, svg)
	for _, w := range []string{"base rank 0", "head rank 0", "span 2.73 ms", "span 4.85 ms"} {
		if !strings.Contains(text, w) {
			t.Errorf("diff-steptime chart lacks %q:\n%s", w, text)
		}
	}
}

// TestDiffRankAccountTable checks the per-rank account of a TP2 diff: rank
// 0's host late and rank 1's wait, each side by side.
func TestDiffRankAccountTable(t *testing.T) {
	d, err := diff.Compare(reports.Of(t, testkit.Real(t, "eager")), reports.Of(t, testkit.Real(t, "nccl_simple")), diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tab := diffRankAccountTable(d)
	if tab == nil || len(tab.Header) != 5 {
		t.Fatalf("per-rank account table %+v", tab)
	}
	want := map[string][]string{
		analyze.PartHostLate: {ms(d.Base.Accounts[0].Account.Idle.HostLateUS), ms(d.Head.Accounts[0].Account.Idle.HostLateUS)},
		analyze.PartWait:     {ms(d.Base.Accounts[0].Account.WaitUS), ms(d.Head.Accounts[0].Account.WaitUS)},
	}
	for _, row := range tab.Rows {
		if w, ok := want[row[0]]; ok && (row[1] != w[0] || row[2] != w[1]) {
			t.Errorf("%s: rank 0 %v, want %v", row[0], row[1:3], w)
		}
		delete(want, row[0])
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
}

// TestEveryPartHasALook: each part the account gives has a colour, a
// legend label of at most maxLegendLabel runes and its words.
func TestEveryPartHasALook(t *testing.T) {
	var a analyze.Account
	for _, p := range a.Parts() {
		l, ok := partLooks[p.Name]
		if !ok || l.hex == 0 || l.legend == "" || l.words == "" || len([]rune(l.legend)) > maxLegendLabel {
			t.Errorf("part %q: look %+v", p.Name, l)
		}
	}
}
