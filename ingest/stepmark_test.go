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

// TestPythonFunction: the function of a with_stack python_function name,
// only for the "FILE.py(LINE): FUNCTION" form, and the step-mark raw-byte
// test keeps every name whose function is a step mark.
func TestPythonFunction(t *testing.T) {
	for _, c := range []struct {
		name, fn string
		ok       bool
	}{
		{"vllm/v1/worker/gpu_worker.py(263): execute_model", "execute_model", true},
		{"/usr/lib/python3/site-packages/vllm/worker/worker_base.py(398): execute_model", "execute_model", true},
		{"vllm/v1/worker/gpu_model_runner.py(2210): sample_tokens", "sample_tokens", true},
		{"a(b).py(12): f", "f", true},
		{"execute_model", "", false},
		{"gpu_worker.py(): execute_model", "", false},
		{"gpu_worker.py(2x): execute_model", "", false},
		{"gpu_worker.c(12): execute_model", "", false},
		{"(12): execute_model", "", false},
		{"nn.Module: DecoderLayer_3", "", false},
	} {
		fn, ok := PythonFunction(c.name)
		if fn != c.fn || ok != c.ok {
			t.Errorf("PythonFunction(%q) = %q, %v; want %q, %v", c.name, fn, ok, c.fn, c.ok)
		}
		if ok && (fn == ExecuteModel || fn == SampleTokens) && !stepMarkFunction([]byte(c.name)) {
			t.Errorf("%q: a step-mark function the reader does not keep", c.name)
		}
	}
}
