package render

import (
	"testing"

	"kinetoscope/analyze"
)

// TestTimelineStep: the default step is the slowest decode step (the
// outlier in the middle), not the slower prefill step; rank and step
// numbers that are not there are errors.
func TestTimelineStep(t *testing.T) {
	r := fakeReport(3, 8, 4)
	tests := []struct {
		rank, step         int
		wantRank, wantStep int
		wantErr            bool
	}{
		{-1, -1, 0, 4, false},
		{2, -1, 2, 4, false},
		{1, 0, 1, 0, false},
		{5, -1, 0, 0, true},
		{0, 99, 0, 0, true},
	}
	for _, tt := range tests {
		rk, s, err := TimelineStep(r, tt.rank, tt.step)
		if tt.wantErr {
			if err == nil {
				t.Errorf("rank %d step %d: no error", tt.rank, tt.step)
			}
			continue
		}
		if err != nil || rk.Rank != tt.wantRank || s.Index != tt.wantStep {
			t.Errorf("rank %d step %d: got %v %v %v, want rank %d step %d", tt.rank, tt.step, rk, s, err, tt.wantRank, tt.wantStep)
		}
	}
	if _, _, err := TimelineStep(&analyze.Report{}, -1, -1); err == nil {
		t.Error("report without ranks: no error")
	}
}

// TestNewTimelineInput: events become kernels in us, the axis starts at
// the earliest start, and a step without events is an error.
func TestNewTimelineInput(t *testing.T) {
	s := &analyze.Step{Index: 7, Phase: analyze.PhaseDecode}
	evs := []analyze.StepEvent{
		{Stream: 20, StartNS: 5_000, DurNS: 1_500, Bucket: analyze.AllReduce, Name: "nccl"},
		{Stream: 7, StartNS: 2_000, DurNS: 500, Bucket: analyze.GEMM, Name: "gemm"},
	}
	in, err := NewTimelineInput(3, s, nil, evs)
	if err != nil {
		t.Fatal(err)
	}
	want := []TimelineKernel{{20, 5, 1.5, analyze.AllReduce, "nccl"}, {7, 2, 0.5, analyze.GEMM, "gemm"}}
	if in.Rank != 3 || in.Step != 7 || in.Phase != analyze.PhaseDecode || in.StartUS != 2 || len(in.Kernels) != 2 {
		t.Fatalf("input %+v", in)
	}
	for i, k := range want {
		if in.Kernels[i] != k {
			t.Errorf("kernel %d: %+v, want %+v", i, in.Kernels[i], k)
		}
	}
	if _, err := NewTimelineInput(3, s, nil, nil); err == nil {
		t.Error("no events: no error")
	}
}
