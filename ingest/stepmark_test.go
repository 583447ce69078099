package ingest

import "testing"

func TestStepMarkFunction(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"vllm/v1/worker/gpu_worker.py(263): execute_model", true},
		{"vllm/v1/worker/gpu_model_runner.py(1002): execute_model", true},
		{"vllm/worker/worker_base.py(398): execute_model", true},
		{"vllm/v1/worker/gpu_model_runner.py(2210): sample_tokens", true},
		{"vllm/v1/worker/gpu_worker.py(263): execute_model_spmd", false},
		{"vllm/v1/worker/gpu_worker.py(263): _execute_model", false},
		{"execute_model", false},
		{"(1): execute_model", false},
		{"torch/nn/modules/module.py(1750): _call_impl", false},
		{"<built-in method execute_model of object>", false},
		{"", false},
	} {
		if got := stepMarkFunction([]byte(c.name)); got != c.want {
			t.Errorf("stepMarkFunction(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}
