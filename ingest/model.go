// Package ingest reads PyTorch profiler (Kineto) Chrome-trace files, profile
// directories and archives of them into a compact per-rank model that keeps
// only what analysis needs.
//
// Times in the model are int64 nanoseconds exactly as the trace gives them
// (microseconds with up to three decimals, parsed from the decimal text): the
// time base is the trace's own, see Meta.BaseTimeNS.
package ingest

// GPUKind says what a GPU event is.
type GPUKind uint8

// The GPU event kinds, from the event category.
const (
	KindKernel GPUKind = iota // category "kernel"
	KindMemcpy                // category "gpu_memcpy"
	KindMemset                // category "gpu_memset"
)

// String returns the trace category of the kind.
func (k GPUKind) String() string {
	switch k {
	case KindKernel:
		return "kernel"
	case KindMemcpy:
		return "gpu_memcpy"
	case KindMemset:
		return "gpu_memset"
	}
	return "unknown"
}

// NoCollective is GPUEvent.Coll for an event without collective args.
const NoCollective = -1

// GPUEvent is one kernel, memcpy or memset that ran on a GPU.
type GPUEvent struct {
	Start       int64 // ns, trace time base
	Dur         int64 // ns
	Correlation int64 // links to the CPU Launch with the same Correlation
	ExternalID  int64 // args "External id", 0 if absent
	Bytes       int64 // memcpy/memset bytes, 0 otherwise
	Name        StrID
	Stream      int32
	Device      int16
	Kind        GPUKind
	// Coll indexes Trace.Collectives when the event carries collective args
	// (NCCL kernels in recent traces); NoCollective otherwise.
	Coll int32
	// Grid and Block are the launch dimensions, 0 when absent.
	Grid  [3]int32
	Block [3]int32
}

// End returns the event's end time in ns.
func (e *GPUEvent) End() int64 { return e.Start + e.Dur }

// LaunchKind says which CPU API category a launch event came from.
type LaunchKind uint8

// Launch categories.
const (
	LaunchRuntime LaunchKind = iota // category "cuda_runtime" (also HIP runtime)
	LaunchDriver                    // category "cuda_driver"
)

// Launch is a CPU-side CUDA/HIP runtime or driver call that carries a
// correlation id: kernel launches, memcpy calls, cudaGraphLaunch and the like.
type Launch struct {
	Start       int64 // ns
	Dur         int64 // ns
	Correlation int64
	ExternalID  int64
	Name        StrID
	Thread      int32 // index into Trace.Threads
	Kind        LaunchKind
}

// Annotation is a CPU-side user annotation (category "user_annotation"),
// such as vLLM's execute_* step markers or ProfilerStep#N, or a GPU-side
// one (category "gpu_user_annotation") when GPU is true. GPU annotations are
// never work: they only mark ranges on a stream.
type Annotation struct {
	Start  int64 // ns
	Dur    int64 // ns
	Name   StrID
	Thread int32 // index into Trace.Threads (CPU); stream for GPU annotations
	GPU    bool
}

// CollectiveArgs are the collective fields that recent PyTorch versions
// attach to NCCL kernels and to record_param_comms CPU ops.
type CollectiveArgs struct {
	Name      StrID // "Collective name", e.g. allreduce, _allgather_base
	InNelems  int64 // "In msg nelems"
	OutNelems int64 // "Out msg nelems"
	Dtype     StrID // "dtype"
	GroupSize int32 // "Group size", 0 if absent
	PGName    StrID // "Process Group Name"
	PGRanks   StrID // "Process Group Ranks", the text as given
	SeqNum    int64 // "Seq", -1 if absent
}

// CommOp is a record_param_comms CPU op: the CPU side of a collective, with
// its args. ROCm traces carry the collective type only here.
type CommOp struct {
	Start      int64 // ns
	Dur        int64 // ns
	ExternalID int64
	Thread     int32
	Args       CollectiveArgs
}

// Embedding is one aten::embedding CPU op: the model's token lookup, run
// once a forward pass. Its indices' shape (record_shapes) counts the
// tokens the step ran.
type Embedding struct {
	Start  int64 // ns
	Dur    int64 // ns
	Thread int32
	// Tokens is the number of token ids looked up (the product of the
	// indices' dims); 0 when the trace recorded no shapes.
	Tokens int64
}

// Device describes one GPU from the trace's deviceProperties.
type Device struct {
	ID            int
	Name          string
	TotalMemBytes int64
	ComputeMajor  int
	ComputeMinor  int
	NumSMs        int
}

// ProcessGroup is one entry of distributedInfo.pg_config.
type ProcessGroup struct {
	Name  string // pg_name
	Desc  string // pg_desc
	Size  int
	Ranks []int
}

// Distributed is the trace's distributedInfo.
type Distributed struct {
	Present     bool
	Backend     string
	Rank        int
	WorldSize   int
	NCCLVersion string
	Groups      []ProcessGroup
}

