package crossrank

import (
	"bytes"

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
	return timeBaseFor(t.Meta.BaseTimeNS, t.GPU.At(0).Start)
}

// timeBaseFor returns the base to add to a trace time ts (ns) given the
// trace's baseTimeNanoseconds: baseNS when ts is relative, else 0.
func timeBaseFor(baseNS, ts int64) int64 {
	if baseNS > 0 && ts < epochFloorNS {
		return baseNS
	}
	return 0
}

// defaultClassify is the default Classifier: NCCL and RCCL kernels, of the kind
// named by their collective args when present, else by the kernel name.
// Kinds are the analyze bucket ids: allreduce, allgather, reducescatter,
// alltoall, broadcast, sendrecv and comm_other. It does not allocate.
func defaultClassify(t *ingest.Trace, _ int, ev *ingest.GPUEvent) (string, bool) {
	if ev.Kind != ingest.KindKernel {
		return "", false
	}
	raw := t.Name(ev.Name)
	if !hasCCL(raw) {
		return "", false
	}
	var buf [nameWindow]byte
	name := fold(&buf, raw)
	if !bytes.Contains(name, []byte("nccl")) && !bytes.Contains(name, []byte("rccl")) {
		return "", false
	}
	if ev.Coll >= 0 && int(ev.Coll) < len(t.Collectives) {
		if k := kindOf(t.Name(t.Collectives[ev.Coll].Name)); k != "comm_other" {
			return k, true
		}
	}
	return kindOfFolded(name), true
}

// hasCCL says whether s contains "ccl" in any case: a quick test that
// rules out most kernels before the full one.
func hasCCL(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i]|0x20 == 'c' && s[i+1]|0x20 == 'c' && s[i+2]|0x20 == 'l' {
			return true
		}
	}
	return false
}

// nameWindow is how much of a name Classify and kindOf look at: the
// collective is named near the start of NCCL kernel names.
const nameWindow = 96

// fold writes the first nameWindow bytes of s to buf in lower case without
// underscores and returns them.
func fold(buf *[nameWindow]byte, s string) []byte {
	n := 0
	for i := 0; i < len(s) && n < len(buf); i++ {
		c := s[i]
		if c == '_' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

// kindOf maps a collective or kernel name to a collective kind.
func kindOf(name string) string {
	var buf [nameWindow]byte
	return kindOfFolded(fold(&buf, name))
}

// kinds maps name fragments (folded: lower case, no underscores) to kinds,
// first match wins.
var kinds = [...]struct{ frag, kind string }{
	{"allreduce", "allreduce"},
	{"allgather", "allgather"},
	{"reducescatter", "reducescatter"},
	{"alltoall", "alltoall"},
	{"broadcast", "broadcast"},
	{"sendrecv", "sendrecv"},
	{"send", "sendrecv"},
	{"recv", "sendrecv"},
}

func kindOfFolded(n []byte) string {
	for _, k := range kinds {
		if bytes.Contains(n, []byte(k.frag)) {
			return k.kind
		}
	}
	return "comm_other"
}

// EpochNS returns a time ts of t (ns, t's clock) as Unix time in ns, and
// whether t's clock is the epoch's at all (see epochFloorNS): false for a
// trace of relative times without baseTimeNanoseconds.
func EpochNS(t *ingest.Trace, ts int64) (int64, bool) {
	abs := TimeBaseNS(t) + ts
	return abs, abs >= epochFloorNS
}
