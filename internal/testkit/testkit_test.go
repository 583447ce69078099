package testkit

import "testing"

// fatalTB records a Fatal instead of ending the test.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Fatal(args ...any) { f.failed = true }

// TestMissingSampleFails: a sample that is not there fails the test, never
// skips it; one that is hands back its path.
func TestMissingSampleFails(t *testing.T) {
	tb := &fatalTB{TB: t}
	if got := Public(tb, "hta-sampled-rank-0.json.gz"); got == "" || tb.failed {
		t.Errorf("Public of a bundled trace: %q, failed %v", got, tb.failed)
	}
	Public(tb, "no-such-trace.json.gz")
	if !tb.failed {
		t.Error("Public did not fail the test on a missing trace")
	}
}
