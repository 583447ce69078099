package synth

import (
	"fmt"
	"strconv"
)

// phase is a step's phase.
type phase uint8

const (
	phasePrefill phase = iota
	phaseDecode
)

// String returns the phase name used in truth.json.
func (p phase) String() string {
	if p == phasePrefill {
		return "prefill"
	}
	return "decode"
}

// Runtime and driver APIs with their CUPTI callback ids.
const (
	apiLaunchKernel   = "cudaLaunchKernel"
	apiMemcpyAsync    = "cudaMemcpyAsync"
	apiGraphLaunch    = "cudaGraphLaunch"
	apiEventSync      = "cudaEventSynchronize"
	apiDriverLaunchEx = "cuLaunchKernelEx"
)

// cbid returns the CUPTI callback id Kineto writes for api.
func cbid(api string) int {
	switch api {
	case apiLaunchKernel:
		return 211
	case apiMemcpyAsync:
		return 41
	case apiGraphLaunch:
		return 311
	case apiEventSync:
		return 126
	case apiDriverLaunchEx:
		return 652
	}
	return 0
}

// launch is one CPU launch unit: a python frame chain, a cpu_op and one or
// more GPU ops launched from it.
type launch struct {
	api     string
	cpuOp   string   // innermost cpu_op; "" for none
	stack   []string // python frames, outermost first, before cutting to K
	kernels []*kernel
	layer   int // decoder layer, -1 outside the layers
	// inGraph marks the model forward: replayed from the decode CUDA graph
	// when CUDA graphs are on, and inside the _model_forward frame.
	inGraph bool
}

// model is a model profile: its launch sequence per phase.
type model struct {
	name    string
	cat     *catalog
	layers  int
	prefill []launch
	decode  []launch
}

// modelByName checks that a model profile exists.
func modelByName(name string) (string, error) {
	switch name {
	case "kimi-k2.5":
		return name, nil
	}
	return "", fmt.Errorf("unknown model %q (have: kimi-k2.5)", name)
}

// newModel builds the launch sequences of the Kimi-K2.5-like model.
func newModel(cfg *Config) *model {
	m := &model{name: cfg.Model, cat: newCatalog(), layers: cfg.Layers}
	m.prefill = m.sequence(phasePrefill)
	m.decode = m.sequence(phaseDecode)
	return m
}

// launches returns the launch sequence of phase p.
func (m *model) launches(p phase) []launch {
	if p == phasePrefill {
		return m.prefill
	}
	return m.decode
}

// sequence returns every launch of one step of phase p, in order.
func (m *model) sequence(p phase) []launch {
	c := m.cat
	var ls []launch
	ls = append(ls, copyIn(c), copyIn(c))
	ls = append(ls, graphed(launch{api: apiLaunchKernel, cpuOp: "aten::index_select", kernels: []*kernel{c.embedding}, layer: -1,
		stack: []string{"nn.Module: DeepseekV2Model_0", callImpl, "vllm/model_executor/models/deepseek_v2.py(1125): forward",
			"nn.Module: VocabParallelEmbedding_0", callImpl, "vllm/model_executor/layers/vocab_parallel_embedding.py(471): forward",
			"torch/nn/functional.py(2551): embedding", "<built-in method embedding of type object at 0x7f5e3c1a2d40>"}}))
	for l := 0; l < m.layers; l++ {
		ls = append(ls, m.attention(l, p)...)
		if l == 0 {
			ls = append(ls, m.denseMLP(l, p)...)
		} else {
			ls = append(ls, m.moe(l, p)...)
		}
	}
	ls = append(ls, graphed(norm(c.fusedAddRMSNorm, -1, "fused_add_rms_norm")))
	return append(ls, m.sampler()...)
}

// Frames shared by many stacks.
const (
	callImpl = "torch/nn/modules/module.py(1784): _call_impl"
	opsCall  = "torch/_ops.py(1243): __call__"
	customOp = "vllm/model_executor/custom_op.py(47): forward"
)

// builtin returns the frame of a pybind11 custom op.
func builtin(fn string) string {
	return "<built-in method " + fn + " of PyCapsule object at 0x7f5e3c0b9e40>"
}

// module returns an nn.Module frame name.
func module(class string, layer int) string {
	if layer < 0 {
		layer = 0
	}
	return "nn.Module: " + class + "_" + strconv.Itoa(layer)
}

// graphed marks a launch as part of the decode CUDA graph.
func graphed(l launch) launch {
	l.inGraph = true
	return l
}

