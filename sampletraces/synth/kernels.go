package synth

import "strconv"

// gpuKind says which trace category a GPU op is written as.
type gpuKind uint8

const (
	kindKernel gpuKind = iota // "kernel"
	kindMemcpy                // "gpu_memcpy"
)

// collective describes the NCCL collective a kernel performs.
type collective struct {
	name  string // "Collective name" arg: allreduce, _allgather_base
	cpuOp string // outer CPU op, e.g. c10d::allreduce_
	// vllmOp is the CPU op of the same collective on vLLM's pynccl path.
	vllmOp string
	// elemsPerToken is "In msg nelems" per token (per request for gathers).
	elemsPerToken int64
	gather        bool // Out msg nelems = In × group size
	allReduce     bool // ring allreduce (else allgather) for the time model
}

// kernel is the template of one GPU op (kernel or memcpy).
type kernel struct {
	name   string // exactly as written to the trace (JSON-safe)
	bucket string // analyze bucket id this kernel belongs to by construction
	kind   gpuKind
	// decodeUS is the duration in a decode step at batch 32; prefillUSPerK is
	// added per 1000 prefill tokens.
	decodeUS      float64
	prefillUSPerK float64
	grid, block   [3]int
	regs, smem    int
	bytesPerReq   int64 // memcpy bytes per request (per token if perToken)
	perToken      bool
	coll          *collective
	// heavy marks the op that absorbs a rank's extra compute time in its
	// segment (the largest compute kernel before a collective).
	heavy bool
	// argsTail is the constant end of a kernel event's args.
	argsTail string
}

// catalog holds the kernel templates of one model profile.
type catalog struct {
	embedding, rmsNorm, fusedAddRMSNorm              *kernel
	marlinQKVA, marlinSmall, marlinOProj, marlinKVB  *kernel
	marlinDenseUp, marlinDenseDown                   *kernel
	bmmUK, bmmUV, rotary, concatCacheMLA             *kernel
	flashMLA, flashMLACombine, flashAttnPrefill      *kernel
	routerGEMM, groupedTopK, moeAlign, moeW13, moeW2 *kernel
	actAndMul, moeSum, addBF16                       *kernel
	lmHead, temperature, softmax, topKTopP           *kernel
	allReduceLL, allReduceSimple, allGatherLL        *kernel
	memcpyHtoD, memcpyDtoH                           *kernel
}

