package crossrank

import (
	"strings"

	"kinetoscope/ingest"
)

// epochFloorNS separates the two kinds of trace time: Kineto writes either
// Unix-epoch microseconds (ns here: about 1.7e18 today) or times relative to
// baseTimeNanoseconds (a host's monotonic clock: days to months, well under
// 1e17 ns, which is 1973).
const epochFloorNS = int64(1e17)

// TimeBaseNS returns what to add to t's times to make them absolute: 0 when
// the trace already uses epoch time, Meta.BaseTimeNS when its times are
// relative to baseTimeNanoseconds. The first GPU event decides.
func TimeBaseNS(t *ingest.Trace) int64 {
	if t.GPU.Len() == 0 {
		return 0
	}
	return TimeBaseFor(t.Meta.BaseTimeNS, t.GPU.At(0).Start)
}

// TimeBaseFor returns the base to add to a trace time ts (ns) given the
// trace's baseTimeNanoseconds: baseNS when ts is relative, else 0.
func TimeBaseFor(baseNS, ts int64) int64 {
	if baseNS > 0 && ts < epochFloorNS {
		return baseNS
	}
	return 0
}

// Classify is the default Classifier: NCCL and RCCL kernels, of the kind
// named by their collective args when present, else by the kernel name.
// Kinds are the analyze bucket ids: allreduce, allgather, reducescatter,
// alltoall, broadcast, sendrecv and comm_other.
func Classify(t *ingest.Trace, ev *ingest.GPUEvent) (string, bool) {
	if ev.Kind != ingest.KindKernel {
		return "", false
	}
	name := strings.ToLower(t.Name(ev.Name))
	if !strings.Contains(name, "nccl") && !strings.Contains(name, "rccl") {
		return "", false
	}
	if ev.Coll >= 0 && int(ev.Coll) < len(t.Collectives) {
		if k := KindOf(t.Name(t.Collectives[ev.Coll].Name)); k != "comm_other" {
			return k, true
		}
	}
	return KindOf(name), true
}

// KindOf maps a collective or kernel name to a collective kind.
func KindOf(name string) string {
	n := strings.ReplaceAll(strings.ToLower(name), "_", "")
	switch {
	case strings.Contains(n, "allreduce"):
		return "allreduce"
	case strings.Contains(n, "allgather"):
		return "allgather"
	case strings.Contains(n, "reducescatter"):
		return "reducescatter"
	case strings.Contains(n, "alltoall"):
		return "alltoall"
	case strings.Contains(n, "broadcast"):
		return "broadcast"
	case strings.Contains(n, "sendrecv"), strings.Contains(n, "send"), strings.Contains(n, "recv"):
		return "sendrecv"
	}
	return "comm_other"
}
