package api_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// p2pFiles returns the real NCCL_P2P_DISABLE=1 TP2 run's rank files: H200s,
// whose GPU name says NVLink 4 while the data went through the host.
func p2pFiles(t *testing.T) []string {
	files, _ := filepath.Glob(filepath.Join(testkit.Real(t, "p2p_disabled"), "*.pt.trace.json.gz"))
	slices.Sort(files)
	if len(files) != 2 {
		t.Fatalf("p2p_disabled: %d rank files", len(files))
	}
	return files
}

// bandwidthOf reads the report's bandwidth from its JSON.
func bandwidthOf(t *testing.T, js []byte) *analyze.Bandwidth {
	var r analyze.Report
	if err := json.Unmarshal(js, &r); err != nil || r.Bandwidth == nil || r.Bandwidth.Peak == nil {
		t.Fatalf("report without a bandwidth peak (%v): %.300s", err, js)
	}
	return r.Bandwidth
}

// A run's link: set at upload, held in its report, its text report and
// its charts, changed on the run page or for one request with ?link=, and
// refused when analyze cannot read it.
func TestRunLink(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	files := p2pFiles(t)
	// A multipart link field, as the upload form sends it, and the query.
	form := "--b\r\nContent-Disposition: form-data; name=\"link\"\r\n\r\nfast\r\n--b--\r\n"
	if code, body := do(t, "POST", s.URL+"/api/v1/runs", "multipart/form-data; boundary=b", strings.NewReader(form)); code != http.StatusBadRequest ||
		!strings.Contains(string(body), `link: link \"fast\": want one of nvlink3`) {
		t.Errorf("upload with a link field fast: %d %s", code, body)
	}
	ct, both := multipartBody(t, "p2p", "", files...)
	code, body := do(t, "POST", s.URL+"/api/v1/runs?link=pcie5x16", ct, both)
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, body)
	}
	var c created
	testkit.Must(t, json.Unmarshal(body, &c))
	if run := waitRun(t, s.URL, c.ID); run.Link != "pcie5x16" {
		t.Fatalf("run link %q, want pcie5x16", run.Link)
	}
	report := func(query string) *analyze.Bandwidth {
		t.Helper()
		code, js := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report"+query, "", nil)
		if code != http.StatusOK {
			t.Fatalf("report%s: %d %s", query, code, js)
		}
		return bandwidthOf(t, js)
	}
	tests := []struct {
		name   string
		set    string // the run's link setting to make first ("-": leave it)
		query  string
		link   string // what the report must be held against, as analyze --link
		source string
	}{
		{"the upload's link", "-", "", "pcie5x16", "the run's link setting pcie5x16"},
		{"one request's link", "-", "?link=nvlink4", "nvlink4", "?link=nvlink4"},
		{"the link set on the run page", "120", "", "120", "the run's link setting 120"},
		{"back to the GPU name's", "", "", "", "device name NVIDIA H200"},
	}
	for _, tc := range tests {
		if tc.set != "-" {
			code, body := do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/link", "application/x-www-form-urlencoded",
				strings.NewReader(url.Values{"link": {tc.set}}.Encode()))
			var run struct{ Link string }
			json.Unmarshal(body, &run)
			if code != http.StatusOK || run.Link != tc.set {
				t.Fatalf("%s: set link %q: %d %s", tc.name, tc.set, code, body)
			}
		}
		got := report(tc.query)
		ref, err := driver.Analyze(ingest.FromPaths(files), driver.Options{Analyze: analyze.Options{Link: tc.link}})
		testkit.Must(t, err)
		want := ref.Report.Bandwidth
		if got.Peak.Name != want.Peak.Name || got.Peak.GBPerS != want.Peak.GBPerS || got.PeakNote != want.PeakNote || !slices.Equal(got.Notes, want.Notes) {
			t.Errorf("%s: peak %+v (%q), want %+v (%q)", tc.name, got.Peak, got.PeakNote, want.Peak, want.PeakNote)
		}
		if got.Peak.Source != tc.source {
			t.Errorf("%s: peak source %q, want %q", tc.name, got.Peak.Source, tc.source)
		}
		for i, r := range got.Rows {
			if share := 100 * r.BusBW / got.Peak.GBPerS; math.Abs(r.ShareOfPeak-share) > 1e-9 || r.ShareOfPeak != want.Rows[i].ShareOfPeak {
				t.Errorf("%s: row %d: %.3f%% of peak, want %.3f%% (%.3f%% from Analyze)", tc.name, i, r.ShareOfPeak, share, want.Rows[i].ShareOfPeak)
			}
		}
	}
	// The text report, the bandwidth chart and the run page follow.
	_, text := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report?format=table&link=pcie4x16", "", nil)
	if !strings.Contains(string(text), "Link peak: PCIe Gen4 x16, 32 GB/s per GPU and direction (from ?link=pcie4x16)") {
		t.Errorf("table report with ?link=pcie4x16:\n%.1500s", text)
	}
	_, svg := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/charts/bandwidth.svg?link=pcie4x16", "", nil)
	_, plain := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/charts/bandwidth.svg", "", nil)
	if st := testkit.MustSVGText(t, svg); !strings.Contains(st, "PCIe Gen4 x16") || strings.Contains(testkit.MustSVGText(t, plain), "PCIe Gen4 x16") {
		t.Errorf("bandwidth chart with ?link=pcie4x16 does not draw its peak, or the chart without does:\n%s", st)
	}
	do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/link?link=pcie5x16", "", nil)
	_, page := do(t, "GET", s.URL+"/runs/"+c.ID, "", nil)
	for _, want := range []string{`id="link-form"`, `name="link" list="link-names" value="pcie5x16"`, "Link peak: <b>PCIe Gen5 x16</b>"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("run page lacks %q", want)
		}
	}
	// With the GPU name's link, the page tells to set the link in its form,
	// not with the command line's --link.
	do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/link?link=", "", nil)
	_, page = do(t, "GET", s.URL+"/runs/"+c.ID, "", nil)
	if !bytes.Contains(page, []byte("then set the link (below) to pcie5x16 (or pcie4x16).")) || bytes.Contains(page, []byte("pass --link")) {
		t.Errorf("run page with the GPU name's link does not point to its form")
	}
	// Bad links are refused, naming the parameter; a browser goes back to
	// the run page.
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/report?link=fast", `?link=: link \"fast\"`},
		{"GET", "/charts/bandwidth.svg?link=0", `?link=: link \"0\"`},
		{"POST", "/link?link=fast", `link: link \"fast\"`},
	} {
		if code, body := do(t, tc.method, s.URL+"/api/v1/runs/"+c.ID+tc.path, "", nil); code != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s: %d %s, want 400 with %s", tc.method, tc.path, code, body, tc.want)
		}
	}
	resp, _ := send(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/link", "", nil, strings.NewReader("link=nvlink4"),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs/"+c.ID+"#bandwidth" {
		t.Errorf("form post: %d to %q, want 303 to the run page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if code, _ := do(t, "POST", s.URL+"/api/v1/runs/nosuchrun/link?link=nvlink4", "", nil); code != http.StatusNotFound {
		t.Errorf("link of an unknown run: %d, want 404", code)
	}
}
