package ingest

// embeddingOp is the CPU op of the model's token lookup, kept for its
// input shapes (Trace.Embeddings).
const embeddingOp = "aten::embedding"

// keptCPUOp says whether a cpu_op event of this raw name is kept: the
// record_param_comms ops (the CPU side of collectives), the embedding
// lookups, the ops with shapes (shapedOpKind) and the serving engines'
// collective ops (collectiveOp). Every other cpu_op is skipped once its
// name is read.
func keptCPUOp(name []byte) bool {
	as, _ := cpuOpKeptAs(name)
	return as != keptNothing
}

// cpuOpKeptAs returns what a cpu_op event of this raw name is kept as, and
// for an op with shapes its kind: the list keptCPUOp and keptAsOf read.
func cpuOpKeptAs(name []byte) (keptAs, OpKind) {
	if kind := shapedOpKind(name); kind != 0 {
		return keptShapedOp, kind
	}
	switch {
	case string(name) == embeddingOp:
		return keptEmbedding, 0
	case collectiveOp(name):
		return keptCollectiveOp, 0
	case string(name) == "record_param_comms":
		return keptCommOp, 0
	}
	return keptNothing, 0
}

// shapedOpKind returns the kind of an op kept with its shapes
// (Trace.Shapes), or 0 for any other op: the one list of the ops analysis
// computes FLOPs and bytes from. The names are exact (the op's schema
// name as the profiler writes it); the attention ops' input layouts are
// in attentionLayouts.
func shapedOpKind(name []byte) OpKind {
	switch string(name) {
	case "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear", "aten::matmul",
		"aten::_scaled_mm", "aten::_scaled_mm_v2", "fbgemm::f8f8bf16_rowwise", "fbgemm::f8f8bf16_tensorwise",
		"_C::cutlass_scaled_mm", "vllm::rocm_unquantized_gemm", "aiter::gemm_a16w16", "aiter::gemm_a8w8":
		return OpGEMM
	case "_C::gptq_marlin_gemm", "_C::marlin_gemm", "_C::awq_marlin_gemm", "_C::awq_gemm", "_C::gptq_gemm",
		"_C::machete_mm", "aten::_weight_int4pack_mm", "aten::_weight_int4pack_mm_for_cpu",
		"aten::_weight_int8pack_mm", "kts::marlin_gemm":
		return OpQuantGEMM
	case "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
		"aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
		"aten::_flash_attention_forward", "aten::_efficient_attention_forward", "aten::_cudnn_attention_forward",
		"flash_attn::_flash_attn_forward", "flash_attn::_flash_attn_varlen_forward",
		"_vllm_fa2_C::varlen_fwd", "_vllm_fa3_C::fwd", "vllm::unified_attention",
		"vllm::unified_attention_with_output", "_C::paged_attention_v1", "_C::paged_attention_v2":
		return OpAttention
	case "aten::_grouped_mm", "vllm::fused_moe", "vllm::outplace_fused_experts", "vllm::inplace_fused_experts",
		"_moe_C::moe_wna16_gemm", "_moe_C::marlin_gemm_moe", "_C::moe_wna16_marlin_gemm":
		return OpMoE
	}
	return 0
}

// embeddingTokens reads the token count from the raw "Input Dims" of an
// aten::embedding op, e.g. [[128256, 4096], [512], [], [], []]: the
// product of the second input's dims (the indices; the first is the weight
// table). 0 when the dims are absent or not of that form.
func embeddingTokens(raw []byte) int64 {
	var tokens int64
	inputDims(raw, func(item int, dims []int64, _ int) bool {
		if item < 1 {
			return true
		}
		if len(dims) > 0 {
			tokens = 1
			for _, d := range dims {
				tokens *= d
			}
		}
		return false
	})
	return tokens
}