// norm is an RMSNorm launch.
func norm(k *kernel, layer int, fn string) launch {
	return graphed(launch{api: apiLaunchKernel, cpuOp: "_C::" + fn, kernels: []*kernel{k}, layer: layer,
		stack: []string{module("RMSNorm", layer), callImpl, customOp,
			"vllm/model_executor/layers/layernorm.py(255): forward_cuda",
			"vllm/model_executor/layers/layernorm.py(31): " + fn,
			"vllm/_custom_ops.py(326): " + fn, opsCall, builtin(fn)}})
}

// marlin is a dense Marlin W4A16 GEMM launch from a linear layer.
func marlin(k *kernel, layer int, class string) launch {
	return graphed(launch{api: apiLaunchKernel, cpuOp: "_C::gptq_marlin_gemm", kernels: []*kernel{k}, layer: layer,
		stack: []string{module(class, layer), callImpl,
			"vllm/model_executor/layers/linear.py(1362): forward",
			"vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py(781): apply",
			"vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16.py(214): apply_weights",
			"vllm/model_executor/layers/quantization/kernels/mixed_precision/marlin.py(160): apply_weights",
			"vllm/model_executor/layers/quantization/utils/marlin_utils.py(458): apply_gptq_marlin_linear",
			"vllm/_custom_ops.py(1013): gptq_marlin_gemm", opsCall, builtin("gptq_marlin_gemm")}})
}

// mlaFrames returns the frames down to the MLA attention backend.
func mlaFrames(layer int, tail ...string) []string {
	s := []string{module("MLAAttention", layer), callImpl, "vllm/attention/layer.py(561): forward",
		"vllm/v1/attention/backends/mla/common.py(1771): forward"}
	return append(s, tail...)
}

// attention returns the launches of one layer's MLA attention block,
// ending with the AllReduce after o_proj and the post-attention norm.
func (m *model) attention(l int, p phase) []launch {
	c := m.cat
	first := norm(c.fusedAddRMSNorm, l, "fused_add_rms_norm")
	if l == 0 {
		first = norm(c.rmsNorm, l, "rms_norm")
	}
	ls := []launch{first,
		marlin(c.marlinQKVA, l, "MergedColumnParallelLinear"),
		norm(c.rmsNorm, l, "rms_norm"),
		norm(c.rmsNorm, l, "rms_norm"),
		marlin(c.marlinSmall, l, "ColumnParallelLinear"),
	}
	rope := graphed(launch{api: apiLaunchKernel, cpuOp: "_C::rotary_embedding", kernels: []*kernel{c.rotary}, layer: l,
		stack: []string{module("DeepseekScalingRotaryEmbedding", l), callImpl, customOp,
			"vllm/model_executor/layers/rotary_embedding/base.py(170): forward_cuda",
			"vllm/_custom_ops.py(301): rotary_embedding", opsCall, builtin("rotary_embedding")}})
	cache := graphed(launch{api: apiLaunchKernel, cpuOp: "_C_cache_ops::concat_and_cache_mla", kernels: []*kernel{c.concatCacheMLA}, layer: l,
		stack: mlaFrames(l, "vllm/_custom_ops.py(2104): concat_and_cache_mla", opsCall, builtin("concat_and_cache_mla"))})
	if p == phasePrefill {
		ls = append(ls, rope, cache, marlin(c.marlinKVB, l, "ColumnParallelLinear"),
			graphed(launch{api: apiLaunchKernel, cpuOp: "_vllm_fa3_C::fwd", kernels: []*kernel{c.flashAttnPrefill}, layer: l,
				stack: mlaFrames(l, "vllm/v1/attention/backends/mla/common.py(1551): _forward_prefill",
					"vllm/vllm_flash_attn/flash_attn_interface.py(281): flash_attn_varlen_func", opsCall, builtin("fwd"))}))
	} else {
		ls = append(ls, bmm(c.bmmUK, l, "_q_proj_and_k_up_proj"), rope, cache,
			graphed(launch{api: apiLaunchKernel, cpuOp: "_flashmla_C::fwd_kvcache_mla", kernels: []*kernel{c.flashMLA, c.flashMLACombine}, layer: l,
				stack: mlaFrames(l, "vllm/v1/attention/backends/mla/flashmla.py(246): _forward_decode",
					"vllm/attention/ops/flashmla.py(111): flash_mla_with_kvcache", opsCall, builtin("fwd_kvcache_mla"))}),
			bmm(c.bmmUV, l, "_v_up_proj"))
	}
	return append(ls, marlin(c.marlinOProj, l, "RowParallelLinear"), allReduce(c, l, p),
		norm(c.fusedAddRMSNorm, l, "fused_add_rms_norm"))
}

