"""Trace styles of tp_decode.py: how each one marks its steps, and its plan.

A style is one shape in which real vLLM-like servers leave their engine steps
in a PyTorch-profiler trace (see sampletraces/gen/README.md). Each runs the
same small decoder; the styles differ in the step marks (annotation names,
python_function events of vLLM's worker, ProfilerStep#N, nothing at all), in
CUDA-graph use, in INT4 (Marlin) layers, and in the profiler options.

This module holds what is known by construction (the style table, the plan
of engine steps, the names of the marks) and no tensor code; tp_decode.py
runs it.
"""

import contextlib

# marks: how a step is marked in the trace.
#   python_function  nothing but with_stack's python_function events of
#                    vLLM V1's Worker.execute_model / GPUModelRunner.execute_model
#                    (vllm_shape/vllm/v1/worker/*.py); no user annotation.
#   execute_model    record_function("execute_model") per step, with nested
#                    prepare_inputs / forward / sample annotations.
#   vllm             vLLM's per-step annotation (label per step, see
#                    step_label) with nested "gpu_model_runner: *" ones.
#   none             no mark at all.
# profiler_step: torch.profiler.schedule(wait, warmup, active=steps) and
#   prof.step() after every iteration, so each step is also a ProfilerStep#N.
# quant: None (bf16 dense), "marlin_mlp" (fp16; the MLP's gate_up and down
#   GEMMs are Marlin INT4), "marlin_moe" (fp16; a routed MoE whose experts are
#   Marlin INT4 GEMMs).
# host_sync: "per_layer" (marlin_moe only): each MoE layer's router copies its
#   per-expert counts to the host (.tolist()): one more device-to-host copy
#   and CPU wait per layer. Absent: the only host sync is the sampled tokens.
# layers: the style's default --layers (4 if absent).
# plan: "fixed" (1 prefill of `batch` requests, then decode steps),
#   "fixed_empty_last" (the same, then one step with no GPU work),
#   "continuous" (requests join a running batch: mixed steps).
STYLES = {
    "withstack_execute_model": {
        "what": "vLLM 0.8-0.10 (V1): no step annotation; with_stack python_function events of "
                "Worker.execute_model (gpu_worker.py) with GPUModelRunner.execute_model "
                "(gpu_model_runner.py) nested inside; decode forward replayed from a CUDA graph; "
                "a last execute_model with no GPU work",
        "marks": "python_function", "graph": True, "quant": None, "with_stack": True,
        "record_shapes": False, "plan": "fixed_empty_last", "decode_steps": 14,
        "file_naming": "vllm_v1_default",
    },
    "annotated_execute_model": {
        "what": "an execute_model CPU annotation (record_function) per step with nested "
                "prepare_inputs / forward / sample annotations; eager",
        "marks": "execute_model", "graph": False, "quant": None, "with_stack": False,
        "record_shapes": True, "plan": "fixed", "decode_steps": 15,
    },
    "vllm_new_annotations": {
        "what": "newer vLLM annotation families in one trace: execute_context_N(T_S)_generation_M(U_K) "
                "(parenthesised fields that are not plain integers), execute_new_N_cached_M, "
                "execute_K_context_N(T)_generation_M(U); requests join a running batch (2 mixed steps); "
                "nested gpu_model_runner annotations; MLP GEMMs in Marlin INT4; eager",
        "marks": "vllm", "graph": False, "quant": "marlin_mlp", "with_stack": True,
        "record_shapes": False, "plan": "continuous", "batch": 5, "first_batch": 3,
    },
    "profilerstep": {
        "what": "torch.profiler.schedule(wait=1, warmup=1, active=16) with prof.step() every "
                "iteration: each step is a ProfilerStep#N (from #2), the first active one the "
                "prefill; no other mark; eager",
        "marks": "none", "profiler_step": (1, 1), "graph": False, "quant": None,
        "with_stack": False, "record_shapes": True, "plan": "fixed", "decode_steps": 15,
    },
    "profilerstep_vllm": {
        "what": "ProfilerStep#N (schedule wait=0, warmup=1) around vLLM's execute_context_N(T)_"
                "generation_M(U) annotation in every step, as newer vLLM that calls profiler.step() "
                "each iteration; decode from a CUDA graph; MLP GEMMs in Marlin INT4",
        "marks": "vllm", "profiler_step": (0, 1), "graph": True, "quant": "marlin_mlp",
        "with_stack": True, "record_shapes": False, "plan": "fixed", "decode_steps": 15,
    },
    "bare_eager": {
        "what": "no marks at all (no annotation, with_stack off); eager",
        "marks": "none", "graph": False, "quant": None, "with_stack": False,
        "record_shapes": True, "plan": "fixed", "decode_steps": 15,
    },
    "bare_cudagraph": {
        "what": "no marks at all (no annotation, with_stack off, record_shapes off); decode forward "
                "replayed from a CUDA graph",
        "marks": "none", "graph": True, "quant": None, "with_stack": False,
        "record_shapes": False, "plan": "fixed", "decode_steps": 15,
    },
    # Host-side stalls inside the step (issue 24's step-time account): the
    # same eager decoder, its kernels unchanged, with a stall on the CPU
    # after a layer of the forward. host_hooks: (layer index, action) pairs
    # run after that layer's launches; "sleep:MS" sleeps MS ms without
    # touching the GPU (the GPU drains its queue and idles: host late),
    # "item" calls .item() on the hidden state (cudaMemcpyAsync D2H and
    # cudaStreamSynchronize: the thread blocks until the GPU drains), then
    # the next action runs.
    "pair_eager": {
        "what": "an execute_model CPU annotation per step; eager; no stall (the base of the "
                "pair_host_delay pair)",
        "marks": "execute_model", "graph": False, "quant": None, "with_stack": False,
        "record_shapes": False, "plan": "fixed", "decode_steps": 15,
    },
    "pair_host_delay": {
        "what": "as pair_eager, with a 1 ms host sleep after layer 1 of every step's forward (no "
                "sync): kernels unchanged, the GPU idles while the host is late",
        "marks": "execute_model", "graph": False, "quant": None, "with_stack": False,
        "record_shapes": False, "plan": "fixed", "decode_steps": 15,
        "host_hooks": [(1, "sleep:1.0")],
    },
    "host_sync_item": {
        "what": "as pair_eager, with a .item() on the hidden state after layer 0 followed by a "
                "0.3 ms host sleep (idle after a host sync), and a 0.6 ms host sleep without sync "
                "after layer 2 (host late)",
        "marks": "execute_model", "graph": False, "quant": None, "with_stack": False,
        "record_shapes": False, "plan": "fixed", "decode_steps": 15,
        "host_hooks": [(0, "item"), (0, "sleep:0.3"), (2, "sleep:0.6")],
    },
    "moe": {
        "what": "INT4 MoE decoder: router GEMM, softmax, top-k, token permutation (sort, "
                "index_copy), per-expert Marlin INT4 GEMMs, un-permute and weighted sum; no marks; eager",
        "marks": "none", "graph": False, "quant": "marlin_moe", "with_stack": False,
        "record_shapes": True, "plan": "fixed", "decode_steps": 15,
    },
    "moe_sync": {
        "what": "the moe style with a host sync in every layer: each router copies its per-expert "
                "token counts to the host (.tolist(), a device-to-host memcpy the CPU waits for) and "
                "checks them, as routers that record expert load do; 8 layers; no marks; eager",
        "marks": "none", "graph": False, "quant": "marlin_moe", "host_sync": "per_layer", "layers": 8,
        "with_stack": False, "record_shapes": False, "plan": "fixed", "decode_steps": 15,
    },
}

