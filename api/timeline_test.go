package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/render"
	"kinetoscope/sampletraces"
)

// realRun uploads the rank files of one real sample variant as one run
// and waits for its analysis; it returns the run id and the files.
func realRun(t *testing.T, base, variant string) (string, []string) {
	t.Helper()
	dir, err := sampletraces.RealDir(variant)
	testkit.Must(t, err)
	files, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	testkit.Must(t, err)
	if len(files) < 2 {
		t.Fatalf("%s: %d rank files", dir, len(files))
	}
	ct, body := multipartBody(t, variant, "variant="+variant, files...)
	code, resp := do(t, "POST", base+"/api/v1/runs", ct, body)
	if code != http.StatusAccepted {
		t.Fatalf("upload %s: %d %s", variant, code, resp)
	}
	var c created
	testkit.Must(t, json.Unmarshal(resp, &c))
	if run := waitRun(t, base, c.ID); run.Status != store.StatusDone {
		t.Fatalf("run %s: %s %s", variant, run.Status, run.Error)
	}
	return c.ID, files
}

// The timeline route draws one step of one rank from the stored trace,
// the same image as drawing it from the original files, and answers bad
// ranks and steps with clear errors.
func TestTimelineChart(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), Workers: 1})
	id, files := realRun(t, s.URL, "eager")
	var rep analyze.Report
	getJSON(t, s.URL+"/api/v1/runs/"+id+"/report", &rep)
	want := directTimeline(t, filepath.Dir(files[0]), &rep, 1, 5)
	url := s.URL + "/api/v1/runs/" + id + "/charts/timeline"
	for i := 0; i < 2; i++ { // the second answer comes from the cache
		code, got := do(t, "GET", url+".svg?rank=1&step=5", "", nil)
		if code != 200 || !bytes.Equal(got, want) {
			t.Fatalf("timeline rank 1 step 5 (try %d): %d, %d bytes, want the direct drawing's %d bytes", i, code, len(got), len(want))
		}
	}
	if code, png := do(t, "GET", url+".png", "", nil); code != 200 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("default timeline PNG: %d %.40q", code, png)
	}
	for _, tc := range []struct {
		query string
		code  int
		msg   string
	}{
		{"?rank=1&step=9999", 404, "no step 9999"},
		{"?rank=7", 404, "no rank 7"},
		{"?step=x", 400, "bad step"},
	} {
		code, body := do(t, "GET", url+".svg"+tc.query, "", nil)
		if code != tc.code || !strings.Contains(string(body), tc.msg) {
			t.Errorf("timeline%s: %d %s, want %d with %q", tc.query, code, body, tc.code, tc.msg)
		}
	}
	checkRunPageTimeline(t, s.URL, id)
}

// directTimeline draws a timeline with the pipeline from the original
// files.
func directTimeline(t *testing.T, dir string, rep *analyze.Report, rank, step int) []byte {
	t.Helper()
	set, err := driver.Read(ingest.FromPath(dir), driver.Options{Options: ingest.Options{MaxUncompressedBytes: 256 << 20}})
	if err != nil {
		t.Fatalf("direct timeline: %v", err)
	}
	img, err := (&driver.Run{Report: rep, Set: set}).Chart(driver.ChartRequest{Kind: "timeline", Format: render.SVG, Rank: rank, Step: step})
	if err != nil {
		t.Fatalf("direct timeline: %v", err)
	}
	return img
}

// checkRunPageTimeline checks the run page's step picker: the chart of the
// step in the URL, links to other steps, and the rank links keeping the
// step.
func checkRunPageTimeline(t *testing.T, base, id string) {
	t.Helper()
	code, page := do(t, "GET", base+"/runs/"+id+"?rank=1&step=5", "", nil)
	html := string(page)
	for _, want := range []string{
		`id="chart-timeline" src="/api/v1/runs/` + id + `/charts/timeline.svg?rank=1&amp;step=5"`,
		`step 5 timeline`, `slowest decode step`, `href="?rank=0&amp;step=5"`, `<option value="5" selected>`,
	} {
		if code != 200 || !strings.Contains(html, want) {
			t.Errorf("run page: %d, missing %q", code, want)
		}
	}
}
