#!/usr/bin/env python3
"""Real multi-GPU sample traces for Kinetoscope.

A small tensor-parallel decoder (TP = world size, one process per GPU, random
bf16 weights, Llama-3-8B-shaped layers) runs one prefill step and N decode
steps under torch.profiler, and writes its traces the way vLLM does:
tensorboard_trace_handler(dir, worker_name=..., use_gzip=True), one
*.pt.trace.json.gz per rank, each step wrapped in a
record_function("execute_context_N(T)_generation_M(U)") annotation.

Each layer: RMSNorm -> QKV column-parallel GEMM -> KV-cache write -> SDPA
attention -> row-parallel out proj -> NCCL all_reduce -> residual add ->
RMSNorm -> gate_up GEMM -> SiLU-and-mul -> down proj -> NCCL all_reduce ->
residual add. Then final RMSNorm, vocab-parallel lm_head GEMM, NCCL
all_gather of the logits, and sampling (softmax, top-k, argmax, gather) on
every rank, then a device-to-host copy of the sampled tokens.

Variants (--variant):
  eager         everything eager.
  cudagraph     the decode forward (embedding, all layers with their
                all_reduces, final norm) is captured once in a
                torch.cuda.CUDAGraph and replayed each decode step; prefill,
                lm_head, all_gather and sampling stay eager (as in vLLM).
  p2p_disabled  eager with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=0: NCCL moves
                data through host shared memory, as on PCIe-only machines.
  nccl_simple   eager with NCCL_PROTO=Simple: the one NCCL setting a user
                changes between two profiles (eager runs NCCL's default
                protocol choice, LL for these message sizes).

Launch (one process per GPU):
  python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
      tp_decode.py --variant eager --out OUTDIR

Next to the traces it writes truth.json: what is known by construction
(world size, layers, steps, batch, collectives per step, message sizes,
annotation names, versions, environment).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

# NVLink multicast must stay off on the lent machines; set before torch/NCCL
# read their environment.
SAFETY_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
for _k, _v in SAFETY_ENV.items():
    os.environ[_k] = _v

# The NCCL variables each variant sets; every other variant runs with them
# unset (NCCL's defaults), so a pair of variants differs in these alone.
VARIANT_ENV = {
    "eager": {},
    "cudagraph": {},
    "p2p_disabled": {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "0"},
    "nccl_simple": {"NCCL_PROTO": "Simple"},
}
VARIANTS = tuple(VARIANT_ENV)
# Variables that change NCCL's transport, algorithm or protocol; a variant
# that does not set one refuses to run with it set.
NCCL_CHOICE_VARS = ("NCCL_P2P_DISABLE", "NCCL_PROTO", "NCCL_ALGO")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", choices=VARIANTS, required=True)
    p.add_argument("--out", required=True, help="directory for traces and truth.json")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--batch", type=int, default=4, help="requests (prefill and decode)")
    p.add_argument("--prompt-len", type=int, default=128, help="tokens per request at prefill")
    p.add_argument("--decode-steps", type=int, default=32)
    p.add_argument("--warmup-decode-steps", type=int, default=4)
    p.add_argument("--max-seq", type=int, default=256, help="KV-cache length per request")
    p.add_argument("--top-k", type=int, default=50)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def setup_variant_env(variant):
    """Sets the NCCL variables of a variant before NCCL starts."""
    own = VARIANT_ENV[variant]
    for k in NCCL_CHOICE_VARS:
        if k not in own and os.environ.get(k):
            sys.exit(f"variant {variant}: {k}={os.environ[k]} is set; unset it")
    os.environ.update(own)


args = parse_args()
setup_variant_env(args.variant)

import torch  # noqa: E402  (after the environment is fixed)
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, record_function  # noqa: E402

DTYPE = torch.bfloat16


def step_name(ctx_reqs, ctx_tokens, gen_reqs, gen_tokens):
    """vLLM's per-step profiler annotation (GPUWorker.annotate_profile)."""
    return f"execute_context_{ctx_reqs}({ctx_tokens})_generation_{gen_reqs}({gen_tokens})"


def worker_name(variant, rank):
    """vLLM-like worker name: profile prefix, then get_worker_rank_suffix()."""
    return f"{variant}_dp0_pp0_tp{rank}_dcp0_ep0_rank{rank}"


def init_weight(out_features, in_features, gen, fan_in=None):
    scale = (fan_in or in_features) ** -0.5
    w = torch.randn(out_features, in_features, device="cuda", dtype=torch.float32, generator=gen)
    return (w * scale).to(DTYPE)