# Nested phase annotations per mark kind (phase -> annotation name; None: no annotation).
PHASE_NAMES = {
    "vllm": {"preprocess": "gpu_model_runner: preprocess", "forward": "gpu_model_runner: forward",
             "sample": "gpu_model_runner: sample", "postprocess": "gpu_model_runner: postprocess"},
    "execute_model": {"preprocess": "prepare_inputs", "forward": "forward", "sample": "sample",
                      "postprocess": None},
}


class PlanStep:
    """One engine step: what vLLM's scheduler output says for it.

    kind: prefill, decode, mixed or empty. New requests (n_new, each
    prompt_len tokens) take KV-cache slots new0..new0+n_new-1; decode requests
    are slots 0..n_dec-1, one token each.
    """

    def __init__(self, kind, prompt_len, new0=0, n_new=0, n_dec=0, traced=True, family=None):
        self.kind = kind
        self.prompt_len = prompt_len
        self.new0 = new0
        self.n_new = n_new
        self.n_dec = n_dec
        self.traced = traced
        self.family = family
        self.label = None          # the step annotation's name, if the style has one
        self.kv_lens = []          # KV length of each decode request after this step
        self.engine_step = None    # running engine step counter (family C)

    @property
    def total_num_scheduled_tokens(self):
        """vLLM's name for what a step schedules; 0 means no GPU work."""
        return self.n_new * self.prompt_len + self.n_dec

    @property
    def sampled_rows(self):
        return self.n_new + self.n_dec


