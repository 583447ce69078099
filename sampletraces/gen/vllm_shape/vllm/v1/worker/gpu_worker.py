"""Stand-in for vLLM V1's GPU worker (vllm/v1/worker/gpu_worker.py).

Only its execute_model, so that with_stack traces carry vLLM's function name
at vLLM's path; see sampletraces/gen/vllm_shape/README.md.
"""

import torch


class Worker:
    """Calls the model runner once per engine step, as vLLM's Worker does."""

    def __init__(self, model_runner):
        self.model_runner = model_runner

    @torch.inference_mode()
    def execute_model(self, scheduler_output):
        return self.model_runner.execute_model(scheduler_output)
