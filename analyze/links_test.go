package analyze

import (
	"testing"

	"kinetoscope/ingest"
)

func TestLaunchIndex(t *testing.T) {
	for _, corrs := range [][]int64{{3, 4, 5, 7}, {3, 4, 5, 7_000_000_000}} {
		b := newTraceBuilder()
		for _, c := range corrs {
			b.t.Launches.Append(ingest.Launch{Correlation: c, Kind: ingest.LaunchDriver})
		}
		// the runtime call wins over the driver call of the same correlation
		b.t.Launches.Append(ingest.Launch{Correlation: 5, Kind: ingest.LaunchRuntime})
		b.t.Launches.Append(ingest.Launch{Correlation: 0, Kind: ingest.LaunchRuntime})
		x := newLaunchIndex(b.t)
		want := map[int64]int32{3: 0, 4: 1, 5: 4, corrs[3]: 3, 6: -1, 0: -1, -2: -1, 8_000_000_000: -1}
		for c, w := range want {
			if got := x.find(c); got != w {
				t.Errorf("correlations %v: find(%d) = %d, want %d", corrs, c, got, w)
			}
		}
	}
}