// newCatalog returns the kernel templates, as the PyTorch profiler names
// them for vLLM on Hopper (CUDA, demangled by CUPTI).
func newCatalog() *catalog {
	c := &catalog{
		embedding: &kernel{
			name:   "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
			bucket: "elementwise", decodeUS: 2.4, prefillUSPerK: 5,
			grid: [3]int{1056, 1, 1}, block: [3]int{128, 1, 1}, regs: 32,
		},
		rmsNorm: &kernel{
			name:   "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)",
			bucket: "norm", decodeUS: 2.3, prefillUSPerK: 4,
			grid: [3]int{32, 1, 1}, block: [3]int{256, 1, 1}, regs: 28,
		},
		fusedAddRMSNorm: &kernel{
			name:   "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
			bucket: "norm", decodeUS: 3.4, prefillUSPerK: 9,
			grid: [3]int{32, 1, 1}, block: [3]int{896, 1, 1}, regs: 32,
		},
		marlinQKVA: &kernel{
			name:   marlinDense("256, 1, 8, 8, true, 4, 8, false"),
			bucket: "marlin_gemm", decodeUS: 9.5, prefillUSPerK: 60,
			grid: [3]int{132, 1, 1}, block: [3]int{256, 1, 1}, regs: 168, smem: 197632,
		},
		marlinSmall: &kernel{
			name:   marlinDense("256, 1, 8, 4, true, 4, 8, false"),
			bucket: "marlin_gemm", decodeUS: 6.6, prefillUSPerK: 25,
			grid: [3]int{132, 1, 1}, block: [3]int{256, 1, 1}, regs: 168, smem: 164864,
		},
		marlinOProj: &kernel{
			name:   marlinDense("256, 1, 4, 8, true, 4, 8, false"),
			bucket: "marlin_gemm", decodeUS: 8.5, prefillUSPerK: 45,
			grid: [3]int{132, 1, 1}, block: [3]int{256, 1, 1}, regs: 168, smem: 197632,
		},
		marlinKVB: &kernel{
			name:   marlinDense("256, 4, 8, 8, false, 4, 8, false"),
			bucket: "marlin_gemm", decodeUS: 8, prefillUSPerK: 40,
			grid: [3]int{132, 1, 1}, block: [3]int{256, 1, 1}, regs: 168, smem: 197632,
		},
		marlinDenseUp: &kernel{
			name:   marlinDense("256, 1, 16, 4, true, 4, 8, false"),
			bucket: "marlin_gemm", decodeUS: 11, prefillUSPerK: 110,
			grid: [3]int{132, 1, 1}, block: [3]int{256, 1, 1}, regs: 168, smem: 197632,
		},
		marlinDenseDown: &kernel{
			name:   marlinDense("256, 1, 8, 8, true, 4, 8, false"),
			bucket: "marlin_gemm", decodeUS: 9, prefillUSPerK: 60,
			grid: [3]int{132, 1, 1}, block: [3]int{256, 1, 1}, regs: 168, smem: 197632,
		},
		bmmUK: &kernel{
			name:   "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
			bucket: "gemm", decodeUS: 5.8,
			grid: [3]int{1, 8, 8}, block: [3]int{128, 1, 1}, regs: 168, smem: 82944,
		},
		bmmUV: &kernel{
			name:   "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
			bucket: "gemm", decodeUS: 5.5,
			grid: [3]int{1, 1, 8}, block: [3]int{128, 1, 1}, regs: 168, smem: 115712,
		},
		rotary: &kernel{
			name:   "void vllm::rotary_embedding_kernel<c10::BFloat16, false>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)",
			bucket: "elementwise", decodeUS: 2.6, prefillUSPerK: 5,
			grid: [3]int{32, 1, 1}, block: [3]int{256, 1, 1}, regs: 30,
		},
		concatCacheMLA: &kernel{
			name:   "void vllm::concat_and_cache_mla_kernel<c10::BFloat16, c10::BFloat16, (vllm::Fp8KVCacheDataType)0>(c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16*, long const*, int, int, int, int, int, int, float const*)",
			bucket: "attention", decodeUS: 2.3, prefillUSPerK: 4,
			grid: [3]int{32, 1, 1}, block: [3]int{512, 1, 1}, regs: 24,
		},
		flashMLA: &kernel{
			name:   "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)",
			bucket: "attention", decodeUS: 24,
			grid: [3]int{1, 8, 132}, block: [3]int{256, 1, 1}, regs: 255, smem: 229376, heavy: true,
		},
		flashMLACombine: &kernel{
			name:   "void flash::flash_fwd_splitkv_mla_combine_kernel<cutlass::bfloat16_t, float, 512, 64>(Flash_fwd_mla_params)",
			bucket: "attention", decodeUS: 3.6,
			grid: [3]int{32, 8, 1}, block: [3]int{128, 1, 1}, regs: 64, smem: 4352,
		},
		flashAttnPrefill: &kernel{
			name:   "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<112>, cute::C<192> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, false, false, true, true, false, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, false, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> > > >(flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<112>, cute::C<192> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, true, false, false, true, true, false, false, false>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, false, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true, true> >::Params)",
			bucket: "attention", decodeUS: 6, prefillUSPerK: 55,
			grid: [3]int{132, 1, 1}, block: [3]int{384, 1, 1}, regs: 128, smem: 221184, heavy: true,
		},
		routerGEMM: &kernel{
			name:   "nvjet_tst_64x8_64x16_4x1_v_bz_TNT",
			bucket: "gemm", decodeUS: 4.8, prefillUSPerK: 20,
			grid: [3]int{6, 4, 1}, block: [3]int{384, 1, 1}, regs: 168, smem: 205824,
		},
		groupedTopK: &kernel{
			name:   "void vllm::moe::grouped_topk_fused_kernel<c10::BFloat16, float, int, (vllm::moe::ScoringFunc)1>(c10::BFloat16*, float*, int*, float const*, long, long, long, long, long, bool, double)",
			bucket: "moe_routing", decodeUS: 3.9, prefillUSPerK: 6,
			grid: [3]int{32, 1, 1}, block: [3]int{32, 1, 1}, regs: 64, smem: 3072,
		},
		moeAlign: &kernel{
			name:   "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int*, int, int, int, int, unsigned long, int*, bool)",
			bucket: "moe_routing", decodeUS: 3.5, prefillUSPerK: 6,
			grid: [3]int{1, 1, 1}, block: [3]int{1024, 1, 1}, regs: 32, smem: 3080,
		},
		moeW13: &kernel{
			name:   "void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l, 1125899906909960l, 2814749767106568l, 128, 4, 8, 4, false, 4, 2, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, float const*, int4 const*, float const*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, int, int, int, int, int*, bool, bool, bool)",
			bucket: "marlin_gemm", decodeUS: 46, prefillUSPerK: 220,
			grid: [3]int{132, 1, 1}, block: [3]int{128, 1, 1}, regs: 128, smem: 99328, heavy: true,
		},
		moeW2: &kernel{
			name:   "void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l, 1125899906909960l, 2814749767106568l, 128, 1, 8, 8, false, 4, 8, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, float const*, int4 const*, float const*, int4 const*, int const*, int const*, int const*, int const*, float const*, int, bool, int, int, int, int, int*, bool, bool, bool)",
			bucket: "marlin_gemm", decodeUS: 28, prefillUSPerK: 130,
			grid: [3]int{132, 1, 1}, block: [3]int{128, 1, 1}, regs: 128, smem: 99328,
		},
		actAndMul: &kernel{
			name:   "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, c10::BFloat16 const*, int)",
			bucket: "activation", decodeUS: 2.9, prefillUSPerK: 8,
			grid: [3]int{256, 1, 1}, block: [3]int{256, 1, 1}, regs: 20,
		},
		moeSum: &kernel{
			name:   "void vllm::moe::moe_sum_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16 const*, int)",
			bucket: "moe_routing", decodeUS: 2.7, prefillUSPerK: 7,
			grid: [3]int{32, 1, 1}, block: [3]int{1024, 1, 1}, regs: 26,
		},
		addBF16: &kernel{
			name:   "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
			bucket: "elementwise", decodeUS: 2.1, prefillUSPerK: 6,
			grid: [3]int{112, 1, 1}, block: [3]int{128, 1, 1}, regs: 22,
		},
		lmHead: &kernel{
			name:   "nvjet_tst_128x64_64x6_2x1_v_bz_TNN",
			bucket: "gemm", decodeUS: 38,
			grid: [3]int{160, 1, 1}, block: [3]int{384, 1, 1}, regs: 168, smem: 213504, heavy: true,
		},
		temperature: &kernel{
			name:   "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul>)",
			bucket: "elementwise", decodeUS: 4.2,
			grid: [3]int{1320, 1, 1}, block: [3]int{128, 1, 1}, regs: 24,
		},
		softmax: &kernel{
			name:   "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
			bucket: "sampling", decodeUS: 9.5,
			grid: [3]int{32, 1, 1}, block: [3]int{1024, 1, 1}, regs: 40,
		},
		topKTopP: &kernel{
			name:   "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::CUB_300001_SM_900::BlockScanAlgorithm)2, (cub::CUB_300001_SM_900::BlockReduceAlgorithm)2, 4u, false, float, int>(float*, int*, float*, int*, float*, int*, float, unsigned int, unsigned long, unsigned long)",
			bucket: "sampling", decodeUS: 21,
			grid: [3]int{32, 1, 1}, block: [3]int{1024, 1, 1}, regs: 56, smem: 23552,
		},
		allReduceLL: &kernel{
			name:   "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
			bucket: "allreduce", grid: [3]int{4, 1, 1}, block: [3]int{512, 1, 1}, regs: 96, smem: 4352,
			coll: &collective{name: "allreduce", cpuOp: "c10d::allreduce_", vllmOp: "vllm::all_reduce", elemsPerToken: hiddenSize, allReduce: true},
		},
		allReduceSimple: &kernel{
			name:   "ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE(ncclDevKernelArgsStorage<4096ul>)",
			bucket: "allreduce", grid: [3]int{8, 1, 1}, block: [3]int{544, 1, 1}, regs: 96, smem: 4352,
			coll: &collective{name: "allreduce", cpuOp: "c10d::allreduce_", vllmOp: "vllm::all_reduce", elemsPerToken: hiddenSize, allReduce: true},
		},
		allGatherLL: &kernel{
			name:   "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
			bucket: "allgather", grid: [3]int{4, 1, 1}, block: [3]int{512, 1, 1}, regs: 96, smem: 4352,
			coll: &collective{name: "_allgather_base", cpuOp: "c10d::_allgather_base_", vllmOp: "vllm::all_gather", elemsPerToken: vocabSize, gather: true},
		},
		memcpyHtoD: &kernel{
			name: "Memcpy HtoD (Pinned -> Device)", bucket: "memcpy", kind: kindMemcpy,
			decodeUS: 1.6, prefillUSPerK: 0.8, bytesPerReq: 8, perToken: true,
		},
		memcpyDtoH: &kernel{
			name: "Memcpy DtoH (Device -> Pinned)", bucket: "memcpy", kind: kindMemcpy,
			decodeUS: 1.9, bytesPerReq: 8,
		},
	}
	for _, k := range c.all() {
		k.argsTail = kernelArgsTail(k)
	}
	return c
}