class RMSNorm(nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(n, device="cuda", dtype=DTYPE))

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class Attention(nn.Module):
    """QKV column-parallel, SDPA over a KV cache, out proj row-parallel + all_reduce."""

    def __init__(self, cfg, tp, gen):
        super().__init__()
        self.head_dim = cfg.hidden // cfg.heads
        self.nh = cfg.heads // tp
        self.nkv = cfg.kv_heads // tp
        self.q_size = self.nh * self.head_dim
        self.kv_size = self.nkv * self.head_dim
        self.register_buffer("qkv_w", init_weight(self.q_size + 2 * self.kv_size, cfg.hidden, gen))
        self.register_buffer("o_w", init_weight(cfg.hidden, self.q_size, gen, fan_in=cfg.heads * self.head_dim))
        shape = (cfg.batch, self.nkv, cfg.max_seq, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, device="cuda", dtype=DTYPE))
        self.register_buffer("v_cache", torch.zeros(shape, device="cuda", dtype=DTYPE))

    def forward(self, x, batch, seq, decode_meta):
        qkv = F.linear(x, self.qkv_w)
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        hd = self.head_dim
        if decode_meta is None:  # prefill: seq tokens per request, causal
            q = q.view(batch, seq, self.nh, hd).transpose(1, 2)
            k = k.view(batch, seq, self.nkv, hd).transpose(1, 2)
            v = v.view(batch, seq, self.nkv, hd).transpose(1, 2)
            self.k_cache[:, :, :seq].copy_(k)
            self.v_cache[:, :, :seq].copy_(v)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            o = o.transpose(1, 2).reshape(batch * seq, self.q_size)
        else:  # decode: one token per request, static shapes (CUDA-graph safe)
            slot, mask = decode_meta
            self.k_cache.scatter_(2, slot, k.view(batch, self.nkv, 1, hd))
            self.v_cache.scatter_(2, slot, v.view(batch, self.nkv, 1, hd))
            # GQA for one query token: the query heads of one KV head act as
            # that head's query rows.
            q = q.view(batch, self.nkv, self.nh // self.nkv, hd)
            o = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=mask)
            o = o.reshape(batch, self.q_size)
        out = F.linear(o, self.o_w)
        dist.all_reduce(out)
        return out


class MLP(nn.Module):
    """gate_up column-parallel, SiLU-and-mul, down row-parallel + all_reduce."""

    def __init__(self, cfg, tp, gen):
        super().__init__()
        inter = cfg.intermediate // tp
        self.register_buffer("gate_up_w", init_weight(2 * inter, cfg.hidden, gen))
        self.register_buffer("down_w", init_weight(cfg.hidden, inter, gen, fan_in=cfg.intermediate))

    def forward(self, x):
        gate, up = F.linear(x, self.gate_up_w).chunk(2, dim=-1)
        out = F.linear(F.silu(gate) * up, self.down_w)
        dist.all_reduce(out)
        return out


class DecoderLayer(nn.Module):
    def __init__(self, cfg, tp, gen):
        super().__init__()
        self.input_norm = RMSNorm(cfg.hidden)
        self.attn = Attention(cfg, tp, gen)
        self.post_attn_norm = RMSNorm(cfg.hidden)
        self.mlp = MLP(cfg, tp, gen)

    def forward(self, x, batch, seq, decode_meta):
        x = x + self.attn(self.input_norm(x), batch, seq, decode_meta)
        return x + self.mlp(self.post_attn_norm(x))


