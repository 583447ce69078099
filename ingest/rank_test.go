package ingest

import "testing"

func TestRankFromName(t *testing.T) {
	tests := []struct {
		name string
		want int
	}{
		{"dp0_pp0_tp0_dcp0_ep0_rank3.1234.pt.trace.json.gz", 3},
		{"vllm-instance-abc-rank-5.pt.trace.json.gz", 5},
		{"/x/y/trace_rank-12.json", 12},
		{"rank7.json.gz", 7},
		{"worker_rank_2.json", 2},
		{"host123_45678.pt.trace.json.gz", -1},
		{"prank5.json", -1},
		{"a.tar!prof/rank1.json", 1},
	}
	for _, tt := range tests {
		if got := RankFromName(tt.name); got != tt.want {
			t.Errorf("RankFromName(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
}
