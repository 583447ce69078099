package analyze

import (
	"testing"

	"kinetoscope/internal/testkit"
)

// TestHeadlineAccountShapes checks the headline's account on the real
// samples whose shape is known by construction: in the eager TP2 run the
// host launches rank 0's kernels too late and rank 1 waits for it in its
// collectives; in the TP1 pair the host sleeps 1 ms a step without a sync;
// in host_sync_item a .item() (a host sync) and a sleep run inside every
// step.
func TestHeadlineAccountShapes(t *testing.T) {
	_, eager := analyzePath(t, testkit.Real(t, "eager"))
	h := eager.Headline.Account
	if h == nil || h.Part != PartHostLate || len(h.PerRank) != 2 || len(h.Waits) != 1 {
		t.Fatalf("eager: headline account %+v", h)
	}
	w := h.Waits[0]
	if w.Rank != 1 || w.ForRank != 0 || w.ForCause != PartHostLate || w.WaitUS < 0.5*h.SpanUS {
		t.Errorf("eager: wait %+v, want rank 1 waiting for rank 0, host late, most of its step", w)
	}
	r1 := eager.Ranks[1].Decode.Account
	if r1.WaitUS < 0.5*r1.SpanUS || len(r1.WaitFor) == 0 || r1.WaitFor[len(r1.WaitFor)-1].Rank != 0 {
		t.Errorf("eager rank 1: decode account %+v", r1)
	}

	_, base := analyzePath(t, testkit.Real(t, "pair_eager"))
	_, delay := analyzePath(t, testkit.Real(t, "pair_host_delay"))
	_, item := analyzePath(t, testkit.Real(t, "host_sync_item"))
	b, d, it := base.Ranks[0].Decode.Account, delay.Ranks[0].Decode.Account, item.Ranks[0].Decode.Account
	// A 1 ms sleep with nothing queued on the GPU: at least 0.9 ms more
	// host late a step, the same compute within 5%.
	if d.Idle.HostLateUS-b.Idle.HostLateUS < 900 || d.Idle.AfterSyncUS != 0 || b.Idle.AfterSyncUS != 0 {
		t.Errorf("pair: host late %.0f -> %.0f us, after sync %.0f, %.0f", b.Idle.HostLateUS, d.Idle.HostLateUS, b.Idle.AfterSyncUS, d.Idle.AfterSyncUS)
	}
	if r := d.ComputeUS / b.ComputeUS; r < 0.95 || r > 1.05 {
		t.Errorf("pair: compute %.0f -> %.0f us", b.ComputeUS, d.ComputeUS)
	}
	// The .item() blocks the thread until the GPU drains, then the host
	// sleeps 0.3 ms: every decode step has at least 0.3 ms after a sync;
	// the 0.6 ms sleep without a sync is host late.
	for _, s := range item.Ranks[0].Steps {
		if s.Phase == PhaseDecode && (s.Account.Idle.AfterSyncUS < 300 || s.Account.Idle.HostLateUS < 600) {
			t.Errorf("host_sync_item step %d: after sync %.0f us, host late %.0f us", s.Index, s.Account.Idle.AfterSyncUS, s.Account.Idle.HostLateUS)
		}
	}
	if it.Idle.AfterSyncUS < 300 {
		t.Errorf("host_sync_item: after sync %.0f us a step", it.Idle.AfterSyncUS)
	}
}

// TestWhatIf checks the what-if estimates where the answer is known by
// construction: the eager TP2 run is host-bound (without the late host
// its step would be a fraction of itself), the CUDA-graph TP1 run is not;
// no estimate exceeds the step or falls below its compute.
func TestWhatIf(t *testing.T) {
	for _, tc := range []struct {
		sample       string
		n            int     // estimates
		hostOnTimeLo float64 // bounds of the host-never-late estimate, share of the step
		hostOnTimeHi float64
	}{
		{"eager", 3, 0.05, 0.25},
		{"pair_host_delay", 1, 0.15, 0.35},
		{"bare_cudagraph", 1, 0.85, 1.0},
	} {
		_, r := analyzePath(t, testkit.Real(t, tc.sample))
		if len(r.WhatIf) != tc.n {
			t.Errorf("%s: %d what-if estimates, want %d: %+v", tc.sample, len(r.WhatIf), tc.n, r.WhatIf)
		}
		compute := r.Ranks[0].Decode.Account.ComputeUS
		for _, w := range r.WhatIf {
			if w.StepUS > w.NowUS || w.StepUS < compute || w.Assumption == "" {
				t.Errorf("%s: %s: %.0f us of %.0f us (compute %.0f us)", tc.sample, w.Name, w.StepUS, w.NowUS, compute)
			}
			if w.Name == WhatIfHostOnTime && (w.StepUS < tc.hostOnTimeLo*w.NowUS || w.StepUS > tc.hostOnTimeHi*w.NowUS) {
				t.Errorf("%s: host never late: %.0f us of %.0f us", tc.sample, w.StepUS, w.NowUS)
			}
		}
	}
}
