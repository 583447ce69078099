package api_test

import (
	"encoding/json"
	"html/template"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kinetoscope/analyze/diff"
	"kinetoscope/api"
	"kinetoscope/driver"
	"kinetoscope/internal/testkit"
)

// The diff of two stored runs is the diff of the same traces analysed
// directly, with every kernel listed; rank, phase and format select what
// the CLI's diff flags select.
func TestDiffStoredRuns(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	eager, ef := realRun(t, s.URL, "eager")
	graph, gf := realRun(t, s.URL, "cudagraph")
	q := s.URL + "/api/v1/diff?base=" + eager + "&head=" + graph

	base, head := directReport(t, filepath.Dir(ef[0])), directReport(t, filepath.Dir(gf[0]))
	for _, tc := range []struct {
		query string
		opt   diff.Options
	}{
		{"", diff.Options{}},
		{"&rank=1&phase=decode", diff.Options{Rank: ptr(1), Phase: "decode"}},
		{"&phase=prefill", diff.Options{Phase: "prefill"}},
	} {
		var got diff.Diff
		getJSON(t, q+tc.query, &got)
		want, err := driver.Compare(base, head, tc.opt)
		testkit.Must(t, err)
		if got.HeadlineText != want.HeadlineText || got.RankSel != want.RankSel || got.Phase != want.Phase ||
			!reflect.DeepEqual(got.Kernels, roundTrip(t, want.Kernels)) {
			t.Errorf("diff%s: got %q (rank %s, %s), want %q (rank %s, %s)", tc.query, got.HeadlineText, got.RankSel, got.Phase, want.HeadlineText, want.RankSel, want.Phase)
		}
		if !got.Kernels.Complete {
			t.Errorf("diff%s: kernel lists incomplete: stored reports should list every kernel", tc.query)
		}
	}
	checkDiffFormats(t, q)
	checkDiffPage(t, s.URL, eager, graph)
	// Eager and CUDA-graph decode run the same kernels; the H100 and MI300
	// runs of one model share none, and differ in GPU.
	h100 := uploadFile(t, s.URL, testkit.Public(t, traceH100), "&name=h100")
	mi300 := uploadFile(t, s.URL, testkit.Public(t, traceMI300), "&name=mi300")
	waitRun(t, s.URL, h100.ID)
	waitRun(t, s.URL, mi300.ID)
	if n := checkDiffPage(t, s.URL, h100.ID, mi300.ID); n < 2 {
		t.Errorf("h100 vs mi300: %d metadata keys differ, want the GPU and more", n)
	}
}

// checkDiffFormats checks the markdown and text answers and bad parameters.
func checkDiffFormats(t *testing.T, q string) {
	t.Helper()
	var d diff.Diff
	getJSON(t, q, &d)
	code, md := do(t, "GET", q+"&format=markdown", "", nil)
	if code != 200 || !strings.Contains(string(md), "## Runs") || !strings.Contains(string(md), "| bucket |") {
		t.Errorf("markdown diff: %d %.200s", code, md)
	}
	for _, tc := range []struct{ query, msg string }{
		{"&format=yaml", "bad format"}, {"&phase=warmup", "bad phase"}, {"&rank=x", "bad rank"},
	} {
		if code, body := do(t, "GET", q+tc.query, "", nil); code != 400 || !strings.Contains(string(body), tc.msg) {
			t.Errorf("diff%s: %d %s", tc.query, code, body)
		}
	}
	if code, body := do(t, "GET", q+"&rank=5", "", nil); code != 422 || !strings.Contains(string(body), "rank 5") {
		t.Errorf("diff of a missing rank: %d %s", code, body)
	}
}

// checkDiffPage checks that the diff page of two runs shows the headline,
// the buckets changed beyond noise, the kernels of one run only and the
// metadata that differs; it returns how many metadata keys differ.
func checkDiffPage(t *testing.T, base, a, b string) int {
	t.Helper()
	var d diff.Diff
	getJSON(t, base+"/api/v1/diff?base="+a+"&head="+b, &d)
	code, page := do(t, "GET", base+"/diff?base="+a+"&head="+b, "", nil)
	html := string(page)
	want := []string{`id="diff-headline"`, `Kernels in head only`, `Kernels in base only`}
	for _, bd := range d.Buckets {
		if bd.Significant {
			want = append(want, `<tr class="significant"><td>`+bd.Label+`</td>`)
		}
	}
	for _, k := range append(d.Kernels.Added[:min(15, len(d.Kernels.Added))], d.Kernels.Removed[:min(15, len(d.Kernels.Removed))]...) {
		want = append(want, `title="`+template.HTMLEscapeString(k.Name)+`"`)
	}
	differ := 0
	for _, m := range d.Metadata {
		if m.Differs {
			differ++
			want = append(want, `<tr class="differs"><td>`+template.HTMLEscapeString(m.Key)+`</td>`)
		}
	}
	for _, w := range want {
		if code != 200 || !strings.Contains(html, w) {
			t.Errorf("diff page %s vs %s: %d, missing %q", a, b, code, w)
		}
	}
	return differ
}

func ptr[T any](v T) *T { return &v }

// roundTrip passes v through JSON, as the server's answer did.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	testkit.Must(t, err)
	var out T
	testkit.Must(t, json.Unmarshal(b, &out))
	return out
}

// A diff chart is drawn once per pair of reports, options and format, and
// kept with the base run's charts: asked again it comes from the cache, a
// delete of the base run drops it.
func TestDiffChartCached(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data})
	a := uploadFile(t, s.URL, testkit.Public(t, traceH100), "")
	b := uploadFile(t, s.URL, testkit.Public(t, traceMI300), "")
	waitRun(t, s.URL, a.ID)
	waitRun(t, s.URL, b.ID)
	chart := func(query string) string {
		code, img := do(t, "GET", s.URL+"/api/v1/diff/charts/diff.svg?base="+a.ID+"&head="+b.ID+query, "", nil)
		if code != 200 || !strings.Contains(string(img), "<svg") {
			t.Fatalf("diff chart %s: %d", query, code)
		}
		return string(img)
	}
	cached := func() int {
		files, _ := filepath.Glob(filepath.Join(data, "charts", a.ID, "*diff*"))
		return len(files)
	}
	first := chart("")
	if n := cached(); n != 1 {
		t.Fatalf("%d diff charts cached after one request, want 1", n)
	}
	if again := chart(""); again != first || cached() != 1 {
		t.Errorf("the same diff chart again: equal %v, %d cached", again == first, cached())
	}
	chart("&phase=all")
	if n := cached(); n != 2 {
		t.Errorf("%d diff charts cached for two option sets, want 2", n)
	}
	if code, _ := do(t, "DELETE", s.URL+"/api/v1/runs/"+a.ID, "", nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	if n := cached(); n != 0 {
		t.Errorf("%d diff charts left after the base run was deleted", n)
	}
}
