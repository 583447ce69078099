package analyze

import (
	"testing"

	"kinetoscope/ingest"
)

// TestMoERoutingNames classifies the routing kernels of the MoE layers of
// vLLM, SGLang, Triton's fused MoE and DeepEP by their real names (the
// profiler's demangled form of the kernel each source file declares), each
// row citing where the kernel is defined. Routing (gating softmax, top-k,
// expert alignment and sorting, token permute and unpermute, the weighted
// sum of the experts' outputs) is MoE routing; DeepEP's dispatch and
// combine move tokens between GPUs and stay communication (AllToAll), its
// layout kernel, which only counts tokens per rank and expert, is routing.
func TestMoERoutingNames(t *testing.T) {
	c, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		source   string // repository and file defining the kernel
		sampling bool   // also holds in the sampling phase
		want     BucketID
	}{
		// vLLM csrc/moe/topk_softmax_kernels.cu: the fused gating kernel and
		// the fallback pair for expert counts that are not a power of two.
		{"void vllm::moe::topkGatingSoftmax<4, 64, 4, 8, 32, int, (vllm::moe::ScoringFunc)0>(float const*, bool const*, float*, int, int*, int*, int, int, int, float const*)",
			"vllm-project/vllm csrc/moe/topk_softmax_kernels.cu", true, MoERouting},
		{"void vllm::moe::moeSoftmax<256>(float const*, bool const*, float*, int)",
			"vllm-project/vllm csrc/moe/topk_softmax_kernels.cu", true, MoERouting},
		{"void vllm::moe::moeTopK<256, int>(float const*, bool const*, float*, int*, int*, int, int, int, int, bool, float const*)",
			"vllm-project/vllm csrc/moe/topk_softmax_kernels.cu", true, MoERouting},
		// vLLM csrc/moe/moe_align_sum_kernels.cu, moe_lora_align_sum_kernels.cu.
		{"void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*, int, bool)",
			"vllm-project/vllm csrc/moe/moe_align_sum_kernels.cu", false, MoERouting},
		{"void vllm::moe::moe_align_block_size_small_batch_expert_kernel<int, 1024>(int const*, int*, int*, int*, int, int, int, unsigned long, int, bool)",
			"vllm-project/vllm csrc/moe/moe_align_sum_kernels.cu", false, MoERouting},
		{"void vllm::moe::count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, int*, unsigned long, int, int)",
			"vllm-project/vllm csrc/moe/moe_align_sum_kernels.cu", false, MoERouting},
		{"void vllm::moe::moe_sum_kernel<c10::BFloat16, 6>(c10::BFloat16*, c10::BFloat16 const*, int)",
			"vllm-project/vllm csrc/moe/moe_align_sum_kernels.cu", false, MoERouting},
		{"void vllm::moe::moe_lora_align_block_size_kernel<int>(int*, int*, int, int, int, int, unsigned long, int*, int*, int*, int*, int*, int*)",
			"vllm-project/vllm csrc/moe/moe_lora_align_sum_kernels.cu", false, MoERouting},
		// vLLM csrc/moe/grouped_topk_kernels.cu (DeepSeek's grouped top-k).
		{"void vllm::moe::grouped_topk_fused_kernel<__nv_bfloat16, float, int, (vllm::moe::ScoringFunc)1>(__nv_bfloat16*, float*, int*, __nv_bfloat16 const*, long, long, long, long, bool, double)",
			"vllm-project/vllm csrc/moe/grouped_topk_kernels.cu", false, MoERouting},
		{"void vllm::moe::topk_with_k2_kernel<__nv_bfloat16, float>(__nv_bfloat16*, __nv_bfloat16*, float const*, long, long, long)",
			"vllm-project/vllm csrc/moe/grouped_topk_kernels.cu", false, MoERouting},
		{"void vllm::moe::group_idx_and_topk_idx_kernel<__nv_bfloat16, float, int, (vllm::moe::ScoringFunc)1, -1>(__nv_bfloat16*, __nv_bfloat16 const*, float*, int*, float const*, long, long, long, long, long, bool, double)",
			"vllm-project/vllm csrc/moe/grouped_topk_kernels.cu", false, MoERouting},
		// vLLM csrc/moe/permute_unpermute_kernels/moe_permute_unpermute_kernel.{cu,inl}.
		{"void expandInputRowsKernel<__nv_bfloat16, true, true>(__nv_bfloat16 const*, __nv_bfloat16*, int const*, int*, int*, long const*, long, long const*, long, long, int)",
			"vllm-project/vllm csrc/moe/permute_unpermute_kernels/moe_permute_unpermute_kernel.inl", false, MoERouting},
		{"void finalizeMoeRoutingKernel<__nv_bfloat16, __nv_bfloat16, true>(__nv_bfloat16 const*, __nv_bfloat16*, float const*, int const*, long, long, long, long const*)",
			"vllm-project/vllm csrc/moe/permute_unpermute_kernels/moe_permute_unpermute_kernel.inl", false, MoERouting},
		{"preprocessTopkIdKernel(int*, int, int const*, int)",
			"vllm-project/vllm csrc/moe/permute_unpermute_kernels/moe_permute_unpermute_kernel.cu", false, MoERouting},
		{"computeExpertOffsetsAndInverseKernel(int const*, long, int, long*, int const*, int*)",
			"vllm-project/vllm csrc/moe/permute_unpermute_kernels/moe_permute_unpermute_kernel.cu", false, MoERouting},
		// SGLang sgl-kernel/csrc/moe/moe_fused_gate.cu (DeepSeek V3 gate).
		{"void moe_fused_gate_kernel<__nv_bfloat16, 256, 8, 32, 1, 1, 2>(void*, void*, float*, int*, long, long, long, long, double)",
			"sgl-project/sglang sgl-kernel/csrc/moe/moe_fused_gate.cu", false, MoERouting},
		// SGLang python/sglang/srt/layers/moe/ep_moe/kernels.py (Triton).
		{"deepep_permute_triton_kernel", "sgl-project/sglang python/sglang/srt/layers/moe/ep_moe/kernels.py", false, MoERouting},
		{"deepep_post_reorder_triton_kernel", "sgl-project/sglang python/sglang/srt/layers/moe/ep_moe/kernels.py", false, MoERouting},
		{"pre_reorder_triton_kernel", "sgl-project/sglang python/sglang/srt/layers/moe/ep_moe/kernels.py", false, MoERouting},
		{"post_reorder_triton_kernel", "sgl-project/sglang python/sglang/srt/layers/moe/ep_moe/kernels.py", false, MoERouting},
		{"compute_seg_indptr_triton_kernel", "sgl-project/sglang python/sglang/srt/layers/moe/ep_moe/kernels.py", false, MoERouting},
		{"compute_src2dst_triton_kernel", "sgl-project/sglang python/sglang/srt/layers/moe/ep_moe/kernels.py", false, MoERouting},
		// SGLang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py (Triton).
		{"_moe_sum_reduce_kernel", "sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py", false, MoERouting},
		// Triton's triton_kernels routing (vLLM's gpt-oss MoE path).
		{"_topk_forward", "triton-lang/triton python/triton_kernels/triton_kernels/topk_details/_topk_forward.py", true, MoERouting},
		{"_combined_routing_compute", "triton-lang/triton python/triton_kernels/triton_kernels/routing_details/_routing_compute.py", false, MoERouting},
		{"_sum_bitmatrix_rows", "triton-lang/triton python/triton_kernels/triton_kernels/bitmatrix_details/sum_bitmatrix_rows.py", false, MoERouting},
		// DeepEP csrc/kernels/layout.cu: counts per rank and expert, local.
		{"void deep_ep::layout::get_dispatch_layout<256, 4, 8>(long const*, int*, int*, int*, bool*, int, int, int, int)",
			"deepseek-ai/DeepEP csrc/kernels/layout.cu", false, MoERouting},
		// DeepEP csrc/kernels/intranode.cu, internode.cu, internode_ll.cu:
		// tokens sent to and gathered from other GPUs.
		{"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, long*, float*, int4 const*, float const*, long const*, float const*, bool const*, int const*, int*, int*, int, int, int, int, int, int, int, void**, int, int, int)",
			"deepseek-ai/DeepEP csrc/kernels/intranode.cu", false, AllToAll},
		{"void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*, int, int, int const*, int*, int*, int, int, int, void**, int**, int)",
			"deepseek-ai/DeepEP csrc/kernels/intranode.cu", false, AllToAll},
		{"void deep_ep::intranode::cached_notify_combine<8>(void**, int*, int, int, int, int**, int)",
			"deepseek-ai/DeepEP csrc/kernels/intranode.cu", false, AllToAll},
		{"void deep_ep::internode_ll::combine<false, 8, 7168, 9>(void*, void*, int*, void const*, long const*, float const*, int const*, long const*, int*, int*, void*, int, int, int, int, int, int, int, int, bool, int, int)",
			"deepseek-ai/DeepEP csrc/kernels/internode_ll.cu", false, AllToAll},
	}
	for _, tt := range tests {
		if got := c.Match(tt.name, ingest.KindKernel, "", false); got != tt.want {
			t.Errorf("%s: Match(%.80q) = %s, want %s", tt.source, tt.name, got, tt.want)
		}
		if tt.sampling {
			if got := c.Match(tt.name, ingest.KindKernel, "", true); got != tt.want {
				t.Errorf("%s: in the sampling phase, Match(%.80q) = %s, want %s", tt.source, tt.name, got, tt.want)
			}
		}
	}
}