// all returns every template of the catalog.
func (c *catalog) all() []*kernel {
	return []*kernel{
		c.embedding, c.rmsNorm, c.fusedAddRMSNorm,
		c.marlinQKVA, c.marlinSmall, c.marlinOProj, c.marlinKVB,
		c.marlinDenseUp, c.marlinDenseDown,
		c.bmmUK, c.bmmUV, c.rotary, c.concatCacheMLA,
		c.flashMLA, c.flashMLACombine, c.flashAttnPrefill,
		c.routerGEMM, c.groupedTopK, c.moeAlign, c.moeW13, c.moeW2,
		c.actAndMul, c.moeSum, c.addBF16,
		c.lmHead, c.temperature, c.softmax, c.topKTopP,
		c.allReduceLL, c.allReduceSimple, c.allGatherLL,
		c.memcpyHtoD, c.memcpyDtoH,
	}
}

// numSMs is the SM count of the simulated GPU (H200).
const numSMs = 132

// kernelArgsTail formats the launch-dependent constant args of a kernel
// event: registers, shared memory, occupancy, grid and block.
func kernelArgsTail(k *kernel) string {
	if k.kind != kindKernel {
		return ""
	}
	blocks := float64(k.grid[0]*k.grid[1]*k.grid[2]) / numSMs
	warps := blocks * float64((k.block[0]*k.block[1]*k.block[2]+31)/32)
	occ := min(100, int(warps/64*100))
	b := []byte(`, "registers per thread": `)
	b = strconv.AppendInt(b, int64(k.regs), 10)
	b = append(b, `, "shared memory": `...)
	b = strconv.AppendInt(b, int64(k.smem), 10)
	b = append(b, `, "blocks per SM": `...)
	b = strconv.AppendFloat(b, blocks, 'f', 6, 64)
	b = append(b, `, "warps per SM": `...)
	b = strconv.AppendFloat(b, warps, 'f', 6, 64)
	b = append(b, `, "grid": `...)
	b = appendDims(b, k.grid)
	b = append(b, `, "block": `...)
	b = appendDims(b, k.block)
	b = append(b, `, "est. achieved occupancy %": `...)
	b = strconv.AppendInt(b, int64(occ), 10)
	return string(b)
}

// Model dimensions of the Kimi-K2.5 text backbone (DeepSeek-V3 layout).
const (
	hiddenSize = 7168
	vocabSize  = 163840
)

// marlinDense returns a dense Marlin W4A16 GEMM kernel name with the given
// tail of template arguments.
func marlinDense(tail string) string {
	return "void marlin::Marlin<1125899906909960l, 562949953487106l, 1125899906909960l, 1125899906909960l, " +
		tail + ">(int4 const*, int4 const*, int4*, int4*, int4 const*, float const*, int4 const*, float const*, int4 const*, int const*, int, int, int, int, int*, bool, bool, bool, int)"
}
