package diff

import (
	"kinetoscope/analyze"
)

// stepSpec describes one hand-made step: span and bucket times in µs.
type stepSpec struct {
	phase   string
	span    float64
	buckets map[analyze.BucketID]float64
	calls   int // calls per bucket
}

// makeRank builds a rank from step specs, with the kernel time and busy time
// the buckets' sum.
func makeRank(rank int, device string, steps []stepSpec, kernels map[analyze.BucketID][]analyze.KernelStat) analyze.Rank {
	rk := analyze.Rank{Rank: rank, WorldSize: 2, Device: device, StepSource: "vllm", TopKernels: kernels}
	for i, sp := range steps {
		st := analyze.Step{Index: i, Phase: sp.phase, SpanUS: sp.span, Buckets: map[analyze.BucketID]analyze.BucketStat{}}
		for id, us := range sp.buckets {
			st.Buckets[id] = analyze.BucketStat{US: us, Count: sp.calls}
			st.KernelUS += us
			st.Kernels += sp.calls
		}
		st.BusyUS = st.KernelUS
		st.IdleUS = st.SpanUS - st.BusyUS
		rk.Steps = append(rk.Steps, st)
	}
	return rk
}

// decodeSteps makes n decode steps whose span and AllReduce time are base
// plus a small deterministic jitter, GEMM a constant.
func decodeSteps(n int, span, allreduce, gemm, jitter float64) []stepSpec {
	out := make([]stepSpec, n)
	for i := range out {
		j := jitter * float64((i*7)%5-2) / 2 // -jitter..+jitter
		out[i] = stepSpec{
			phase: "decode",
			span:  span + j,
			buckets: map[analyze.BucketID]float64{
				analyze.AllReduce: allreduce + j,
				analyze.GEMM:      gemm,
			},
			calls: 10,
		}
	}
	return out
}

// makeReport wraps ranks into a report.
func makeReport(src string, ranks ...analyze.Rank) *analyze.Report {
	return &analyze.Report{Source: src, Buckets: analyze.Buckets(), Ranks: ranks}
}
