package ingest

import "testing"

func TestCollectiveOp(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		{"vllm::all_reduce", true},
		{"vllm::all_gather", true},
		{"vllm::reduce_scatter", true},
		{"sglang::outplace_all_reduce", true},
		{"sglang::inplace_all_reduce", true},
		{"sglang::reg_all_gather_into_tensor", true},
		{"vllm::unified_attention_with_output", false},
		{"vllm::rocm_unquantized_gemm", false},
		{"c10d::allreduce_", false}, // its record_param_comms op names it
		{"aten::all_reduce", false},
		{"all_reduce", false},
	} {
		if got := collectiveOp([]byte(tt.name)); got != tt.want {
			t.Errorf("collectiveOp(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
