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
	"kinetoscope/driver"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// ?predict= on a run's report: each fitted phase's cost model carries the
// estimate analyze.WithPrediction gives over the same analysis, in the JSON
// and the CSV; the run page shows it and its form; a bad workload is
// refused naming the parameter, on the page as a warning.
func TestReportPredict(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	files, _ := filepath.Glob(filepath.Join(testkit.Real(t, "vllm_new_annotations"), "*.pt.trace.json.gz"))
	ct, body := multipartBody(t, "predict", "", files...)
	code, resp := do(t, "POST", s.URL+"/api/v1/runs", ct, body)
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, resp)
	}
	var c created
	testkit.Must(t, json.Unmarshal(resp, &c))
	waitRun(t, s.URL, c.ID)
	ref, err := driver.Analyze(ingest.FromPaths(files), driver.Options{})
	testkit.Must(t, err)
	w := analyze.Workload{Batch: 8}
	want := analyze.WithPrediction(ref.Report, w).Ranks[0].CostModel[0].Prediction
	code, js := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report?predict=batch=8", "", nil)
	var r analyze.Report
	if code != http.StatusOK || json.Unmarshal(js, &r) != nil || len(r.Ranks) != 1 || len(r.Ranks[0].CostModel) == 0 {
		t.Fatalf("report?predict=batch=8: %d %.300s", code, js)
	}
	got := r.Ranks[0].CostModel[0].Prediction
	if got == nil || want == nil || got.SpanUS != want.SpanUS || got.BusyUS != want.BusyUS || len(got.Buckets) != len(want.Buckets) || len(got.Extrapolated) != 1 {
		t.Errorf("prediction %+v, want %+v with 1 extrapolation", got, want)
	}
	if _, plain := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report", "", nil); bytes.Contains(plain, []byte(`"prediction"`)) {
		t.Error("the report without ?predict= carries a prediction")
	}
	_, csv := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report?format=csv-costmodel&predict=batch=8", "", nil)
	if !strings.Contains(string(csv), ",batch=8,") || !strings.Contains(string(csv), "batch 8 is outside the observed 3..5") {
		t.Errorf("csv-costmodel with ?predict=batch=8:\n%.800s", csv)
	}
	_, page := do(t, "GET", s.URL+"/runs/"+c.ID+"?predict=batch=8", "", nil)
	for _, s := range []string{`id="costmodel"`, `name="predict" value="batch=8"`, "Estimate at batch=8", "an extrapolation"} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("run page with ?predict=batch=8 lacks %q", s)
		}
	}
	if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report?predict=size=3", "", nil); code != http.StatusBadRequest || !strings.Contains(string(body), `?predict=: predict: unknown key \"size\"`) {
		t.Errorf("report?predict=size=3: %d %s, want 400 naming the parameter", code, body)
	}
	if _, page := do(t, "GET", s.URL+"/runs/"+c.ID+"?predict=batch=x", "", nil); !bytes.Contains(page, []byte(`id="predict-error"`)) {
		t.Error("run page with a bad ?predict= shows no error")
	}
}
