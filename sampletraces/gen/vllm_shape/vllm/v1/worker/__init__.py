"""Stand-in package for with_stack traces shaped like vLLM V1; see vllm_shape/README.md."""