// Meta holds the trace's top-level metadata.
type Meta struct {
	SchemaVersion   string
	BaseTimeNS      int64 // baseTimeNanoseconds, 0 if absent
	DisplayTimeUnit string
	Devices         []Device
	Distributed     Distributed
	// Versions holds version strings found at the top level: vllm_version,
	// cuda_runtime_version, cuda_driver_version, cupti_version,
	// hip_runtime_version, roctracer_version, torch_version, ... keyed by
	// their trace key.
	Versions map[string]string
	// Other top-level scalar keys, as text (trace_id, with_stack, ...).
	Other map[string]string
	// ProfilerLog holds the profiler's own warnings and errors: the strings
	// of the top-level "WARNING" and "ERROR" arrays that Kineto builds
	// without glog wrote into the trace until mid-2026 (such as "Dropped 12
	// activity records"), at most maxProfilerLog of them, each cut to
	// maxProfilerLine bytes.
	ProfilerLog []string
}

// Thread is a CPU thread or GPU stream row as named by metadata events.
type Thread struct {
	PID  string // pid as text (numbers and strings both occur)
	TID  string
	Name string // thread_name metadata, if any
}

// Counts are what the reader saw, including what it did not keep.
type Counts struct {
	Bytes             int64            // bytes read from the file (compressed if gzip)
	UncompressedBytes int64            // JSON bytes parsed
	Events            int64            // all trace events
	ByCategory        map[string]int64 // events by "cat" (phase M/i without cat counted under "" )
	PythonFunctions   int64            // python_function events, kept or not
	// UnreadableTimes counts events of kept categories dropped for a ts or
	// dur that did not parse (or an end past the int64 ns range);
	// NegativeDurs those dropped for a negative dur. Each also gives a
	// warning.
	UnreadableTimes int64
	NegativeDurs    int64
}

// Trace is one rank's trace file in compact form.
type Trace struct {
	Path       string // as opened; for archive members "archive!member"
	Rank       int    // -1 when unknown
	RankSource string // "distributedInfo", "filename", "assigned" (Options.Ranks) or "unknown"
	// Capture marks a CUDA-graph capture trace (under capture_traces/).
	Capture bool

	Meta    Meta
	Strings *Strings
	Threads []Thread
	// ProcessNames maps pid text to process_name metadata.
	ProcessNames map[string]string

	GPU         Chunks[GPUEvent]
	Launches    Chunks[Launch]
	Annotations Chunks[Annotation]
	// PythonCalls are the python_function events (with_stack traces) whose
	// function is an engine-step entry point (see stepMarkFunction), in
	// trace order; Modules (below) the nn.Module forwards; every other
	// python_function event is counted in Counts.PythonFunctions and
	// skipped unparsed.
	PythonCalls Chunks[Annotation]
	// Modules are the python_function events of nn.Module forwards
	// ("nn.Module: Attention_0", with_stack traces), in trace order: they
	// name the modules that launched kernels.
	Modules Chunks[Annotation]
	CommOps Chunks[CommOp]
	// Embeddings are the aten::embedding CPU ops, with the tokens of their
	// input when the trace recorded shapes.
	Embeddings Chunks[Embedding]
	// CollectiveOps are the serving engines' collective custom ops
	// (cpu_op vllm::all_reduce and the like, see collectiveOp): they hold
	// the launches of collectives that no record_param_comms op names.
	CollectiveOps Chunks[Annotation]
	// Shapes are the CPU ops analysis computes work from (GEMMs,
	// attention, MoE; see ShapedOp), with their inputs' shapes when the
	// trace recorded them.
	Shapes      Shapes
	Collectives []CollectiveArgs

	Counts   Counts
	Warnings []string
}

// Name returns the string for id.
func (t *Trace) Name(id StrID) string { return t.Strings.Get(id) }

// WorldSize returns distributedInfo.world_size, or 0 when unknown.
func (t *Trace) WorldSize() int { return t.Meta.Distributed.WorldSize }

// SetAside is a file that was read but holds nothing to analyse (no GPU
// events: vLLM's frontend trace, a CPU-only trace).
type SetAside struct {
	Path   string
	Reason string
	// Trace is what was read, for its counts; it has no GPU events.
	Trace *Trace
}

// FileError is a file that could not be read.
type FileError struct {
	Path string
	Err  error
	// Trace is what was read when the file was read but not used (its
	// rank is a duplicate); nil otherwise.
	Trace *Trace
}

// Error implements error.
func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// Set is everything read from one path: the execution traces by rank, the
// CUDA-graph capture traces kept apart, and what was set aside or failed.
type Set struct {
	Path     string
	Traces   []*Trace // execution traces, sorted by rank (unknown last)
	Captures []*Trace // CUDA-graph capture traces
	SetAside []SetAside
	Errors   []*FileError
}
