package analyze

import "kinetoscope/ingest"

// traceBuilder makes small hand-written traces for tests.
type traceBuilder struct {
	t    *ingest.Trace
	corr int64
}

func newTraceBuilder() *traceBuilder {
	return &traceBuilder{t: &ingest.Trace{Path: "hand.json", Rank: 0, Strings: ingest.NewStrings()}}
}

func (b *traceBuilder) id(s string) ingest.StrID { return b.t.Strings.Intern(s) }

// annotate adds a CPU user annotation on thread 0.
func (b *traceBuilder) annotate(name string, start, dur int64) {
	b.t.Annotations.Append(ingest.Annotation{Start: start, Dur: dur, Name: b.id(name)})
}

// launch adds a CPU launch call at cpu and returns its correlation id.
func (b *traceBuilder) launch(api string, cpu int64) int64 {
	b.corr++
	b.t.Launches.Append(ingest.Launch{Start: cpu, Dur: 5, Correlation: b.corr, Name: b.id(api)})
	return b.corr
}

// kernel adds a GPU event with correlation corr on device 0.
func (b *traceBuilder) kernel(name string, kind ingest.GPUKind, corr, start, dur int64) {
	b.t.GPU.Append(ingest.GPUEvent{Start: start, Dur: dur, Correlation: corr, Name: b.id(name), Kind: kind, Coll: ingest.NoCollective})
}

// launched adds a kernel launched at cpu.
func (b *traceBuilder) launched(name string, cpu, start, dur int64) {
	b.kernel(name, ingest.KindKernel, b.launch("cudaLaunchKernel", cpu), start, dur)
}

func (b *traceBuilder) set() *ingest.Set {
	return &ingest.Set{Path: b.t.Path, Traces: []*ingest.Trace{b.t}}
}
