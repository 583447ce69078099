package analyze

import "kinetoscope/ingest"

// Context sources of a step (Step.ContextSource).
const (
	ContextAnnotation   = "annotation"
	ContextRecordShapes = "record_shapes"
)

// shapeContexts returns, per step, the KV length summed over the step's
// requests as its first attention op with a recorded key length gives it
// (record_shapes: the op's batch times its key length per sequence, as
// ingest.Trace.Attention reads them); 0 for a step without one (no shapes,
// or packed and paged ops, whose lengths the profiler does not record). An
// op belongs to the step in which it ran on the CPU.
func (p *rankPass) shapeContexts() []int64 {
	out := make([]int64, len(p.steps))
	hint := 0
	for _, op := range p.t.Shapes.Ops.All() {
		if op.Kind != ingest.OpAttention {
			continue
		}
		s := p.stepAt(op.Start, &hint)
		if s < 0 || out[s] > 0 {
			continue
		}
		if a, ok := p.t.Attention(op); ok && a.Batch > 0 && a.KVLen > 0 {
			out[s] = a.Batch * a.KVLen
		}
	}
	return out
}
