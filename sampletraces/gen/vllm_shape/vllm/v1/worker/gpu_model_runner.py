"""Stand-in for vLLM V1's model runner (vllm/v1/worker/gpu_model_runner.py).

Only its execute_model; the step's work is tp_decode.py's StepRunner.run_step.
See sampletraces/gen/vllm_shape/README.md.
"""

import torch


class GPUModelRunner:
    """Runs one engine step; returns at once when nothing is scheduled (no GPU work)."""

    def __init__(self, step_runner):
        self.step_runner = step_runner

    @torch.inference_mode()
    def execute_model(self, scheduler_output):
        if not scheduler_output.total_num_scheduled_tokens:
            return None  # vLLM returns EMPTY_MODEL_RUNNER_OUTPUT here
        return self.step_runner.run_step(scheduler_output)