class TPDecoder(nn.Module):
    """Replicated embedding (no collective), layers, final norm, vocab-parallel lm_head."""

    def __init__(self, cfg, tp, gen):
        super().__init__()
        self.cfg = cfg
        self.tp = tp
        self.register_buffer("embed_w", init_weight(cfg.vocab, cfg.hidden, gen, fan_in=1))
        self.layers = nn.ModuleList([DecoderLayer(cfg, tp, gen) for _ in range(cfg.layers)])
        self.norm = RMSNorm(cfg.hidden)
        self.vocab_local = cfg.vocab // tp
        self.register_buffer("lm_head_w", init_weight(self.vocab_local, cfg.hidden, gen))
        self.register_buffer("seq_idx", torch.arange(cfg.max_seq, device="cuda"))

    def prefill(self, ids, batch, seq):
        """ids: [batch*seq]; returns the normed hidden state of each request's last token."""
        x = F.embedding(ids, self.embed_w)
        for layer in self.layers:
            x = layer(x, batch, seq, None)
        return self.norm(x).view(batch, seq, -1)[:, -1]

    def decode(self, ids, pos):
        """ids, pos: [batch]; returns the normed hidden states [batch, hidden]."""
        batch = ids.shape[0]
        nkv = self.layers[0].attn.nkv
        hd = self.layers[0].attn.head_dim
        slot = pos.view(batch, 1, 1, 1).expand(batch, nkv, 1, hd)
        mask = (self.seq_idx.view(1, -1) <= pos.view(batch, 1)).view(batch, 1, 1, -1)
        x = F.embedding(ids, self.embed_w)
        for layer in self.layers:
            x = layer(x, batch, 1, (slot, mask))
        return self.norm(x)

    def compute_logits(self, h):
        """lm_head on this rank's vocab shard, then all_gather to full logits."""
        local = F.linear(h, self.lm_head_w)
        batch = local.shape[0]
        full = torch.empty((self.tp * batch, self.vocab_local), device=local.device, dtype=local.dtype)
        dist.all_gather_into_tensor(full, local)
        return full.view(self.tp, batch, self.vocab_local).permute(1, 0, 2).reshape(batch, -1)


def sample(logits, temperature, top_k):
    """Top-k sampling made deterministic: the most likely of the top k."""
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    top_p, top_i = probs.topk(top_k, dim=-1)
    return top_i.gather(-1, top_p.argmax(dim=-1, keepdim=True)).squeeze(-1)


class Runner:
    """Runs prefill and decode steps, vLLM-style, eager or with a CUDA graph."""

    def __init__(self, model, cfg, use_graph):
        self.model = model
        self.cfg = cfg
        self.use_graph = use_graph
        b = cfg.batch
        self.ids = torch.zeros(b, dtype=torch.long, device="cuda")
        self.pos = torch.zeros(b, dtype=torch.long, device="cuda")
        self.ids_cpu = torch.zeros(b, dtype=torch.long).pin_memory()
        self.pos_cpu = torch.zeros(b, dtype=torch.long).pin_memory()
        self.graph = None
        self.graph_out = None

    def _finish(self, h):
        with record_function("gpu_model_runner: sample"):
            tokens = sample(self.model.compute_logits(h), self.cfg.temperature, self.cfg.top_k)
        with record_function("gpu_model_runner: postprocess"):
            return tokens.cpu()

    def prefill(self, prompts_cpu):
        b, t = prompts_cpu.shape
        with record_function(step_name(b, b * t, 0, 0)):
            with record_function("gpu_model_runner: preprocess"):
                ids = prompts_cpu.view(-1).to("cuda", non_blocking=True)
            with record_function("gpu_model_runner: forward"):
                h = self.model.prefill(ids, b, t)
            return self._finish(h)

    def decode(self, tokens_cpu, position):
        b = self.cfg.batch
        with record_function(step_name(0, 0, b, b)):
            with record_function("gpu_model_runner: preprocess"):
                self.ids_cpu.copy_(tokens_cpu)
                self.pos_cpu.fill_(position)
                self.ids.copy_(self.ids_cpu, non_blocking=True)
                self.pos.copy_(self.pos_cpu, non_blocking=True)
            with record_function("gpu_model_runner: forward"):
                if self.graph is not None:
                    self.graph.replay()
                    h = self.graph_out
                else:
                    h = self.model.decode(self.ids, self.pos)
            return self._finish(h)

    def capture(self):
        """Captures the decode forward (all-reduces included) in one CUDA graph."""
        try:
            from torch.profiler._utils import _init_for_cuda_graphs
            _init_for_cuda_graphs()  # CUPTI up before capture, or replays lose their kernels
        except ImportError:
            print("torch.profiler._utils._init_for_cuda_graphs missing; capturing anyway", flush=True)
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self.model.decode(self.ids, self.pos)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.graph_out = self.model.decode(self.ids, self.pos)
        torch.cuda.synchronize()


def run_steps(runner, prompts, decode_steps, timings=None):
    t0 = time.perf_counter()
    tokens = runner.prefill(prompts)
    t1 = time.perf_counter()
    if timings is not None:
        timings.append((t1 - t0) * 1e3)
    seq = prompts.shape[1]
    for i in range(decode_steps):
        t0 = time.perf_counter()
        tokens = runner.decode(tokens, seq + i)
        t1 = time.perf_counter()
        if timings is not None:
            timings.append((t1 - t0) * 1e3)
    return tokens


