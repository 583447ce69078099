package render

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/reports"
)

// csv-bandwidth has one row per bandwidth row of the report, in its order,
// with the figures of the JSON report, on real two-rank traces.
func TestBandwidthCSV(t *testing.T) {
	for _, name := range []string{"p2p_disabled", "nccl_simple"} {
		r := reports.Of(t, testkit.Real(t, name))
		if r.Bandwidth == nil || len(r.Bandwidth.Rows) == 0 {
			t.Fatalf("%s: no bandwidth rows", name)
		}
		var buf bytes.Buffer
		if err := WriteBandwidthCSV(&buf, r); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(r.Bandwidth.Rows)+1 {
			t.Fatalf("%s: %d records, want a header and %d rows", name, len(recs), len(r.Bandwidth.Rows))
		}
		col := map[string]int{}
		for i, h := range recs[0] {
			col[h] = i
		}
		for i, row := range r.Bandwidth.Rows {
			rec := recs[i+1]
			get := func(h string) float64 {
				v, err := strconv.ParseFloat(rec[col[h]], 64)
				if err != nil {
					t.Fatalf("%s row %d %s: %v", name, i, h, err)
				}
				return v
			}
			for _, c := range []struct {
				h    string
				want float64
			}{
				{"bytes", float64(row.Bytes)}, {"calls", float64(row.Calls)}, {"busbw_gb_per_s", row.BusBW},
				{"algbw_gb_per_s", row.AlgBW}, {"transfer_us_per_call", row.TransferUSPerCall}, {"wait_us_per_step", row.WaitUSPerStep},
			} {
				if got := get(c.h); got < c.want*0.999-1e-3 || got > c.want*1.001+1e-3 {
					t.Errorf("%s row %d %s: %v, want %v", name, i, c.h, got, c.want)
				}
			}
			if rec[col["phase"]] != row.Phase || rec[col["bucket"]] != string(row.Bucket) || rec[col["basis"]] != row.Basis {
				t.Errorf("%s row %d: %v, want phase %s bucket %s basis %s", name, i, rec, row.Phase, row.Bucket, row.Basis)
			}
		}
	}
}
