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

Styles (--variant STYLE; see styles.py and README.md): the shapes in which
real servers leave their steps in a trace, each run at any TP (one GPU: TP 1,
where, as in vLLM, no collective runs):
  withstack_execute_model  python_function execute_model events only (vLLM 0.8-0.10)
  annotated_execute_model  execute_model annotation, nested prepare_inputs/forward/sample
  vllm_new_annotations     newer vLLM annotation families, mixed steps, Marlin MLP
  profilerstep             ProfilerStep#N from a wait/warmup/active schedule
  profilerstep_vllm        ProfilerStep#N around vLLM's annotation, CUDA graph, Marlin MLP
  bare_eager, bare_cudagraph  no marks at all
  moe                      INT4 MoE (routing, permutation, per-expert Marlin GEMMs), no marks
  pair_eager, pair_host_delay, host_sync_item  execute_model marks, eager; host stalls inside the
                           step (none; a 1 ms sleep; a .item() and sleeps) for the step-time account
  moe_sync                 moe with a host sync per layer (router counts .tolist()), 8 layers
The INT4 styles call the Marlin kernel (IST-DASLab/marlin) through
`import marlin`; it is not part of this repository.

Next to the traces it writes truth.json: what is known by construction
(world size, layers, steps, batch, collectives per step, message sizes,
annotation names, versions, environment; for styles also each step's phase,
requests and tokens, Marlin calls, and its host wall-clock window).
"""

import argparse
import inspect
import json
import os
import platform
import socket
import subprocess
import sys
import time

import styles

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
STYLES = tuple(styles.STYLES)
# Variables that change NCCL's transport, algorithm or protocol; a variant
# that does not set one refuses to run with it set.
NCCL_CHOICE_VARS = ("NCCL_P2P_DISABLE", "NCCL_PROTO", "NCCL_ALGO")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", choices=VARIANTS + STYLES, required=True,
                   help="one of the four TP2 variants or a trace style (styles.py)")
    p.add_argument("--out", required=True, help="directory for traces and truth.json")
    p.add_argument("--layers", type=int, default=None, help="default 4 (moe_sync: 8)")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--intermediate", type=int, default=14336)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--batch", type=int, default=None,
                   help="requests (prefill and decode); KV-cache slots (default 4; vllm_new_annotations 5)")
    p.add_argument("--prompt-len", type=int, default=128, help="tokens per request at prefill")
    p.add_argument("--decode-steps", type=int, default=None,
                   help="decode steps (default 32; styles: 15, withstack_execute_model 14; "
                        "ignored by the continuous plan of vllm_new_annotations)")
    p.add_argument("--warmup-decode-steps", type=int, default=4)
    p.add_argument("--max-seq", type=int, default=256, help="KV-cache length per request")
    p.add_argument("--top-k", type=int, default=50)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--experts", type=int, default=8, help="moe: routed experts")
    p.add_argument("--moe-top-k", type=int, default=2, help="moe: experts per token")
    p.add_argument("--expert-intermediate", type=int, default=1024, help="moe: intermediate size per expert")
    p.add_argument("--device", default="cuda",
                   help="cuda; cpu only for a smoke test of the generator's logic (no trace for the repo)")
    p.add_argument("--dtype", default=None, choices=("bfloat16", "float16", "float32"),
                   help="default: bfloat16, float16 for the Marlin styles (Marlin is FP16 x INT4)")
    a = p.parse_args(argv)
    style = styles.STYLES.get(a.variant, {})
    if a.batch is None:
        a.batch = style.get("batch", 4)
    if a.layers is None:
        a.layers = style.get("layers", 4)
    if a.decode_steps is None:
        a.decode_steps = style.get("decode_steps", 32)
    if a.dtype is None:
        a.dtype = "float16" if style.get("quant") else "bfloat16"
    a.quant = style.get("quant")
    a.host_sync = style.get("host_sync")
    return a


def setup_variant_env(variant):
    """Sets the NCCL variables of a variant before NCCL starts."""
    own = VARIANT_ENV.get(variant, {})
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

DTYPE = getattr(torch, args.dtype)
DEVICE = args.device
STYLE = styles.STYLES.get(args.variant)


def require_marlin():
    """The Marlin FP16 x INT4 kernel (IST-DASLab/marlin), or a clear exit."""
    try:
        import marlin
    except ImportError as exc:
        sys.exit(f"--variant {args.variant}: its INT4 GEMMs run the Marlin kernel, but `import marlin` "
                 f"failed ({exc}). Marlin (IST-DASLab/marlin, a torch CUDA extension) is not part of "
                 "this repository; install it where Python finds it (PYTHONPATH).")
    return marlin


def all_reduce(t, tp):
    """Row-parallel output sum; at TP 1 nothing runs (vLLM skips it too)."""
    if tp > 1:
        dist.all_reduce(t)


def step_name(ctx_reqs, ctx_tokens, gen_reqs, gen_tokens):
    """vLLM's per-step profiler annotation (GPUWorker.annotate_profile)."""
    return f"execute_context_{ctx_reqs}({ctx_tokens})_generation_{gen_reqs}({gen_tokens})"