// bmm is one of MLA's absorbed up-projection batched GEMMs.
func bmm(k *kernel, layer int, fn string) launch {
	return graphed(launch{api: apiLaunchKernel, cpuOp: "aten::bmm", kernels: []*kernel{k}, layer: layer,
		stack: mlaFrames(layer, "vllm/v1/attention/backends/mla/common.py(1207): "+fn,
			"<built-in method bmm of type object at 0x7f5e3c1a2d40>")})
}

// allReduce is the tensor-parallel AllReduce after a row-parallel layer.
func allReduce(c *catalog, layer int, p phase) launch {
	k := c.allReduceLL
	if p == phasePrefill {
		k = c.allReduceSimple
	}
	return graphed(launch{api: apiDriverLaunchEx, cpuOp: "record_param_comms", kernels: []*kernel{k}, layer: layer,
		stack: []string{"vllm/distributed/communication_op.py(14): tensor_model_parallel_all_reduce",
			"vllm/distributed/parallel_state.py(483): all_reduce", opsCall, builtin("all_reduce"),
			"vllm/distributed/parallel_state.py(521): _all_reduce_out_place",
			"vllm/distributed/device_communicators/cuda_communicator.py(151): all_reduce",
			"torch/distributed/c10d_logger.py(81): wrapper",
			"torch/distributed/distributed_c10d.py(2953): all_reduce",
			"<built-in method allreduce of PyCapsule object at 0x7f5e3c0c1a70>"}})
}

// denseMLP returns the dense MLP of the first layer.
func (m *model) denseMLP(l int, p phase) []launch {
	c := m.cat
	return []launch{marlin(c.marlinDenseUp, l, "MergedColumnParallelLinear"), silu(c, l, "DeepseekV2MLP"),
		marlin(c.marlinDenseDown, l, "RowParallelLinear"), allReduce(c, l, p)}
}

// silu is the SiluAndMul activation of an MLP.
func silu(c *catalog, layer int, owner string) launch {
	return graphed(launch{api: apiLaunchKernel, cpuOp: "_C::silu_and_mul", kernels: []*kernel{c.actAndMul}, layer: layer,
		stack: []string{module(owner, layer), callImpl, module("SiluAndMul", layer), callImpl, customOp,
			"vllm/model_executor/layers/activation.py(91): forward_cuda", opsCall, builtin("silu_and_mul")}})
}

// moeFrames returns the frames down to the fused Marlin MoE.
func moeFrames(layer int, tail ...string) []string {
	s := []string{module("FusedMoE", layer), callImpl, "vllm/model_executor/layers/fused_moe/layer.py(1791): forward",
		"vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe.py(1540): apply",
		"vllm/model_executor/layers/fused_moe/fused_marlin_moe.py(121): fused_marlin_moe"}
	return append(s, tail...)
}

// moeOp is one custom op launch inside the fused MoE.
func moeOp(k *kernel, layer int, lib, fn string, line int) launch {
	return graphed(launch{api: apiLaunchKernel, cpuOp: lib + "::" + fn, kernels: []*kernel{k}, layer: layer,
		stack: moeFrames(layer, "vllm/_custom_ops.py("+strconv.Itoa(line)+"): "+fn, opsCall, builtin(fn))})
}

// moe returns one layer's MoE block: router, routed experts, shared expert
// and the AllReduce of the sum.
func (m *model) moe(l int, p phase) []launch {
	c := m.cat
	router := graphed(launch{api: apiLaunchKernel, cpuOp: "aten::mm", kernels: []*kernel{c.routerGEMM}, layer: l,
		stack: []string{module("DeepseekV2MoE", l), callImpl, "vllm/model_executor/models/deepseek_v2.py(252): forward",
			module("ReplicatedLinear", l), callImpl, "vllm/model_executor/layers/linear.py(301): forward",
			"vllm/model_executor/layers/utils.py(92): default_unquantized_gemm", "<built-in function linear>"}})
	add := graphed(launch{api: apiLaunchKernel, cpuOp: "aten::add", kernels: []*kernel{c.addBF16}, layer: l,
		stack: []string{module("DeepseekV2MoE", l), callImpl, "vllm/model_executor/models/deepseek_v2.py(268): forward",
			"<built-in method __add__ of Tensor object at 0x7f5d9a4c8f50>"}})
	return []launch{router,
		moeOp(c.groupedTopK, l, "_moe_C", "grouped_topk", 1901),
		moeOp(c.moeAlign, l, "_moe_C", "moe_align_block_size", 1871),
		moeOp(c.moeW13, l, "_moe_C", "moe_wna16_marlin_gemm", 1851),
		moeOp(c.actAndMul, l, "_C", "silu_and_mul", 1530),
		moeOp(c.moeW2, l, "_moe_C", "moe_wna16_marlin_gemm", 1851),
		moeOp(c.moeSum, l, "_moe_C", "moe_sum", 1881),
		marlin(c.marlinSmall, l, "MergedColumnParallelLinear"),
		silu(c, l, "DeepseekV2MLP"),
		marlin(c.marlinSmall, l, "RowParallelLinear"),
		add,
		allReduce(c, l, p),
	}
}

