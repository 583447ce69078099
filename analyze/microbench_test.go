package analyze

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// microbenchRow is one row of a sweep's microbench.json: one GEMM, Marlin
// INT4 GEMM or decode attention shape timed alone with CUDA events (L2
// flushed, the median of 20 calls), with the bytes it must move.
type microbenchRow struct {
	Kind    string  `json:"kind"`
	Proj    string  `json:"proj"`
	M       int64   `json:"m"`
	N       int64   `json:"n"`
	K       int64   `json:"k"`
	Batch   int64   `json:"batch"`
	Context int64   `json:"context"`
	MS      float64 `json:"ms"`
	Bytes   float64 `json:"bytes"`
	TBPerS  float64 `json:"tb_per_s"`
}

// eventOverheadUS is the most a microbenchmark call's time (CUDA events
// recorded around one call) is taken to exceed its kernels' own time, as
// the profiler measures it: the launch between the first event and the
// first kernel, and the gap to the second event.
const eventOverheadUS = 3.5

// shapeRate is the work and kernel time of the trace's ops of one shape.
type shapeRate struct {
	ops   int
	bytes float64
	ns    int64
}

// traceShapeRates sums, per microbench shape key, the bytes (the
// roofline's formulas) and kernel time (every kernel an op launched) of
// the ops of the sweep trace at dir in steps with roofline rows.
func traceShapeRates(t *testing.T, dir string) map[string]*shapeRate {
	set, r := analyzePath(t, dir)
	cls, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*shapeRate{}
	for ri, tr := range set.Traces {
		p := stepPass(tr, cls, nil)
		_, opNS := linkOps(p, r.Ranks[ri].Steps)
		memsetNS := map[int64]int64{} // by External id: the microbenchmark's call times them too
		for _, ev := range tr.GPU.All() {
			if ev.Kind == ingest.KindMemset {
				memsetNS[ev.ExternalID] += ev.Dur
			}
		}
		for j, ns := range opNS {
			op := tr.Shapes.Ops.At(int(j))
			key := ""
			switch name := tr.Name(op.Name); {
			case name == "aten::mm" && len(op.Inputs) == 2:
				a, b := op.Inputs[0].Dims, op.Inputs[1].Dims
				key = fmt.Sprintf("gemm %d %d %d", a[0], b[1], a[1])
			case name == "kts::marlin_gemm":
				a, c := op.Inputs[0].Dims, op.Inputs[2].Dims
				key = fmt.Sprintf("marlin_int4_gemm %d %d %d", a[0], c[1], a[1])
			default:
				if at, ok := tr.Attention(op); ok && at.QLen*at.Heads == 32 { // decode: one token of 32 query heads
					key = fmt.Sprintf("decode_attention %d %d", at.Batch, at.KVLen)
				}
			}
			if key == "" {
				continue
			}
			w := workOf(tr, op)
			if w.why != "" {
				t.Fatalf("%s: %s: no work: %s", dir, key, w.why)
			}
			s := out[key]
			if s == nil {
				s = &shapeRate{}
				out[key] = s
			}
			s.ops++
			s.bytes += w.bytes
			s.ns += ns + memsetNS[op.ExternalID]
		}
	}
	return out
}

// TestRooflineAgainstMicrobench checks the achieved TB/s of every GEMM,
// Marlin INT4 GEMM and decode attention shape of the sweep traces
// (batch_sweep, marlin_sweep: record_shapes on, one H200) against the
// microbenchmark of the same shapes that came with them: the bytes the
// roofline counts are the microbenchmark's (to 0.1%: Marlin's workspace
// is counted here), and its rate, over every op of the shape in the
// trace, is within 10% of the microbenchmark's, or faster by no more than
// eventOverheadUS a call: the microbenchmark times a call with CUDA events
// around it, which hold the launch too (1.5-3 us on these shapes, 10-30%
// of the shortest), where the profiler times the kernels themselves. An
// op's time is every kernel and memset it launched, as the
// microbenchmark's call holds them.
func TestRooflineAgainstMicrobench(t *testing.T) {
	compared := 0
	for _, name := range sampletraces.RealSweeps() {
		dir := testkit.Real(t, name)
		var bench struct {
			Rows []microbenchRow `json:"rows"`
		}
		if err := sampletraces.ReadJSON(filepath.Join(dir, "microbench.json"), &bench); err != nil {
			t.Fatal(err)
		}
		got := traceShapeRates(t, dir)
		var lines []string
		for _, b := range bench.Rows {
			key := fmt.Sprintf("%s %d %d %d", b.Kind, b.M, b.N, b.K)
			if b.Kind == "decode_attention" {
				key = fmt.Sprintf("%s %d %d", b.Kind, b.Batch, b.Context)
			}
			s := got[key]
			if s == nil {
				t.Logf("%s: microbench shape %s (%s) not in the trace (the prefill's logits are of its last tokens only)", name, key, b.Proj)
				continue
			}
			perOp := s.bytes / float64(s.ops)
			if math.Abs(perOp-b.Bytes) > 1e-3*b.Bytes {
				t.Errorf("%s %s: %.0f bytes an op, the microbenchmark %.0f", name, key, perOp, b.Bytes)
			}
			tbps := s.bytes / float64(s.ns) / 1e3
			dev := 100 * (tbps - b.TBPerS) / b.TBPerS
			lines = append(lines, fmt.Sprintf("%s %-28s %-8s %3d ops  trace %.3f TB/s  microbench %.3f TB/s  %+.1f%%  dt %.2f us", name, key, b.Proj, s.ops, tbps, b.TBPerS, dev, b.MS*1000-float64(s.ns)/float64(s.ops)/1000))
			faster := b.MS*1000 - float64(s.ns)/float64(s.ops)/1000 // us
			if math.Abs(dev) > 10 && (faster < 0 || faster > eventOverheadUS) {
				t.Errorf("%s %s (%s): %.3f TB/s in the trace, %.3f in the microbenchmark (%+.1f%%)", name, key, b.Proj, tbps, b.TBPerS, dev)
			}
			compared++
		}
		sort.Strings(lines)
		for _, l := range lines {
			t.Log(l)
		}
	}
	if compared < 80 {
		t.Fatalf("only %d shapes compared", compared)
	}
}
