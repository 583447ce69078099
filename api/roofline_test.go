package api_test

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// A run's roofline: on its page (the table, the speed of light, the
// chart), in its report, and held against other GPU peaks for one request
// with ?gpu_peak=, which a bad value is refused for.
func TestRunRoofline(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	files, _ := filepath.Glob(filepath.Join(testkit.Real(t, "bare_eager"), "*.pt.trace.json.gz"))
	ct, body := multipartBody(t, "bare", "", files...)
	code, resp := do(t, "POST", s.URL+"/api/v1/runs", ct, body)
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, resp)
	}
	var c created
	testkit.Must(t, json.Unmarshal(resp, &c))
	waitRun(t, s.URL, c.ID)
	roofline := func(query string) *analyze.Roofline {
		t.Helper()
		code, js := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report"+query, "", nil)
		var r analyze.Report
		if code != http.StatusOK || json.Unmarshal(js, &r) != nil || r.Roofline == nil || r.Roofline.Peak == nil {
			t.Fatalf("report%s: %d, no roofline with a peak: %.300s", query, code, js)
		}
		return r.Roofline
	}
	base, slow := roofline(""), roofline("?gpu_peak=hbm=2.4")
	if slow.Peak.HBMTBPerS != 2.4 || slow.Peak.Source != "?gpu_peak=hbm=2.4" {
		t.Errorf("?gpu_peak=hbm=2.4: peak %+v", slow.Peak)
	}
	for i, row := range base.Rows {
		if row.Bound == analyze.BoundMemory && slow.Rows[i].Bound == analyze.BoundMemory &&
			math.Abs(slow.Rows[i].PeakShare-2*row.PeakShare) > 1e-9*row.PeakShare {
			t.Errorf("%s %s: %.2f%% of a 2.4 TB/s peak, %.2f%% of 4.8", row.Phase, row.Bucket, slow.Rows[i].PeakShare, row.PeakShare)
		}
	}
	_, page := do(t, "GET", s.URL+"/runs/"+c.ID, "", nil)
	for _, want := range []string{`id="roofline"`, `id="roofline-table"`, "GPU peak: <b>H200 SXM</b>", "Speed of light", "/charts/roofline.svg"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("run page lacks %q", want)
		}
	}
	_, svg := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/charts/roofline.svg?gpu_peak=hbm=2.4", "", nil)
	if st := testkit.MustSVGText(t, svg); !strings.Contains(st, "memory 2.4 TB/s") {
		t.Errorf("roofline chart with ?gpu_peak=hbm=2.4 does not draw its roof:\n%.600s", st)
	}
	for _, path := range []string{"/report?gpu_peak=hbm=fast", "/charts/roofline.svg?gpu_peak=bf17=3"} {
		if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+path, "", nil); code != http.StatusBadRequest || !strings.Contains(string(body), "gpu_peak") {
			t.Errorf("%s: %d %s, want 400 naming gpu_peak", path, code, body)
		}
	}
}

// A run's GPU peak setting: set at upload, held in its report and page,
// changed with POST /api/v1/runs/{id}/gpu_peak (a request's ?gpu_peak=
// still wins), and refused when analyze cannot read it.
func TestRunGPUPeakSetting(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	files, _ := filepath.Glob(filepath.Join(testkit.Real(t, "bare_eager"), "*.pt.trace.json.gz"))
	ct, body := multipartBody(t, "bare", "", files...)
	if code, resp := do(t, "POST", s.URL+"/api/v1/runs?gpu_peak=fast", ct, body); code != http.StatusBadRequest || !strings.Contains(string(resp), "gpu_peak") {
		t.Errorf("upload with ?gpu_peak=fast: %d %s", code, resp)
	}
	ct, body = multipartBody(t, "bare", "", files...)
	code, resp := do(t, "POST", s.URL+"/api/v1/runs?gpu_peak=hbm=2.4", ct, body)
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, resp)
	}
	var c created
	testkit.Must(t, json.Unmarshal(resp, &c))
	if run := waitRun(t, s.URL, c.ID); run.GPUPeak != "hbm=2.4" {
		t.Fatalf("run GPU peak %q, want hbm=2.4", run.GPUPeak)
	}
	peak := func(query string) *analyze.GPUPeak {
		t.Helper()
		code, js := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report"+query, "", nil)
		var r analyze.Report
		if code != http.StatusOK || json.Unmarshal(js, &r) != nil || r.Roofline == nil || r.Roofline.Peak == nil {
			t.Fatalf("report%s: %d %.300s", query, code, js)
		}
		return r.Roofline.Peak
	}
	for _, tc := range []struct {
		set, query string
		hbm        float64
		source     string
	}{
		{"-", "", 2.4, "the run's GPU peak setting hbm=2.4"},
		{"-", "?gpu_peak=hbm=3", 3, "?gpu_peak=hbm=3"},
		{"hbm=4", "", 4, "the run's GPU peak setting hbm=4"},
		{"", "", 4.8, "device name NVIDIA H200"},
	} {
		if tc.set != "-" {
			if code, body := do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/gpu_peak?gpu_peak="+tc.set, "", nil); code != http.StatusOK {
				t.Fatalf("set GPU peak %q: %d %s", tc.set, code, body)
			}
		}
		if p := peak(tc.query); p.HBMTBPerS != tc.hbm || p.Source != tc.source {
			t.Errorf("set %q, query %q: peak %g TB/s from %q, want %g from %q", tc.set, tc.query, p.HBMTBPerS, p.Source, tc.hbm, tc.source)
		}
	}
	do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/gpu_peak?gpu_peak=bf16=800", "", nil)
	_, page := do(t, "GET", s.URL+"/runs/"+c.ID, "", nil)
	for _, want := range []string{`id="gpu-peak-form"`, `name="gpu_peak" value="bf16=800"`, "H200 SXM (--gpu-peak)"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if code, body := do(t, "POST", s.URL+"/api/v1/runs/"+c.ID+"/gpu_peak?gpu_peak=hbm", "", nil); code != http.StatusBadRequest || !strings.Contains(string(body), "gpu_peak") {
		t.Errorf("POST gpu_peak=hbm: %d %s, want 400 naming gpu_peak", code, body)
	}
	if code, _ := do(t, "POST", s.URL+"/api/v1/runs/nope/gpu_peak?gpu_peak=hbm=4", "", nil); code != http.StatusNotFound {
		t.Errorf("POST gpu_peak of an unknown run: %d, want 404", code)
	}
}