def worker_name(variant, rank):
    """vLLM-like worker name: profile prefix, then get_worker_rank_suffix()."""
    return f"{variant}_dp0_pp0_tp{rank}_dcp0_ep0_rank{rank}"


def init_weight(out_features, in_features, gen, fan_in=None):
    scale = (fan_in or in_features) ** -0.5
    w = torch.randn(out_features, in_features, device=DEVICE, dtype=torch.float32, generator=gen)
    return (w * scale).to(DTYPE)


def rms_norm(x, weight, eps):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    # torch < 2.4, for --device cpu smoke tests only
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class RMSNorm(nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(n, device=DEVICE, dtype=DTYPE))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class MarlinLinear(nn.Module):
    """FP16 x INT4 linear through the Marlin kernel (no bias, group size 128).

    Random 4-bit weights: every packed nibble uniform in 0..15 (a weight of
    nibble - 8 times its group's scale), so no packing pass is needed; fp16
    scales per group of 128 inputs, about 1/sqrt(fan_in) per weight.
    """

    def __init__(self, in_features, out_features, gen, fan_in=None):
        super().__init__()
        self.marlin = require_marlin()
        if in_features % 128 or out_features % 256:
            sys.exit(f"Marlin needs in-features divisible by 128 and out-features by 256: "
                     f"{in_features} x {out_features}")
        self.n = out_features
        nibbles = torch.randint(0, 256, (in_features // 16, out_features * 16 // 8 * 4), dtype=torch.uint8,
                                device=DEVICE, generator=gen)
        self.register_buffer("B", nibbles.view(torch.int32))
        scale = (fan_in or in_features) ** -0.5 / 4.6  # 4.6: std of a nibble - 8
        s = (torch.rand(in_features // 128, out_features, device=DEVICE, generator=gen) * 0.5 + 0.75) * scale
        self.register_buffer("s", s.to(torch.float16))
        self.register_buffer("workspace", torch.zeros(out_features // 128 * 16, dtype=torch.int32, device=DEVICE))

    def forward(self, x, out=None):
        """x: [m, in] fp16, contiguous; out: [m, out] fp16 (a contiguous row range may be given)."""
        if out is None:
            out = torch.empty(x.shape[0], self.n, dtype=x.dtype, device=x.device)
        self.marlin.mul(x, self.B, out, self.s, self.workspace)
        return out


def check_marlin(gen):
    """Marlin against an fp16 matmul of the same fake-quantized weights (Layer.pack), m = 4 and 512."""
    marlin = require_marlin()
    k, n, g = 1024, 512, 128
    w = torch.randn(n, k // g, g, device=DEVICE, generator=gen)
    s = (w.abs().amax(-1) / 7).clamp(min=1e-3).half().float()
    ref_w = (torch.round(w / s[..., None]).clamp(-8, 7) * s[..., None]).view(n, k).half()
    lin = nn.Linear(k, n, bias=False).to(DEVICE).half()
    lin.weight.data = ref_w
    layer = marlin.Layer(k, n, groupsize=g).to(DEVICE)
    layer.pack(lin, s.half())
    errs = {}
    for m in (4, 512):
        a = torch.randn(m, k, device=DEVICE, generator=gen).half()
        got = layer(a).float()
        want = a.float() @ ref_w.float().t()
        errs[str(m)] = round(((got - want).abs().mean() / want.abs().mean()).item(), 6)
    ok = all(e < 1e-2 for e in errs.values())
    print(f"marlin check (k={k}, n={n}, group {g}): mean relative error {errs} {'ok' if ok else 'FAILED'}",
          flush=True)
    if not ok:
        sys.exit("Marlin gives wrong results on this GPU")
    return {"k": k, "n": n, "groupsize": g, "mean_relative_error_by_m": errs,
            "reference": "fp16 matmul of the same fake-quantized weights, packed by marlin.Layer.pack"}


def sdpa(q, k, v, attn_mask=None, is_causal=False, enable_gqa=False):
    if hasattr(F, "scaled_dot_product_attention"):
        kw = {"enable_gqa": True} if enable_gqa else {}
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, **kw)
    # torch < 2.0, for --device cpu smoke tests only
    if enable_gqa:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    a = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if is_causal:
        a = a.masked_fill(torch.ones(a.shape[-2:], dtype=torch.bool, device=a.device).triu(1), float("-inf"))
    if attn_mask is not None:
        a = a.masked_fill(~attn_mask, float("-inf"))
    return torch.softmax(a.float(), -1).to(q.dtype) @ v


class Attention(nn.Module):
    """QKV column-parallel, SDPA over a KV cache, out proj row-parallel + all_reduce."""

    def __init__(self, cfg, tp, gen):
        super().__init__()
        self.tp = tp
        self.head_dim = cfg.hidden // cfg.heads
        self.nh = cfg.heads // tp
        self.nkv = cfg.kv_heads // tp
        self.q_size = self.nh * self.head_dim
        self.kv_size = self.nkv * self.head_dim
        self.register_buffer("qkv_w", init_weight(self.q_size + 2 * self.kv_size, cfg.hidden, gen))
        self.register_buffer("o_w", init_weight(cfg.hidden, self.q_size, gen, fan_in=cfg.heads * self.head_dim))
        shape = (cfg.batch, self.nkv, cfg.max_seq, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, device=DEVICE, dtype=DTYPE))
        self.register_buffer("v_cache", torch.zeros(shape, device=DEVICE, dtype=DTYPE))

    def forward(self, x, pre, dec):
        """x: the step's tokens, prefill requests' first.

        pre: (slot0, requests, tokens each) or None: causal attention over
        their own tokens, written to KV slots slot0...; dec: (slot, mask,
        requests) or None: one token each for KV slots 0..requests-1, over
        the static KV cache with a boolean mask (CUDA-graph safe).
        """
        qkv = F.linear(x, self.qkv_w)
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        hd = self.head_dim
        outs = []
        n_pre = 0
        if pre is not None:
            s0, batch, seq = pre
            n_pre = batch * seq
            qp = q[:n_pre].view(batch, seq, self.nh, hd).transpose(1, 2)
            kp = k[:n_pre].view(batch, seq, self.nkv, hd).transpose(1, 2)
            vp = v[:n_pre].view(batch, seq, self.nkv, hd).transpose(1, 2)
            self.k_cache[s0:s0 + batch, :, :seq].copy_(kp)
            self.v_cache[s0:s0 + batch, :, :seq].copy_(vp)
            o = sdpa(qp, kp, vp, is_causal=True, enable_gqa=True)
            outs.append(o.transpose(1, 2).reshape(n_pre, self.q_size))
        if dec is not None:
            slot, mask, batch = dec
            full = batch == self.k_cache.shape[0]
            kc = self.k_cache if full else self.k_cache[:batch]
            vc = self.v_cache if full else self.v_cache[:batch]
            kc.scatter_(2, slot, k[n_pre:].view(batch, self.nkv, 1, hd))
            vc.scatter_(2, slot, v[n_pre:].view(batch, self.nkv, 1, hd))
            # GQA for one query token: the query heads of one KV head act as
            # that head's query rows.
            qd = q[n_pre:].view(batch, self.nkv, self.nh // self.nkv, hd)
            o = sdpa(qd, kc, vc, attn_mask=mask)
            outs.append(o.reshape(batch, self.q_size))
        o = outs[0] if len(outs) == 1 else torch.cat(outs)
        out = F.linear(o, self.o_w)
        all_reduce(out, self.tp)
        return out


class MLP(nn.Module):
    """gate_up column-parallel, SiLU-and-mul, down row-parallel + all_reduce.

    Dense bf16 through cuBLAS, or (cfg.quant marlin_mlp) fp16 x INT4 through Marlin.
    """

    def __init__(self, cfg, tp, gen):
        super().__init__()
        self.tp = tp
        inter = cfg.intermediate // tp
        self.quant = cfg.quant == "marlin_mlp"
        if self.quant:
            self.gate_up = MarlinLinear(cfg.hidden, 2 * inter, gen)
            self.down = MarlinLinear(inter, cfg.hidden, gen, fan_in=cfg.intermediate)
        else:
            self.register_buffer("gate_up_w", init_weight(2 * inter, cfg.hidden, gen))
            self.register_buffer("down_w", init_weight(cfg.hidden, inter, gen, fan_in=cfg.intermediate))

    def forward(self, x):
        if self.quant:
            gate, up = self.gate_up(x).chunk(2, dim=-1)
            out = self.down(F.silu(gate) * up)
        else:
            gate, up = F.linear(x, self.gate_up_w).chunk(2, dim=-1)
            out = F.linear(F.silu(gate) * up, self.down_w)
        all_reduce(out, self.tp)
        return out


class MoE(nn.Module):
    """Routed experts (no shared expert), each a Marlin INT4 gate_up + down.

    Router GEMM, softmax, top-k, renormalise; token permutation: the
    (token, expert) pairs sorted by expert, each given a row in its expert's
    block of a capacity-padded buffer (capacity = tokens: an expert gets each
    token at most once), index_copy into it; per expert a Marlin gate_up,
    SiLU-and-mul and a Marlin down into its block; then index_select back
    and the weighted sum over the top k. No host synchronisation, unless
    cfg.host_sync: then the router copies its per-expert counts to the host
    (.tolist()) and checks them, one device-to-host copy the CPU waits for
    in every layer. Expert intermediate split over TP ranks, all_reduce of
    the sum.
    """

    def __init__(self, cfg, tp, gen):
        super().__init__()
        self.tp = tp
        self.experts = cfg.experts
        self.top_k = cfg.moe_top_k
        self.host_sync = cfg.host_sync == "per_layer"
        inter = cfg.expert_intermediate // tp
        self.register_buffer("router_w", init_weight(cfg.experts, cfg.hidden, gen))
        self.gate_up = nn.ModuleList(MarlinLinear(cfg.hidden, 2 * inter, gen) for _ in range(cfg.experts))
        self.down = nn.ModuleList(MarlinLinear(inter, cfg.hidden, gen, fan_in=cfg.expert_intermediate)
                                  for _ in range(cfg.experts))

    def forward(self, x):
        t, h = x.shape
        e, k = self.experts, self.top_k
        probs = torch.softmax(F.linear(x, self.router_w), dim=-1, dtype=torch.float32)
        top_w, top_i = probs.topk(k, dim=-1)
        top_w = top_w / top_w.sum(dim=-1, keepdim=True)
        flat = top_i.view(-1)
        sorted_e, perm = torch.sort(flat, stable=True)
        counts = torch.zeros(e, dtype=torch.long, device=x.device).scatter_add_(0, flat, torch.ones_like(flat))
        if self.host_sync:
            load = counts.tolist()  # device-to-host copy; the CPU waits for the router
            if sum(load) != t * k:
                sys.exit(f"router counts {load} do not add up to {t} tokens x top {k}")
        starts = torch.cumsum(counts, 0) - counts
        rank_in_e = torch.arange(t * k, device=x.device) - starts[sorted_e]
        dest = torch.empty_like(flat).scatter_(0, perm, sorted_e * t + rank_in_e)  # row of pair i
        buf = x.new_zeros(e * t, h)
        buf.index_copy_(0, dest, x.unsqueeze(1).expand(t, k, h).reshape(t * k, h))
        out = x.new_empty(e * t, h)
        for j in range(e):
            rows = slice(j * t, (j + 1) * t)
            gate, up = self.gate_up[j](buf[rows]).chunk(2, dim=-1)
            self.down[j](F.silu(gate) * up, out=out[rows])
        y = out.index_select(0, dest).view(t, k, h)
        y = (y * top_w.to(x.dtype).unsqueeze(-1)).sum(dim=1)
        all_reduce(y, self.tp)
        return y


class DecoderLayer(nn.Module):
    def __init__(self, cfg, tp, gen):
        super().__init__()
        self.input_norm = RMSNorm(cfg.hidden)
        self.attn = Attention(cfg, tp, gen)
        self.post_attn_norm = RMSNorm(cfg.hidden)
        self.mlp = MoE(cfg, tp, gen) if cfg.quant == "marlin_moe" else MLP(cfg, tp, gen)

    def forward(self, x, pre, dec):
        x = x + self.attn(self.input_norm(x), pre, dec)
        return x + self.mlp(self.post_attn_norm(x))


def run_host_hooks(layer, x):
    """The style's host-side stalls after a layer (styles.py: host_hooks); none while capturing."""
    hooks = (STYLE or {}).get("host_hooks")
    if not hooks or (DEVICE == "cuda" and torch.cuda.is_current_stream_capturing()):
        return
    for li, action in hooks:
        if li != layer:
            continue
        if action == "item":
            x.float().sum().item()
        elif action.startswith("sleep:"):
            time.sleep(float(action.split(":", 1)[1]) / 1e3)
        else:
            raise ValueError(f"unknown host hook {action!r}")


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
        self.register_buffer("seq_idx", torch.arange(cfg.max_seq, device=DEVICE))

    def forward_step(self, ids, pre, pos):
        """One step's forward: ids holds the prefill requests' tokens, then one per decode request.

        pre: (slot0, requests, tokens each) or None; pos: [decode requests]
        KV positions (slots 0..n-1) or None. Returns the normed hidden state
        of each request's last token, prefill requests first.
        """
        dec = None
        if pos is not None:
            batch = pos.shape[0]
            nkv = self.layers[0].attn.nkv
            hd = self.layers[0].attn.head_dim
            slot = pos.view(batch, 1, 1, 1).expand(batch, nkv, 1, hd)
            mask = (self.seq_idx.view(1, -1) <= pos.view(batch, 1)).view(batch, 1, 1, -1)
            dec = (slot, mask, batch)
        x = F.embedding(ids, self.embed_w)
        for li, layer in enumerate(self.layers):
            x = layer(x, pre, dec)
            run_host_hooks(li, x)
        x = self.norm(x)
        if pre is None:
            return x
        _, batch, seq = pre
        last = x[:batch * seq].view(batch, seq, -1)[:, -1]
        return last if pos is None else torch.cat([last, x[batch * seq:]])

    def prefill(self, ids, batch, seq):
        """ids: [batch*seq]; returns the normed hidden state of each request's last token."""
        return self.forward_step(ids, (0, batch, seq), None)

    def decode(self, ids, pos):
        """ids, pos: [batch]; returns the normed hidden states [batch, hidden]."""
        return self.forward_step(ids, None, pos)

    def compute_logits(self, h):
        """lm_head on this rank's vocab shard, then all_gather to full logits (TP > 1)."""
        local = F.linear(h, self.lm_head_w)
        if self.tp == 1:
            return local
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
        self.ids = torch.zeros(b, dtype=torch.long, device=DEVICE)
        self.pos = torch.zeros(b, dtype=torch.long, device=DEVICE)
        self.ids_cpu = pin(torch.zeros(b, dtype=torch.long))
        self.pos_cpu = pin(torch.zeros(b, dtype=torch.long))
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
                ids = prompts_cpu.view(-1).to(DEVICE, non_blocking=True)
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


class StepRunner(Runner):
    """Runs a style's plan steps (prefill, decode, mixed, empty), with the style's marks.

    KV slots: new requests take slots new0..; decode requests are slots
    0..n-1 (one token each). A decode step over every slot replays the CUDA
    graph when the style has one.
    """

    def __init__(self, model, cfg, marks, prompts):
        super().__init__(model, cfg, STYLE["graph"] and DEVICE == "cuda")  # no graph in a cpu smoke test
        self.marks = marks
        self.prompts = prompts  # [slots, prompt_len], pinned on CUDA
        slots, t = prompts.shape
        self.mix_cpu = pin(torch.zeros(slots * t + slots, dtype=torch.long))
        self.last = torch.zeros(slots, dtype=torch.long)  # each slot's last sampled token
        self.position = [0] * slots  # each slot's next KV position

    def _finish(self, h):
        with self.marks.phase("sample"):
            tokens = sample(self.model.compute_logits(h), self.cfg.temperature, self.cfg.top_k)
        with self.marks.phase("postprocess"):
            return tokens.cpu()

    def run_step(self, st):
        if st.kind == "empty":
            return None
        t = self.cfg.prompt_len
        nb, s0, nd = st.n_new, st.new0, st.n_dec
        with self.marks.phase("preprocess"):
            if nd:
                self.ids_cpu[:nd].copy_(self.last[:nd])
                self.pos_cpu[:nd].copy_(torch.tensor(self.position[:nd]))
            if nb and nd:
                n = nb * t
                self.mix_cpu[:n].copy_(self.prompts[s0:s0 + nb].reshape(-1))
                self.mix_cpu[n:n + nd].copy_(self.last[:nd])
                ids = self.mix_cpu[:n + nd].to(DEVICE, non_blocking=True)
            elif nb:
                ids = self.prompts[s0:s0 + nb].reshape(-1).to(DEVICE, non_blocking=True)
            else:
                self.ids[:nd].copy_(self.ids_cpu[:nd], non_blocking=True)
            if nd:
                self.pos[:nd].copy_(self.pos_cpu[:nd], non_blocking=True)
        with self.marks.phase("forward"):
            if not nb and self.graph is not None and nd == self.ids.shape[0]:
                self.graph.replay()
                h = self.graph_out
            elif not nb:
                h = self.model.decode(self.ids[:nd], self.pos[:nd])
            else:
                h = self.model.forward_step(ids, (s0, nb, t), self.pos[:nd] if nd else None)
        tokens = self._finish(h)
        for j in range(nb):
            self.last[s0 + j] = tokens[j]
            self.position[s0 + j] = t
        for j in range(nd):
            self.last[j] = tokens[nb + j]
            self.position[j] += 1
        return tokens


def pin(t):
    return t.pin_memory() if DEVICE == "cuda" else t


def python_function_name(fn):
    """The name PyTorch's with_stack tracer gives a function: file relative to the longest sys.path entry."""
    code = inspect.unwrap(fn).__code__
    path = os.path.abspath(code.co_filename)
    for prefix in sorted({os.path.abspath(p) for p in sys.path if p}, reverse=True):
        if path.startswith(prefix + os.sep):
            path = path[len(prefix) + 1:]
            break
    return f"{path}({code.co_firstlineno}): {code.co_name}"


def make_executor(runner, marks):
    """The call that runs one engine step; for python_function marks, vLLM's worker stand-ins."""
    if STYLE["marks"] == "python_function":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vllm_shape"))
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner
        from vllm.v1.worker.gpu_worker import Worker
        worker = Worker(GPUModelRunner(runner))
        names = [python_function_name(Worker.execute_model), python_function_name(GPUModelRunner.execute_model)]
        return worker.execute_model, names

    def execute(st):
        with marks.step(st):
            return runner.run_step(st)
    return execute, []


def style_collectives(cfg, tp, st):
    """Collectives one rank issues in a step, by construction (none at TP 1)."""
    if tp == 1 or st.kind == "empty":
        return []
    tokens = st.total_num_scheduled_tokens
    vl = cfg.vocab // tp
    return [
        {"kind": "allreduce", "op": "sum", "count": 2 * cfg.layers,
         "where": "after attention out proj and after the MLP/MoE, every layer",
         "nelems": tokens * cfg.hidden, "dtype": str(DTYPE).replace("torch.", ""),
         "in_cuda_graph": STYLE["graph"] and st.kind == "decode"},
        {"kind": "allgather", "count": 1, "where": "logits after the vocab-parallel lm_head",
         "in_nelems": st.sampled_rows * vl, "out_nelems": st.sampled_rows * vl * tp,
         "dtype": str(DTYPE).replace("torch.", ""), "in_cuda_graph": False},
    ]


def marlin_calls(cfg, st):
    """marlin.mul calls in a step, by construction (each launches one kernel for m <= 64)."""
    if st.kind == "empty" or not STYLE["quant"]:
        return 0
    per_layer = 2 if STYLE["quant"] == "marlin_mlp" else 2 * cfg.experts
    return per_layer * cfg.layers


def host_syncs_per_step(cfg):
    """Device-to-host copies a step makes besides the sampled tokens: one per MoE layer with host_sync."""
    return cfg.layers if STYLE.get("host_sync") == "per_layer" else 0


def phase_annotations(st):
    """The phase annotations nested in a step, in order."""
    names = styles.PHASE_NAMES.get(STYLE["marks"], {})
    return [] if st.kind == "empty" else [n for n in names.values() if n]


def build_style_truth(cfg, tp, plan, fn_names, files, windows, timings, marlin_check, prof_steps):
    traced = [s for s in plan if s.traced]
    steps = []
    for i, s in enumerate(traced):
        step = {
            "index": i, "phase": s.kind,
            "name": s.label or (fn_names[0] if fn_names else None) or (prof_steps[i] if prof_steps else None),
            "context_requests": s.n_new, "context_tokens": s.n_new * cfg.prompt_len,
            "generation_requests": s.n_dec, "generation_tokens": s.n_dec,
            "scheduled_tokens": s.total_num_scheduled_tokens,
            "sampled_tokens": s.sampled_rows,
            "new_request_slots": list(range(s.new0, s.new0 + s.n_new)),
            "decode_request_slots": list(range(s.n_dec)),
            "decode_kv_lengths_after": s.kv_lens,
            "cuda_graph": bool(STYLE["graph"] and s.kind == "decode"),
            "cuda_graph_launches": 1 if STYLE["graph"] and s.kind == "decode" else 0,
            "marlin_calls": marlin_calls(cfg, s),
            # the sampled tokens, one more per host sync a step (moe_sync)
            # and per .item() host hook
            "device_to_host_copies": 0 if s.kind == "empty" else
            1 + host_syncs_per_step(cfg) + sum(1 for _, a in STYLE.get("host_hooks", []) if a == "item"),
            "nested_annotations": phase_annotations(s),
            "collectives_per_rank": style_collectives(cfg, tp, s),
            "host_window_ns": {r: w[i] for r, w in windows.items()},
        }
        if s.family is not None:
            step["annotation_family"] = s.family
            step["engine_step"] = s.engine_step
        if fn_names:
            step["python_functions"] = fn_names
        if prof_steps is not None:
            step["profiler_step"] = prof_steps[i]
        steps.append(step)
    hd = cfg.hidden // cfg.heads
    wait, warmup = STYLE.get("profiler_step", (0, 0))
    marks = {
        "python_function": {"kind": "python_function", "outer": fn_names[0] if fn_names else None,
                            "inner": fn_names[1] if fn_names else None,
                            "note": "no user annotation at all; with_stack python_function events of "
                                    "Worker.execute_model, GPUModelRunner.execute_model nested inside it "
                                    "(functions in sampletraces/gen/vllm_shape)"},
        "execute_model": {"kind": "user_annotation", "step": "execute_model",
                          "nested": ["prepare_inputs", "forward", "sample"]},
        "vllm": {"kind": "user_annotation", "step": "execute_* (vLLM annotation, see steps[].name)",
                 "nested": list(styles.PHASE_NAMES["vllm"].values()),
                 "families": {k or "execute_context": v for k, v in styles.FAMILY_FORMATS.items()
                              if k in {s.family for s in traced}}},
        "none": {"kind": "none", "note": "no step mark: no user annotation, no python_function event"},
    }[STYLE["marks"]]
    if prof_steps is not None:
        marks["profiler_step"] = {"schedule": {"wait": wait, "warmup": warmup, "active": len(traced), "repeat": 1},
                                  "first": prof_steps[0], "last": prof_steps[-1],
                                  "note": "prof.step() after every iteration; the wait and warm-up "
                                          "iterations are not in the trace"}
        if STYLE["marks"] == "none":
            marks["kind"] = "profiler_step"
            marks["note"] = "the only step mark is ProfilerStep#N: no other annotation, no python_function event"
    model = {
        "kind": "Llama-3-8B-shaped decoder, random weights",
        "layers": cfg.layers, "hidden": cfg.hidden, "heads": cfg.heads, "kv_heads": cfg.kv_heads,
        "head_dim": hd, "intermediate": cfg.intermediate, "vocab": cfg.vocab,
        "dtype": str(DTYPE).replace("torch.", ""),
        "attention": "torch SDPA; prefill causal with enable_gqa, decode over a static "
                     f"{cfg.max_seq}-slot KV cache with a boolean mask; no rotary embedding",
        "lm_head": "dense; vocab-parallel with logits all_gather at TP > 1",
        "sampling": "softmax, top-k, argmax, gather; sampled tokens copied to the host every step",
    }
    if STYLE["quant"] == "marlin_mlp":
        model["mlp"] = ("gate_up and down GEMMs through the Marlin FP16 x INT4 kernel, random 4-bit weights, "
                        "group size 128; attention, lm_head dense fp16 (cuBLAS)")
    elif STYLE["quant"] == "marlin_moe":
        model["kind"] = "Mixtral-like INT4 MoE decoder, random weights"
        model["intermediate"] = None
        model["moe"] = {
            "experts": cfg.experts, "top_k": cfg.moe_top_k, "expert_intermediate": cfg.expert_intermediate,
            "shared_expert": False,
            "routing": "router GEMM, softmax (fp32), top-k, renormalise",
            "host_sync": ("per layer: the router's per-expert counts copied to the host (.tolist()) and "
                          "checked; the CPU waits for the router" if STYLE.get("host_sync") else None),
            "permutation": "pairs sorted by expert (torch.sort), per-expert rows of a capacity-padded "
                           "buffer (capacity = tokens), index_copy in, index_select out, weighted sum",
            "expert_gemms": "per expert: Marlin gate_up, SiLU-and-mul, Marlin down (random 4-bit weights, "
                            "group size 128)",
        }
    else:
        model["mlp"] = "dense bf16 gate_up and down GEMMs (cuBLAS)"
    env_keys = sorted(k for k in os.environ if k.startswith(("NCCL_", "TORCH_NCCL", "NVSHMEM_", "TORCH_SYMM"))
                      or k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS"))
    phases = [s["phase"] for s in steps]
    return {
        "synthetic": False,
        "generator": "sampletraces/gen/tp_decode.py",
        "style": cfg.variant,
        "variant": cfg.variant,
        "what": STYLE["what"],
        "host_hooks": [{"after_layer": li, "action": a} for li, a in STYLE.get("host_hooks", [])],
        "world_size": tp,
        "tensor_parallel": tp,
        "model": model,
        "batch": cfg.batch,
        "prompt_len": cfg.prompt_len,
        "steps_total": len(steps),
        "phases": {p: phases.count(p) for p in ("prefill", "decode", "mixed", "empty")},
        "step_names": [s["name"] for s in steps],
        "steps": steps,
        "marks": marks,
        "cuda_graph": {
            "used": STYLE["graph"],
            "covers": ("decode forward over every KV slot (embedding, every layer, final norm): one "
                       "cudaGraphLaunch per decode step" if STYLE["graph"] else "nothing"),
            "captured_before_profiling": STYLE["graph"],
        },
        "quant": STYLE["quant"],
        "marlin": None if not STYLE["quant"] else {
            "source": os.environ.get("KTS_MARLIN_SOURCE", "unrecorded"),
            "kernel": "Marlin<...> (FP16 x INT4, group size 128); one kernel per marlin.mul call for m <= 64",
            "check": marlin_check,
        },
        "host_window_ns": {
            "clock": "time.time_ns() (CLOCK_REALTIME) around each step's call, per rank; the trace's "
                     "ts (us) is (ns - baseTimeNanoseconds) / 1000 on the profiler's own clock",
            "use": "cuts a trace with no marks into its steps (a kernel belongs to the step whose window "
                   "holds its launch)",
        },
        "warmup": {"note": "the whole plan ran once unprofiled before (and, with a CUDA graph, the "
                           "capture and one more run with replays)", "profiled": False},
        "untraced_iterations": [s.kind for s in plan if not s.traced],
        "profiler": {
            "activities": ["CPU", "CUDA"], "record_shapes": STYLE["record_shapes"],
            "with_stack": STYLE["with_stack"],
            "schedule": None if prof_steps is None else marks["profiler_step"]["schedule"],
            "on_trace_ready": ("tensorboard_trace_handler(dir, use_gzip=True) with its default worker "
                               "name (hostname_pid), as vLLM 0.8-0.10"
                               if STYLE.get("file_naming") == "vllm_v1_default" else
                               "tensorboard_trace_handler(dir, worker_name, use_gzip=True)"),
        },
        "traces": files,
        "versions": {
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "nccl": nccl_version() if DEVICE == "cuda" else None,
            "python": platform.python_version(),
            "gpu": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu",
            "driver": (shell(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
                       .splitlines() or [""])[0],
        },
        "env": {k: os.environ[k] for k in env_keys},
        "measured": {
            "note": "wall-clock per step (perf_counter, under the profiler), rank -> ms; measured, not by construction",
            "step_wall_ms": timings,
        },
    }


def make_profiler(cfg, out, name, n_traced):
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE == "cuda" else [])
    kw = {}
    prof_step = STYLE.get("profiler_step")
    if prof_step:
        wait, warmup = prof_step
        kw["schedule"] = torch.profiler.schedule(wait=wait, warmup=warmup, active=n_traced, repeat=1)
    return torch.profiler.profile(
        activities=acts, record_shapes=STYLE["record_shapes"], with_stack=STYLE["with_stack"],
        on_trace_ready=torch.profiler.tensorboard_trace_handler(out, worker_name=name, use_gzip=True), **kw)


def main_style(cfg):
    """One style: warm-up, then the plan under the profiler; traces and truth.json in cfg.out."""
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    if DEVICE == "cuda":
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group("gloo")
    tp = dist.get_world_size()
    cpu_group = dist.new_group(backend="gloo")
    plan = styles.label_plan(cfg.variant, styles.build_plan(cfg.variant, cfg.batch, cfg.prompt_len,
                                                            cfg.decode_steps))
    need = cfg.prompt_len + sum(1 for s in plan if s.kind in ("decode", "mixed"))
    if need > cfg.max_seq:
        sys.exit(f"--max-seq {cfg.max_seq} < prompt + decode steps ({need})")
    gen = torch.Generator(device=DEVICE).manual_seed(cfg.seed + 1000 * rank)
    marlin_check = check_marlin(gen) if STYLE["quant"] else None
    model = TPDecoder(cfg, tp, gen)
    prompts = pin(torch.randint(0, cfg.vocab, (cfg.batch, cfg.prompt_len),
                                generator=torch.Generator().manual_seed(cfg.seed)))
    marks = styles.Marks(STYLE["marks"], record_function)
    runner = StepRunner(model, cfg, marks, prompts)
    execute, fn_names = make_executor(runner, marks)

    # Warm-up: the whole plan, then capture and the plan again (replays).
    for st in plan:
        execute(st)
    if runner.use_graph:
        runner.capture()
        for st in plan:
            execute(st)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    dist.barrier(group=cpu_group)

    os.makedirs(cfg.out, exist_ok=True)
    name = None if STYLE.get("file_naming") == "vllm_v1_default" else worker_name(cfg.variant, rank)
    n_traced = sum(1 for s in plan if s.traced)
    prof = make_profiler(cfg, cfg.out, name, n_traced)
    windows, timings = [], []
    prof.start()
    if tp > 1:
        dist.barrier(group=cpu_group)  # line the ranks up (CPU only), outside every step
    for st in plan:
        t0, p0 = time.time_ns(), time.perf_counter()
        execute(st)
        t1, p1 = time.time_ns(), time.perf_counter()
        if st.traced:
            windows.append([t0, t1])
            timings.append(round((p1 - p0) * 1e3, 3))
        if STYLE.get("profiler_step"):
            prof.step()
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    prof.stop()
    prof_steps = None
    if STYLE.get("profiler_step"):
        first = sum(STYLE["profiler_step"])
        prof_steps = [f"ProfilerStep#{first + i}" for i in range(n_traced)]

    prefix = name if name else f"{socket.gethostname()}_{os.getpid()}"
    mine = sorted(f for f in os.listdir(cfg.out) if f.startswith(prefix + "."))
    every = [None] * tp
    with torch.inference_mode(False):
        dist.all_gather_object(every, {"rank": rank, "files": mine, "windows": windows, "timings": timings},
                               group=cpu_group)
    if rank == 0:
        files = {str(e["rank"]): e["files"][-1] if e["files"] else None for e in every}
        wins = {str(e["rank"]): e["windows"] for e in every}
        times = {str(e["rank"]): e["timings"] for e in every}
        truth = build_style_truth(cfg, tp, plan, fn_names, files, wins, times, marlin_check, prof_steps)
        with open(os.path.join(cfg.out, "truth.json"), "w") as f:
            json.dump(truth, f, indent=1)
            f.write("\n")
        print(f"[{cfg.variant}] traces {files}; python functions {fn_names}; steps "
              f"{truth['phases']}; wall ms (rank 0) {times['0']}", flush=True)
    dist.barrier(group=cpu_group)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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
    gen = torch.Generator(device=DEVICE).manual_seed(cfg.seed + 1000 * rank)
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
        if STYLE is not None:
            main_style(args)
        else:
            main(args)