def build_plan(style, batch, prompt_len, decode_steps):
    """The style's engine steps, in order, untraced warm-up iterations first."""
    st = STYLES[style]
    t = prompt_len
    if st["plan"] == "continuous":
        return continuous_plan(batch, st["first_batch"], t)
    plan = [PlanStep("prefill", t, 0, batch)] + [PlanStep("decode", t, n_dec=batch) for _ in range(decode_steps)]
    if st["plan"] == "fixed_empty_last":
        plan.append(PlanStep("empty", t))
    wait, warmup = st.get("profiler_step", (0, 0))
    head = []
    if wait + warmup:
        # Iterations the schedule waits and warms up on: a first batch (its
        # prefill, then decode), not in the trace.
        head = [PlanStep("prefill", t, 0, batch, traced=False)]
        head += [PlanStep("decode", t, n_dec=batch, traced=False) for _ in range(wait + warmup - 1)]
    return head + plan


def continuous_plan(slots, first, t):
    """Requests join a running batch; three annotation families, one after the other.

    B: steps 0-4   prefill of `first` requests, then 4 decode steps
    A: steps 5-9   one request joins (mixed), then 4 decode steps
    C: steps 10-15 one more joins (mixed), then 5 decode steps
    """
    if slots != first + 2:
        raise ValueError(f"continuous plan needs batch = {first + 2} KV slots, got {slots}")
    plan = [PlanStep("prefill", t, 0, first, family="B")]
    plan += [PlanStep("decode", t, n_dec=first, family="B") for _ in range(4)]
    plan += [PlanStep("mixed", t, first, 1, first, family="A")]
    plan += [PlanStep("decode", t, n_dec=first + 1, family="A") for _ in range(4)]
    plan += [PlanStep("mixed", t, first + 1, 1, first + 1, family="C")]
    plan += [PlanStep("decode", t, n_dec=first + 2, family="C") for _ in range(5)]
    return plan


def execute_context_name(ctx_reqs, ctx_tokens, gen_reqs, gen_tokens):
    """vLLM's per-step annotation (GPUWorker.annotate_profile)."""
    return f"execute_context_{ctx_reqs}({ctx_tokens})_generation_{gen_reqs}({gen_tokens})"


def label_plan(style, plan):
    """Sets each step's KV lengths, engine step counter and annotation name."""
    st = STYLES[style]
    kv = {}
    for i, s in enumerate(plan):
        s.engine_step = len(plan) + i  # warm-up ran the whole plan once before
        for j in range(s.new0, s.new0 + s.n_new):
            kv[j] = s.prompt_len
        for j in range(s.n_dec):
            kv[j] += 1
        s.kv_lens = [kv[j] for j in range(s.n_dec)]
        if st["marks"] == "execute_model" and s.kind != "empty":
            s.label = "execute_model"
        if st["marks"] != "vllm" or s.kind == "empty":
            continue
        ctx_t, gen_t = s.n_new * s.prompt_len, s.n_dec
        if s.family is None:
            s.label = execute_context_name(s.n_new, ctx_t, s.n_dec, gen_t)
        elif s.family == "A":
            s.label = f"execute_new_{s.n_new}_cached_{s.n_dec}"
        elif s.family == "B":
            # Like a vLLM trace's execute_context_1(888_788544)_generation_0(0):
            # tokens, then (our reading of 788544 = 888 * 888) the sum of query
            # x key lengths for context requests, the summed KV length for
            # generation requests; "(0)" where there are none.
            ctx = f"({ctx_t}_{s.n_new * s.prompt_len * s.prompt_len})" if s.n_new else "(0)"
            gen = f"({gen_t}_{sum(s.kv_lens)})" if s.n_dec else "(0)"
            s.label = f"execute_context_{s.n_new}{ctx}_generation_{s.n_dec}{gen}"
        elif s.family == "C":
            s.label = f"execute_{s.engine_step}_context_{s.n_new}({ctx_t})_generation_{s.n_dec}({gen_t})"
    return plan


class Marks:
    """The record_function annotations a style writes (none for most)."""

    def __init__(self, kind, record_function):
        self.kind = kind
        self.record_function = record_function
        self.phases = PHASE_NAMES.get(kind, {})

    def step(self, s):
        if self.kind == "vllm":
            return self.record_function(s.label)
        if self.kind == "execute_model":
            return self.record_function("execute_model")
        return contextlib.nullcontext()

    def phase(self, name):
        ann = self.phases.get(name)
        return self.record_function(ann) if ann else contextlib.nullcontext()


FAMILY_FORMATS = {
    None: "execute_context_{ctx_requests}({ctx_tokens})_generation_{gen_requests}({gen_tokens})",
    "A": "execute_new_{new_requests}_cached_{running_requests}",
    "B": "execute_context_{ctx_requests}({ctx_tokens}_{sum of query x key lengths})_generation_"
         "{gen_requests}({gen_tokens}_{sum of KV lengths}); '(0)' for none",
    "C": "execute_{engine step}_context_{ctx_requests}({ctx_tokens})_generation_{gen_requests}({gen_tokens})",
}
