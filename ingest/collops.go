package ingest

import "bytes"

// collectiveOpPrefixes are the libraries whose custom ops run collectives
// without c10d: vLLM registers all_reduce, all_gather and reduce_scatter
// as torch ops (vllm/distributed/parallel_state.py,
// direct_register_custom_op), whose CudaCommunicator calls NCCL or RCCL
// through pynccl (device_communicators/cuda_communicator.py); SGLang's
// inplace_all_reduce, outplace_all_reduce and reg_all_gather_into_tensor
// do the same (python/sglang/srt/distributed/parallel_state.py).
var collectiveOpPrefixes = [][]byte{[]byte("vllm::"), []byte("sglang::")}

// collectiveOpWords are the collectives such an op's name says.
var collectiveOpWords = [][]byte{[]byte("all_reduce"), []byte("all_gather"), []byte("reduce_scatter"), []byte("all_to_all")}

// collectiveOp says whether a cpu_op of this raw name is a serving
// engine's collective custom op (vllm::all_reduce,
// sglang::outplace_all_reduce). Such an op is the only CPU event that says
// which collective the NCCL or RCCL kernels it launches run: there is no
// record_param_comms op and no nccl:NAME annotation (pynccl calls NCCL
// directly), and RCCL's kernels are all named ncclDevKernel_Generic. Kept
// in Trace.CollectiveOps.
func collectiveOp(name []byte) bool {
	for _, p := range collectiveOpPrefixes {
		if bytes.HasPrefix(name, p) {
			for _, w := range collectiveOpWords {
				if bytes.Contains(name[len(p):], w) {
					return true
				}
			}
		}
	}
	return false
}