def shell(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as exc:  # noqa: BLE001 - informational only
        return f"unavailable: {exc}"


def nccl_version():
    v = torch.cuda.nccl.version()
    if isinstance(v, int):  # older torch: 2xxyy
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    return ".".join(str(x) for x in v)


def collectives(cfg, tp, phase, graph):
    """Collectives one rank issues in one step, by construction."""
    tokens = cfg.batch * cfg.prompt_len if phase == "prefill" else cfg.batch
    vl = cfg.vocab // tp
    return [
        {
            "kind": "allreduce", "op": "sum", "count": 2 * cfg.layers,
            "where": "after attention out proj and after MLP down proj, every layer",
            "nelems": tokens * cfg.hidden, "dtype": "bfloat16", "bytes": tokens * cfg.hidden * 2,
            "in_cuda_graph": graph and phase == "decode",
        },
        {
            "kind": "allgather", "count": 1, "where": "logits after the vocab-parallel lm_head",
            "in_nelems": cfg.batch * vl, "out_nelems": cfg.batch * vl * tp,
            "dtype": "bfloat16", "bytes_in": cfg.batch * vl * 2, "in_cuda_graph": False,
        },
    ]


def build_truth(cfg, tp, trace_files, timings, warmup_prefills):
    graph = cfg.variant == "cudagraph"
    b, t = cfg.batch, cfg.prompt_len
    steps = [{
        "index": 0, "phase": "prefill", "name": step_name(b, b * t, 0, 0),
        "context_requests": b, "context_tokens": b * t, "generation_requests": 0,
        "generation_tokens": 0, "cuda_graph": False,
        "collectives_per_rank": collectives(cfg, tp, "prefill", graph),
    }]
    for i in range(cfg.decode_steps):
        steps.append({
            "index": i + 1, "phase": "decode", "name": step_name(0, 0, b, b),
            "context_requests": 0, "context_tokens": 0, "generation_requests": b,
            "generation_tokens": b, "cuda_graph": graph, "kv_position": t + i,
            "collectives_per_rank": collectives(cfg, tp, "decode", graph),
        })
    hd = cfg.hidden // cfg.heads
    env_keys = sorted(k for k in os.environ if k.startswith(("NCCL_", "TORCH_NCCL", "NVSHMEM_", "TORCH_SYMM"))
                      or k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS"))
    return {
        "synthetic": False,
        "generator": "sampletraces/gen/tp_decode.py",
        "variant": cfg.variant,
        "variant_env": VARIANT_ENV[cfg.variant],
        "nccl_protocol": VARIANT_ENV[cfg.variant].get(
            "NCCL_PROTO", "NCCL default (tuner picks per message size; not forced)"),
        "world_size": tp,
        "tensor_parallel": tp,
        "model": {
            "kind": "Llama-3-8B-shaped decoder, random weights",
            "layers": cfg.layers, "hidden": cfg.hidden, "heads": cfg.heads, "kv_heads": cfg.kv_heads,
            "head_dim": hd, "intermediate": cfg.intermediate, "vocab": cfg.vocab, "dtype": "bfloat16",
            "heads_per_rank": cfg.heads // tp, "kv_heads_per_rank": cfg.kv_heads // tp,
            "intermediate_per_rank": cfg.intermediate // tp, "vocab_per_rank": cfg.vocab // tp,
            "embedding": "replicated on every rank (no collective)",
            "attention": "torch SDPA; prefill causal with enable_gqa, decode over a static "
                         f"{cfg.max_seq}-slot KV cache with a boolean mask; no rotary embedding",
            "lm_head": "vocab-parallel (column split), logits all_gather to every rank",
            "sampling": "softmax, top-k, argmax, gather on every rank; no collective",
        },
        "batch": b,
        "prompt_len": t,
        "prefill_tokens": b * t,
        "prefill_steps": 1,
        "decode_steps": cfg.decode_steps,
        "steps_total": 1 + cfg.decode_steps,
        "step_names": [s["name"] for s in steps],
        "steps": steps,
        "per_rank_per_step": {
            "allreduce": 2 * cfg.layers, "allgather": 1, "collectives": 2 * cfg.layers + 1,
            "note": "identical for prefill and decode steps; only message sizes differ",
        },
        "nested_annotations": ["gpu_model_runner: preprocess", "gpu_model_runner: forward",
                               "gpu_model_runner: sample", "gpu_model_runner: postprocess"],
        "step_annotation_format": "execute_context_{requests}({tokens})_generation_{requests}({tokens})",
        "host_syncs_per_step": "one: the sampled tokens are copied to the host (tokens.cpu())",
        "cuda_graph": {
            "used": graph,
            "covers": ("decode forward: embedding, every layer with both all_reduces, final norm; "
                       "one cudaGraphLaunch per decode step" if graph else "nothing"),
            "eager_parts": "prefill; lm_head, all_gather, sampling and copies of every step",
            "captured_before_profiling": graph,
        },
        "outside_steps": "after the profiler starts, one gloo (CPU) barrier lines the ranks up; no GPU work",
        "warmup": {"prefill_steps": warmup_prefills, "decode_steps_each": cfg.warmup_decode_steps,
                   "profiled": False},
        "profiler": {
            "activities": ["CPU", "CUDA"], "record_shapes": True, "with_stack": True,
            "on_trace_ready": "tensorboard_trace_handler(dir, worker_name, use_gzip=True)",
            "window": "exactly the steps listed (profiler started after warm-up, stopped after the last step)",
        },
        "traces": trace_files,
        "versions": {
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": nccl_version(),
            "python": platform.python_version(),
            "gpu": torch.cuda.get_device_name(),
            "driver": (shell(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
                       .splitlines() or [""])[0],
        },
        "env": {k: os.environ[k] for k in env_keys},
        "gpu_topology": shell(["nvidia-smi", "topo", "-m"]),
        "measured": {
            "note": "wall-clock per step (perf_counter, under the profiler), rank -> ms; measured, not by construction",
            "step_wall_ms": timings,
        },
    }


def main(cfg):
    need = cfg.prompt_len + max(cfg.decode_steps, cfg.warmup_decode_steps)
    if need > cfg.max_seq:
        sys.exit(f"--max-seq {cfg.max_seq} < prompt + decode steps ({need})")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    tp = dist.get_world_size()
    cpu_group = dist.new_group(backend="gloo")
    gen = torch.Generator(device="cuda").manual_seed(cfg.seed + 1000 * rank)
    model = TPDecoder(cfg, tp, gen)
    prompts = torch.randint(0, cfg.vocab, (cfg.batch, cfg.prompt_len),
                            generator=torch.Generator().manual_seed(cfg.seed)).pin_memory()
    runner = Runner(model, cfg, cfg.variant == "cudagraph")

    # Warm-up: eager prefill + decode, capture, then one more round (replays).
    run_steps(runner, prompts, cfg.warmup_decode_steps)
    warmup_prefills = 1
    if runner.use_graph:
        runner.capture()
        run_steps(runner, prompts, cfg.warmup_decode_steps)
        warmup_prefills = 2
    torch.cuda.synchronize()
    dist.barrier()

    os.makedirs(cfg.out, exist_ok=True)
    name = worker_name(cfg.variant, rank)
    prof = torch.profiler.profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        record_shapes=True,
        with_stack=True,
        on_trace_ready=torch.profiler.tensorboard_trace_handler(cfg.out, worker_name=name, use_gzip=True),
    )
    timings = []
    prof.start()
    # Profiler start-up takes a different time on each rank; line the ranks
    # up on a CPU (gloo) barrier so the first step's collectives don't wait
    # for it. No GPU kernel, outside every step.
    dist.barrier(group=cpu_group)
    run_steps(runner, prompts, cfg.decode_steps, timings)
    torch.cuda.synchronize()
    prof.stop()

    mine = sorted(f for f in os.listdir(cfg.out) if f.startswith(name + "."))
    every = [None] * tp
    dist.all_gather_object(every, {"rank": rank, "files": mine, "timings": timings})
    if rank == 0:
        files = {str(e["rank"]): e["files"][-1] if e["files"] else None for e in every}
        times = {str(e["rank"]): [round(x, 3) for x in e["timings"]] for e in every}
        truth = build_truth(cfg, tp, files, times, warmup_prefills)
        with open(os.path.join(cfg.out, "truth.json"), "w") as f:
            json.dump(truth, f, indent=1)
            f.write("\n")
        dec = times["0"][1:]
        print(f"[{cfg.variant}] traces {files}; prefill {times['0'][0]:.2f} ms; "
              f"decode median {sorted(dec)[len(dec) // 2]:.2f} ms (rank 0, under profiler)", flush=True)
    dist.barrier(group=cpu_group)
    # Tearing NCCL down while a captured graph still holds its communicator
    # can hang; the work is done and written, so leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    with torch.inference_mode():
        main(args)
