package render_test

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
	"kinetoscope/render"
)

// TestCostModelOutputs: csv-costmodel has a row per fitted time holding
// the report's figures, and a row saying why for a phase not fitted; the
// text report has the section with every fit's verdict, and the estimate
// labelled as such, with its extrapolation warned.
func TestCostModelOutputs(t *testing.T) {
	r := analyze.WithPrediction(reports.Of(t, testkit.Real(t, "vllm_new_annotations")), analyze.Workload{Batch: 8})
	var buf bytes.Buffer
	testkit.Must(t, render.WriteCostModelCSV(&buf, r))
	rows, err := csv.NewReader(&buf).ReadAll()
	testkit.Must(t, err)
	col := make(map[string]int)
	for i, h := range rows[0] {
		col[h] = i
	}
	want := 0
	for _, cm := range r.Ranks[0].CostModel {
		want += max(1, len(cm.Fits))
	}
	if len(rows)-1 != want {
		t.Fatalf("%d rows, want %d", len(rows)-1, want)
	}
	i := 1
	for _, cm := range r.Ranks[0].CostModel {
		if len(cm.Fits) == 0 {
			if row := rows[i]; row[col["phase"]] != cm.Phase || row[col["verdict"]] != strings.Join(cm.Notes, "; ") {
				t.Errorf("unfitted %s row %v", cm.Phase, row)
			}
			i++
			continue
		}
		for _, f := range cm.Fits {
			row := rows[i]
			i++
			slope, _ := strconv.ParseFloat(row[col["size_us_per"]], 64)
			pred, _ := strconv.ParseFloat(row[col["predicted_us"]], 64)
			if row[col["target"]] != f.Target || row[col["size_regressor"]] != cm.Regressors[0].Name || row[col["verdict"]] != f.Verdict || row[col["loose"]] != strconv.FormatBool(f.Loose) ||
				!closeTo(slope, f.Slopes[0].USPer) || row[col["predict_workload"]] != "batch=8" || pred < 0 {
				t.Errorf("%s %s row %v; fit %+v", cm.Phase, f.Target, row, f)
			}
		}
	}
	buf.Reset()
	testkit.Must(t, render.WriteReportText(&buf, r))
	text := buf.String()
	for _, s := range []string{"Cost model (decode steps: time per step = a + b·batch, least squares)", "grows with batch", "Estimate at batch=8",
		"not a measurement", "Warning: an extrapolation, batch 8 is outside the observed 3..5", "Cost model (prefill steps)"} {
		if !strings.Contains(text, s) {
			t.Errorf("text report lacks %q", s)
		}
	}
}

func closeTo(a, b float64) bool {
	d := a - b
	return d < 1e-3*max(1, b, -b) && -d < 1e-3*max(1, b, -b)
}
