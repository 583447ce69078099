package render

import (
	"fmt"

	"kinetoscope/analyze"
)

// fakeBucket is one bucket of the made-up decode step: time and calls per
// layer.
type fakeBucket struct {
	id         analyze.BucketID
	usPerLayer float64
	perLayer   int
}

// fakeDecode is a made-up MoE decode step, per layer.
var fakeDecode = []fakeBucket{
	{analyze.AllReduce, 180, 2},
	{analyze.MarlinGEMM, 95, 4},
	{analyze.Attention, 22, 1},
	{analyze.MoERouting, 18, 3},
	{analyze.Norm, 6, 2},
	{analyze.Activation, 5, 1},
	{analyze.Elementwise, 9, 4},
	{analyze.Memcpy, 2, 1},
	{analyze.Other, 1, 1},
}

// fakeReport builds a hand-made report of ranks ranks, each with one
// prefill step and decode decode steps of a model with layers layers.
// Rank r's AllReduce is slower by r*2% so ranks differ.
func fakeReport(ranks, decode, layers int) *analyze.Report {
	r := &analyze.Report{Source: "fake/run", Buckets: analyze.Buckets()}
	for i := range ranks {
		r.Ranks = append(r.Ranks, fakeRank(i, ranks, decode, layers))
	}
	h := r.Ranks[0].Decode.Buckets[analyze.AllReduce]
	r.Headline = &analyze.Headline{Bucket: analyze.AllReduce, Label: "AllReduce", ShareOfKernel: h.ShareOfKernel,
		USPerStep: h.USPerStep, CallsPerStep: h.CallsPerStep, Steps: decode, Ranks: ranks, Phase: "decode",
		SpanMeanUS: r.Ranks[0].Decode.SpanMeanUS, SpanP50US: r.Ranks[0].Decode.SpanP50US,
		BusyShare: 100 * r.Ranks[0].Decode.BusyUS / r.Ranks[0].Decode.SpanUS}
	if ranks > 1 {
		r.Collectives = &analyze.Collectives{Matched: decode * layers * 2, Clock: "shared",
			Straggler: []analyze.Straggler{{Rank: ranks - 1, LateCount: decode * layers, LateUS: 1234.5}}}
	}
	return r
}

func fakeRank(rank, ranks, decode, layers int) analyze.Rank {
	rk := analyze.Rank{Rank: rank, File: fmt.Sprintf("rank%d.pt.trace.json.gz", rank), WorldSize: ranks,
		Device: "NVIDIA L40S", StepSource: "vllm", StepEvidence: "execute_model annotations",
		LaunchDelay:  analyze.LaunchDelay{Count: 1000, P50US: 12.5, P99US: 80},
		Unclassified: []analyze.KernelStat{{Name: "my_custom_kernel<float, 128>", Bucket: analyze.Other, Count: decode * layers, US: float64(decode*layers) * 1.0, MeanUS: 1, P50US: 1, P99US: 1.4}},
		TopKernels:   map[analyze.BucketID][]analyze.KernelStat{}}
	slow := 1 + 0.02*float64(rank)
	start := 0.0
	for s := range decode + 1 {
		phase, scale := "decode", 1.0
		if s == 0 {
			phase, scale = "prefill", 6.0
		}
		if s == decode/2 {
			scale = 1.8 // an outlier
		}
		st := analyze.Step{Index: s, Name: "execute_model", Phase: phase, PhaseSource: "annotation", StartUS: start,
			Buckets: map[analyze.BucketID]analyze.BucketStat{}}
		for _, b := range fakeDecode {
			us := b.usPerLayer * float64(layers) * scale
			if b.id == analyze.AllReduce {
				us *= slow
			}
			st.Buckets[b.id] = analyze.BucketStat{US: us, Count: b.perLayer * layers}
			st.KernelUS += us
			st.Kernels += b.perLayer * layers
		}
		st.BusyUS = st.KernelUS
		st.SpanUS = st.KernelUS * 1.04
		st.IdleUS = st.SpanUS - st.BusyUS
		start += st.SpanUS + 200
		rk.Steps = append(rk.Steps, st)
	}
	rk.Decode = fakePhase(rk.Steps[1:])
	pre := fakePhase(rk.Steps[:1])
	rk.Prefill = &pre
	if ranks > 1 {
		c := rk.Decode.Buckets[analyze.AllReduce].US
		wait := c * 0.6 / slow
		rk.Decode.Comm = &analyze.Comm{KernelUS: c, TransferUS: c - wait, WaitUS: wait,
			TransferShareNetOfWait: 100 * (c - wait) / (rk.Decode.KernelUS - wait), WaitShare: 100 * wait / rk.Decode.KernelUS}
	}
	for _, b := range fakeDecode {
		bs := rk.Decode.Buckets[b.id]
		rk.TopKernels[b.id] = []analyze.KernelStat{{Name: string(b.id) + "_kernel_main", Bucket: b.id, Count: bs.Count, US: bs.US, MeanUS: bs.US / float64(bs.Count), P50US: bs.US / float64(bs.Count), P99US: 1.5 * bs.US / float64(bs.Count)}}
	}
	return rk
}

// fakePhase aggregates steps the way analyze does.
func fakePhase(steps []analyze.Step) analyze.PhaseSummary {
	p := analyze.Aggregate(steps, nil)
	p.SpanP50US = p.SpanMeanUS * 0.98
	p.SpanP90US = p.SpanMeanUS * 1.1
	return p
}

// fakeTimeline is a made-up decode step: per layer, communication on
// stream 20 and compute on stream 7, with a memcpy on stream 9.
func fakeTimeline(layers int) *TimelineInput {
	in := &TimelineInput{Rank: 0, Step: 5, Phase: "decode", StartUS: 1e6}
	t := 1e6
	for range layers {
		for _, b := range fakeDecode {
			stream := 7
			switch b.id {
			case analyze.AllReduce:
				stream = 20
			case analyze.Memcpy:
				stream = 9
			}
			for range b.perLayer {
				d := b.usPerLayer / float64(b.perLayer)
				in.Kernels = append(in.Kernels, TimelineKernel{Stream: stream, StartUS: t, DurUS: d, Bucket: b.id, Name: string(b.id) + "_kernel"})
				t += d + 0.5
			}
		}
	}
	return in
}
