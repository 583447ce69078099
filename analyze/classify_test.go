package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
)

func TestDefaultRulesClassify(t *testing.T) {
	c, err := NewClassifier(nil)
	if err != nil {
		t.Fatal(err)
	}
	k, cp, ms := ingest.KindKernel, ingest.KindMemcpy, ingest.KindMemset
	tests := []struct {
		name     string
		kind     ingest.GPUKind
		coll     string
		sampling bool
		want     BucketID
	}{
		// AllReduce in all its forms.
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", k, "", false, AllReduce},
		{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", k, "", false, AllReduce},
		{"ncclSymDevKernel_AllReduce_AGxLL_R_sum_bf16", k, "", false, AllReduce},
		{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", k, "", false, AllReduce},
		{"void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", k, "", false, AllReduce},
		{"void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 16, 8>(c10::BFloat16*, unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)", k, "", false, AllReduce},
		{"void c10d::symmetric_memory::one_shot_all_reduce_kernel<c10::BFloat16, 8>(c10::BFloat16**, unsigned long, unsigned long, c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)", k, "", false, AllReduce},
		{"void c10d::symmetric_memory::two_shot_all_reduce_kernel<c10::BFloat16, 8>(c10::BFloat16**, unsigned long, unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)", k, "", false, AllReduce},
		{"void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 2, true>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)", k, "", false, AllReduce},
		{"void quickreduce::allreduce_prototype_twoshot<quickreduce::CodecQ4<__hip_bfloat16>, false>(__hip_bfloat16 const*, __hip_bfloat16*, unsigned int, int, int, unsigned int, unsigned char**, unsigned int**, unsigned int)", k, "", false, AllReduce},
		// RCCL's generic kernel takes its type from the collective name.
		{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", k, "allreduce", false, AllReduce},
		{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", k, "broadcast", false, Broadcast},
		{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", k, "_allgather_base", false, AllGather},
		{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", k, "reduce_scatter_tensor_coalesced", false, ReduceScatter},
		{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", k, "", false, CommOther},
		{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", k, "", false, AllGather},
		{"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", k, "", false, ReduceScatter},
		{"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", k, "", false, Broadcast},
		{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", k, "", false, SendRecv},
		{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", k, "all_to_all", false, AllToAll},
		// Attention before GEMM, FA3 and CUTLASS MLA included.
		{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<176>, cute::C<128> > > > > >(flash::FlashAttnFwdSm90::Params)", k, "", false, Attention},
		{"void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaMlaKernelTmaWarpspecialized<cute::tuple<cute::C<128>, cute::C<128> > > >(cutlass::fmha::kernel::Params)", k, "", false, Attention},
		{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0", k, "", false, Attention},
		{"void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, (flashinfer::PageStorage)0, flashinfer::DefaultAttention<false, false, false, false>, flashinfer::BatchDecodeParams>(flashinfer::BatchDecodeParams)", k, "", false, Attention},
		{"void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits>(flashinfer::BatchPrefillPagedParams)", k, "", false, Attention},
		{"void vllm::paged_attention_v2_kernel<unsigned short, unsigned short, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, unsigned short*, unsigned short const*)", k, "", false, Attention},
		{"kernel_unified_attention_2d", k, "", false, Attention},
		{"void flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true>(Flash_fwd_mla_params)", k, "", false, Attention},
		{"_fwd_grouped_kernel_stage1", k, "", false, Attention},
		{"_fwd_kernel_stage2", k, "", false, Attention},
		{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, long, long, long, int, int, int, float const*, float const*)", k, "", false, Attention},
		{"void vllm::concat_and_cache_mla_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*)", k, "", false, Attention},
		{"_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipelineQRKSVSAsyncE", k, "", false, Attention},
		// Marlin and Machete; their repack kernels are not GEMM time.
		{"void marlin::Marlin<(vllm::ScalarType::Id)4, 256, 1, 8, 8, 4, true, 4, 8, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int const*, int, int, int, int, int*, bool, bool, int)", k, "", false, MarlinGEMM},
		{"void marlin_moe_wna16::Marlin<(vllm::ScalarType::Id)4, 256, 1, 8, 8, 4, false, 4, 8, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, int, int, int, int, int, int*, bool, bool, bool, int)", k, "", false, MarlinGEMM},
		{"_ZN6marlin6MarlinILN4vllm10ScalarType2IdE4ELi256ELi1ELi8ELi8ELi4ELb1ELi4ELi8ELb0EEEvPK4int4S6_PS4_S7_S6_PKiiiiiPibbi", k, "", false, MarlinGEMM},
		{"void gptq_marlin_repack_kernel<256, 4, false>(unsigned int const*, unsigned int const*, unsigned int*, int, int, int)", k, "", false, Elementwise},
		{"void cutlass::device_kernel<machete::MacheteKernelTemplate<cutlass::bfloat16_t, cutlass::vllm_uint4b8_t> >(machete::Params)", k, "", false, MarlinGEMM},
		{"void machete::prepack_B_kernel<128, machete::PrepackedLayoutBTemplate<cutlass::bfloat16_t> >(machete::Params)", k, "", false, Elementwise},
		// MoE routing.
		{"void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, (vllm::moe::ScoringFunc)0>(float const*, bool const*, float*, int, int*, int*, int, int, int, float const*)", k, "", true, MoERouting},
		{"void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)", k, "", false, MoERouting},
		{"void vllm::moe::count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*, unsigned long, int)", k, "", false, MoERouting},
		{"void vllm::moe::grouped_topk_fused_kernel<__nv_bfloat16, float>(__nv_bfloat16*, float*, int*, float const*, long, long, long, long, double, long)", k, "", false, MoERouting},
		{"void moe::dev::routing::routingDeepSeek::routingIndicesClusterKernel<moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, float, 32, true> >(moe::dev::routing::routingDeepSeek::KernelParams)", k, "", false, MoERouting},
		{"void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)", k, "", false, MoERouting},
		{"_finalize_matmul_scatter_bf16", k, "", false, MoERouting},
		// GEMM.
		{"nvjet_tst_128x64_64x8_1x1_v_bz_coopA_NNT", k, "", false, GEMM},
		{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", k, "", false, GEMM},
		{"ampere_sgemm_128x64_nn", k, "", false, GEMM},
		{"void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)", k, "", false, GEMM},
		{"void splitKreduce_kernel<float, float, float, float, true, false, false>(cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, float*, int*)", k, "", false, GEMM},
		{"void at::native::(anonymous namespace)::tinygemm_m16n8k16_chunk_kernel<(at::native::(anonymous namespace)::KReductionType)0, 32, 8, 8>(void const*, void const*, void const*, void*, int, int, int, int, int)", k, "", false, GEMM},
		{"fused_moe_kernel", k, "", false, GEMM},
		{"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1", k, "", false, GEMM},
		{"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", k, "", false, GEMM},
		{"std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, float, float, false, true, false, false, 7, cublasGemvParams<cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParams)", k, "", false, GEMM},
		// Norm, activation.
		{"void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)", k, "", false, Norm},
		{"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", k, "", false, Norm},
		{"_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", k, "", false, Norm},
		{"_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassE", k, "", false, Norm},
		{"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)", k, "", false, Norm},
		{"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)", k, "", false, Activation},
		{"_ZN7sgl_hip10activation18act_and_mul_kernelI14__hip_bfloat16TnPFT_RKS3_EXadL_Z4siluIS2_ES3_S5_EEEEvPS3_PS4_i", k, "", false, Activation},
		// Sampling: by name, or by phase.
		{"void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::BlockScanAlgorithm)2, (cub::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, int*, float*, int*, float*, unsigned int, unsigned int, unsigned long, unsigned long)", k, "", false, Sampling},
		{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)", k, "", true, Sampling},
		{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)", k, "", false, Elementwise},
		{"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, int, int, int, bool const*, int, bool)", k, "", true, Sampling},
		{"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, int, int, int, bool const*, int, bool)", k, "", false, Elementwise},
		{"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int)", k, "", true, Sampling},
		// Elementwise.
		{"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)", k, "", false, Elementwise},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", k, "", false, Elementwise},
		{"void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, long)", k, "", false, Elementwise},
		{"triton_poi_fused__to_copy_1", k, "", false, Elementwise},
		// Memory by category; anything else is other.
		{"Memcpy DtoD (Device -> Device)", cp, "", false, Memcpy},
		{"Memset (Device)", ms, "", false, Memset},
		{"mystery_kernel_v2", k, "", false, Other},
	}
	for _, tt := range tests {
		if got := c.Match(tt.name, tt.kind, tt.coll, tt.sampling); got != tt.want {
			t.Errorf("Match(%.70q, coll %q, sampling %v) = %s, want %s", tt.name, tt.coll, tt.sampling, got, tt.want)
		}
	}
}

func TestUserRulesGoFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	data := "rules:\n  - {bucket: allreduce, pattern: \"^my_ar_kernel\"}\n  - {bucket: other, pattern: \"nvjet\", category: gpu_memset}\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	user, err := LoadRules(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClassifier(user)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Match("my_ar_kernel<bf16>", ingest.KindKernel, "", false); got != AllReduce {
		t.Errorf("user rule: got %s, want allreduce", got)
	}
	if got := c.Match("nvjet_tst_64x8", ingest.KindMemset, "", false); got != Other {
		t.Errorf("user rule ahead of default: got %s, want other", got)
	}
	if got := c.Match("nvjet_tst_64x8", ingest.KindKernel, "", false); got != GEMM {
		t.Errorf("category restriction ignored: got %s, want gemm", got)
	}
}

func TestBadRules(t *testing.T) {
	tests := []struct{ data, want string }{
		{"rules:\n  - {bucket: nosuch, pattern: x}\n", `unknown bucket "nosuch"`},
		{"rules:\n  - {bucket: gemm, pattern: \"(\"}\n", "pattern"},
		{"rules:\n  - {bucket: gemm, pattern: x, category: cpu_op}\n", "unknown category"},
		{"rules:\n  - {bucket: gemm, pattern: x, phase: decode}\n", "unknown phase"},
		{"rules:\n  - {bucket: gemm, pattern: x, colour: red}\n", "colour"},
		{"rules: [", "my.yaml"},
	}
	for _, tt := range tests {
		_, err := ParseRules([]byte(tt.data), "my.yaml")
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "my.yaml") {
			t.Errorf("ParseRules(%q) error = %v, want one naming my.yaml and %q", tt.data, err, tt.want)
		}
	}
	if _, err := LoadRules(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("LoadRules of a missing file: no error")
	}
}
