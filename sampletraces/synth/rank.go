package synth

import (
	"strconv"
	"strings"
)

// frame is one python_function frame of a chain.
type frame struct {
	name   string
	module int64 // "Python module id", -1 for plain functions
}

// gpuStream is the CUDA stream every GPU op runs on.
const gpuStream = 7

// rankWriter writes one rank's trace.
type rankWriter struct {
	eventWriter
	cfg    *Config
	sim    *simulator
	rank   int
	cpuPID int
	pgRank string // "Process Group Ranks" text
	corr   int64  // last correlation id
	ext    int64  // last External id
	ev     int64  // last Ev Idx
	py     int64  // last Python id
	chains map[*phasePlan][][]frame
	// prepChain and syncChain are the chains of input preparation and of the
	// host's wait for sampled tokens.
	prepChain, syncChain []frame
	acc                  rankAccum
}

// cpuPIDOf returns the host process id of rank r.
func cpuPIDOf(r int) int { return 2_913_049 + 97*r }

// newRankWriter prepares the writer of rank r.
func newRankWriter(cfg *Config, m *model, steps []stepInfo, r int, s sink) *rankWriter {
	w := &rankWriter{cfg: cfg, rank: r, cpuPID: cpuPIDOf(r)}
	w.sink = s
	w.b = make([]byte, 0, flushSize+64<<10)
	w.sim = newSimulator(cfg, m, steps)
	w.pgRank = groupRanks(cfg.Ranks)
	w.chains = map[*phasePlan][][]frame{}
	for _, pp := range w.sim.plans {
		cs := make([][]frame, len(pp.units))
		for i, u := range pp.units {
			if u.launch >= 0 {
				cs[i] = cutChain(pp.launches[u.launch].stack, cfg.PythonFunctions)
			} else {
				cs[i] = cutChain(graphStack(), cfg.PythonFunctions)
			}
		}
		w.chains[pp] = cs
	}
	w.prepChain = cutChain(prepStack(), cfg.PythonFunctions)
	w.syncChain = cutChain(syncStack(), cfg.PythonFunctions)
	w.acc.init(len(steps))
	return w
}

// groupRanks formats "[0, 1, ..., n-1]".
func groupRanks(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// graphStack is the python path to a CUDA graph replay.
func graphStack() []string {
	return []string{"vllm/compilation/cuda_graph.py(210): __call__", "torch/cuda/graphs.py(135): replay",
		"<built-in method replay of PyCapsule object at 0x7f5e3c0d4b30>"}
}

// prepStack is the python path of input preparation work.
func prepStack() []string {
	return []string{"vllm/v1/worker/gpu_model_runner.py(1207): _prepare_inputs",
		"vllm/v1/worker/gpu_model_runner.py(1351): _build_attention_metadata",
		"vllm/v1/attention/backends/mla/common.py(652): build",
		"vllm/v1/attention/backends/utils.py(141): split_decodes_and_prefills",
		"<built-in method item of Tensor object at 0x7f5d9a4cc0f0>"}
}

// syncStack is the python path of the host waiting for sampled tokens.
func syncStack() []string {
	return []string{"vllm/v1/worker/gpu_model_runner.py(2398): _to_list",
		"torch/cuda/streams.py(226): synchronize",
		"<built-in method synchronize of PyCapsule object at 0x7f5e3c0d4c10>"}
}

// cutChain returns the innermost k frames of stack, padded at the outer
// end with module call frames when the stack is shorter than k.
func cutChain(stack []string, k int) []frame {
	out := make([]frame, 0, k)
	for i := 0; len(stack)+i < k; i++ {
		name := callImpl
		if i%2 == 0 {
			name = "torch/nn/modules/module.py(1773): _wrapped_call_impl"
		}
		out = append(out, frame{name: name, module: -1})
	}
	if len(stack) > k {
		stack = stack[len(stack)-k:]
	}
	for _, s := range stack {
		out = append(out, frame{name: s, module: moduleID(s)})
	}
	return out
}

// moduleID returns the instance number of an "nn.Module: Class_N" frame,
// -1 for other frames.
func moduleID(name string) int64 {
	if !strings.HasPrefix(name, "nn.Module: ") {
		return -1
	}
	i := strings.LastIndexByte(name, '_')
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// nextEv returns the next Ev Idx.
func (w *rankWriter) nextEv() int64 {
	w.ev++
	return w.ev
}

// pyFrame writes one python_function event and returns its Python id.
func (w *rankWriter) pyFrame(f frame, ts, dur, parent int64) int64 {
	w.py++
	w.complete(catPython, f.name, w.cpuPID, w.cpuPID, ts, dur)
	w.argInt("Python parent id", parent, true)
	w.argInt("Python id", w.py, false)
	if f.module >= 0 {
		w.argInt("Python module id", f.module, false)
	}
	w.argInt("Ev Idx", w.nextEv(), false)
	w.closeArgs()
	return w.py
}

// chain writes nested frames inside [start, end) and returns the innermost
// frame's id (parent when there are none).
func (w *rankWriter) chain(fs []frame, start, end, parent int64) int64 {
	for j, f := range fs {
		off := int64(j) * chainStepNS
		parent = w.pyFrame(f, start+off, end-start-2*off, parent)
	}
	return parent
}

// cpuOp writes a cpu_op (or user_annotation) and returns its External id.
func (w *rankWriter) cpuOp(c category, name string, ts, dur int64) int64 {
	w.ext++
	w.complete(c, name, w.cpuPID, w.cpuPID, ts, dur)
	w.argInt("External id", w.ext, true)
	w.argInt("Record function id", 0, false)
	w.argInt("Ev Idx", w.nextEv(), false)
	w.closeArgs()
	return w.ext
}

// commOp writes a record_param_comms op with its collective args.
func (w *rankWriter) commOp(k *kernel, info stepInfo, ts, dur int64) int64 {
	w.ext++
	w.complete(catCPUOp, "record_param_comms", w.cpuPID, w.cpuPID, ts, dur)
	w.argInt("External id", w.ext, true)
	w.argInt("Record function id", 0, false)
	in, out := collElems(k, info, w.cfg.Ranks)
	w.argStr("Collective name", k.coll.name)
	w.argStr("dtype", "BFloat16")
	w.argInt("In msg nelems", in, false)
	w.argInt("Out msg nelems", out, false)
	w.argStr("In split size", "[]")
	w.argStr("Out split size", "[]")
	w.argInt("Global rank start", 0, false)
	w.argInt("Global rank stride", 1, false)
	w.argInt("Group size", int64(w.cfg.Ranks), false)
	w.argStr("Process Group Name", "0")
	w.argStr("Process Group Description", "default_pg")
	w.argStr("Process Group Ranks", w.pgRank)
	w.argInt("Rank", int64(w.rank), false)
	w.argInt("Ev Idx", w.nextEv(), false)
	w.closeArgs()
	return w.ext
}

// runtimeCall writes a cuda_runtime or cuda_driver event.
func (w *rankWriter) runtimeCall(api string, ts, dur, ext, corr int64) {
	c := catRuntime
	if api == apiDriverLaunchEx {
		c = catDriver
	}
	w.complete(c, api, w.cpuPID, w.cpuPID, ts, dur)
	first := true
	if ext > 0 {
		w.argInt("External id", ext, true)
		first = false
	}
	w.argInt("cbid", int64(cbid(api)), first)
	w.argInt("correlation", corr, false)
	w.closeArgs()
}
