package analyze

import (
	"context"
	"runtime/trace"
)

// region marks a pass of the analysis as a region of a Go execution trace
// (kinetoscope bench --phase analyze --exectrace F) and returns its end:
// defer region("name")(). It costs a check when no trace is taken.
func region(name string) func() {
	return trace.StartRegion(context.Background(), name).End
}
