package diff

import (
	"testing"

	"kinetoscope/analyze"
)

func TestNormalizeKernel(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"nvjet_sm90_tst_64x8_64x16_1x1_v_bz_coopA_TNT", "nvjet_sm90_tst_128x8_64x16_2x1_v_bz_coopA_TNT", true},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
			"void at::native::vectorized_elementwise_kernel<2, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul>)", true},
		{"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4", "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize64x128x64_stage3", true},
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<8192ul>)", true},
		{"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE", false},
		{"flash_fwd_kernel", "rms_norm_kernel", false},
		{"Memcpy DtoH (Device -> Pinned)", "Memcpy HtoD (Pinned -> Device)", false},
	}
	for _, tt := range tests {
		na, nb := NormalizeKernel(tt.a), NormalizeKernel(tt.b)
		if (na == nb) != tt.same {
			t.Errorf("NormalizeKernel(%q) = %q, (%q) = %q; same=%v, want %v", tt.a, na, tt.b, nb, na == nb, tt.same)
		}
		if na == "" {
			t.Errorf("NormalizeKernel(%q) is empty", tt.a)
		}
	}
}

func TestMatchKernels(t *testing.T) {
	ks := func(name string, b analyze.BucketID, us float64, n int) analyze.KernelStat {
		return analyze.KernelStat{Name: name, Bucket: b, US: us, Count: n}
	}
	// 4 decode steps a side; kernel US are totals over the steps.
	base := makeReport("a", makeRank(0, "A100", decodeSteps(4, 100, 0, 100, 0), map[analyze.BucketID][]analyze.KernelStat{
		analyze.GEMM: {
			ks("nvjet_sm90_tst_64x8_64x16_1x1_v_bz_coopA_TNT", analyze.GEMM, 240, 8),
			ks("rms_norm_kernel", analyze.GEMM, 80, 4),
			ks("gone_kernel", analyze.GEMM, 40, 4),
		},
	}))
	head := makeReport("b", makeRank(0, "A100", decodeSteps(4, 100, 0, 100, 0), map[analyze.BucketID][]analyze.KernelStat{
		analyze.GEMM: {
			ks("nvjet_sm90_tst_128x8_64x16_2x1_v_bz_coopA_TNT", analyze.GEMM, 120, 4),
			ks("rms_norm_kernel", analyze.GEMM, 80, 4),
			ks("new_kernel", analyze.GEMM, 200, 4),
		},
	}))
	d, err := Compare(base, head, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := d.Kernels
	if len(k.Added) != 1 || k.Added[0].Name != "new_kernel" || k.Added[0].USPerStep != 50 {
		t.Errorf("added %+v, want new_kernel at 50 us/step", k.Added)
	}
	if len(k.Removed) != 1 || k.Removed[0].Name != "gone_kernel" || k.Removed[0].USPerStep != 10 {
		t.Errorf("removed %+v, want gone_kernel at 10 us/step", k.Removed)
	}
	if len(k.Changed) != 2 {
		t.Fatalf("changed %+v, want 2", k.Changed)
	}
	c := k.Changed[0] // largest |delta| first
	if c.Match != "normalized" || c.BaseUSPerStep != 60 || c.HeadUSPerStep != 30 || c.BaseCallsPerStep != 2 || len(c.HeadNames) != 1 {
		t.Errorf("nvjet change %+v", c)
	}
	if k.Changed[1].Match != "exact" || k.Changed[1].DeltaUS != 0 {
		t.Errorf("rms_norm change %+v", k.Changed[1])
	}
	// Listed kernels: base 360 us of 400 us of kernel time.
	if k.Complete {
		t.Error("kernel lists short of the bucket totals reported complete")
	}
}