// copyIn is an input copy (token ids, positions) to the GPU.
func copyIn(c *catalog) launch {
	return launch{api: apiMemcpyAsync, cpuOp: "aten::copy_", kernels: []*kernel{c.memcpyHtoD}, layer: -1,
		stack: []string{"vllm/v1/worker/gpu_model_runner.py(1206): _prepare_inputs",
			"vllm/v1/utils.py(111): copy_to_gpu", "<built-in method copy_ of Tensor object at 0x7f5d9a4c9e10>"}}
}

// sampler returns the launches after the model forward: logits, their
// gather across ranks, sampling and the copy of sampled tokens to the host.
func (m *model) sampler() []launch {
	c := m.cat
	lp := []string{"vllm/model_executor/models/deepseek_v2.py(1321): compute_logits", module("LogitsProcessor", 0), callImpl,
		"vllm/model_executor/layers/logits_processor.py(63): forward"}
	sm := []string{module("Sampler", 0), callImpl, "vllm/v1/sample/sampler.py(66): forward", "vllm/v1/sample/sampler.py(131): sample"}
	gather := append(append([]string{}, lp...), "vllm/model_executor/layers/logits_processor.py(81): _gather_logits",
		"vllm/distributed/communication_op.py(21): tensor_model_parallel_all_gather",
		"vllm/distributed/parallel_state.py(561): all_gather",
		"torch/distributed/c10d_logger.py(81): wrapper",
		"torch/distributed/distributed_c10d.py(3866): all_gather_into_tensor",
		"<built-in method _allgather_base of PyCapsule object at 0x7f5e3c0c1a70>")
	return []launch{
		{api: apiLaunchKernel, cpuOp: "aten::mm", kernels: []*kernel{c.lmHead}, layer: -1,
			stack: append(append([]string{}, lp...), "vllm/model_executor/layers/logits_processor.py(101): _get_logits",
				"vllm/model_executor/layers/vocab_parallel_embedding.py(51): apply",
				"vllm/model_executor/layers/utils.py(92): default_unquantized_gemm", "<built-in function linear>")},
		{api: apiDriverLaunchEx, cpuOp: "record_param_comms", kernels: []*kernel{c.allGatherLL}, layer: -1, stack: gather},
		{api: apiLaunchKernel, cpuOp: "aten::div_", kernels: []*kernel{c.temperature}, layer: -1,
			stack: append(append([]string{}, sm...), "vllm/v1/sample/sampler.py(111): apply_temperature",
				"<built-in method div_ of Tensor object at 0x7f5d9a4ca2b0>")},
		{api: apiLaunchKernel, cpuOp: "aten::_softmax", kernels: []*kernel{c.softmax}, layer: -1,
			stack: append(append([]string{}, sm...), "vllm/v1/sample/ops/topk_topp_sampler.py(121): forward_cuda",
				"vllm/v1/sample/ops/topk_topp_sampler.py(301): flashinfer_sample",
				"<built-in method softmax of Tensor object at 0x7f5d9a4ca2b0>")},
		{api: apiLaunchKernel, cpuOp: "flashinfer::top_k_top_p_sampling_from_probs", kernels: []*kernel{c.topKTopP}, layer: -1,
			stack: append(append([]string{}, sm...), "vllm/v1/sample/ops/topk_topp_sampler.py(301): flashinfer_sample",
				"flashinfer/sampling.py(851): top_k_top_p_sampling_from_probs", opsCall, builtin("top_k_top_p_sampling_from_probs"))},
		{api: apiMemcpyAsync, cpuOp: "aten::copy_", kernels: []*kernel{c.memcpyDtoH}, layer: -1,
			stack: []string{"vllm/v1/worker/gpu_model_runner.py(2396): _to_list",
				"<built-in method copy_ of Tensor object at 0x7f5d9a4cb1d0>"}},
	}
}
