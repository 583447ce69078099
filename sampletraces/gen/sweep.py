#!/usr/bin/env python3
"""Real traces of one decoder at many batch sizes and context lengths, with a
microbenchmark of every GEMM and attention shape in them, for the roofline
(issue #29) and the per-step cost model (issue #30).

One GPU, one process. The decoder has Llama-3-8B-shaped layers (hidden 4096,
32 query heads, 8 KV heads, head dim 128, intermediate 14336, vocab 128256),
random weights, --layers of them (default 4). Each layer: RMSNorm, QKV GEMM,
KV-cache write, SDPA attention over exactly `context` cached positions per
request (K/V of shape [batch, 8, context, 128], no mask, so the context is in
the attention op's recorded shapes), out-proj GEMM, residual add, RMSNorm,
gate_up GEMM, SiLU-and-mul, down GEMM, residual add; then the final norm, the
lm_head GEMM and sampling (softmax, top-k, argmax, gather, a device-to-host
copy of the tokens).

Traces (torch.profiler, record_shapes on, with_stack off, eager; written by
tensorboard_trace_handler with vLLM's worker naming):

  batch_sweep   bf16, cuBLAS GEMMs. One prefill of 4 requests x 128 tokens
                (`execute_context_4(512)_generation_0(0)`), then decode steps
                at every context in --contexts and batch in --batches,
                --steps-each steps each (`execute_context_0(0)_generation_B(B)`).
  marlin_sweep  fp16, the gate_up and down GEMMs as Marlin INT4 (group size 128)
                through a torch custom op `kts::marlin_gemm(a, b, c, s, workspace)`
                (so record_shapes records them, as vLLM's `_C::gptq_marlin_gemm`
                is recorded); decode at --marlin-batches, context 512.

Every (context, batch) is run once before the profiler starts (warm-up:
cuBLAS heuristics, cuDNN plans), in the same order.

microbench.json: every GEMM shape of both traces (and every decode attention
shape of batch_sweep) timed alone with CUDA events around the one call, the
L2 cache flushed (a 512 MiB memset) before each call, median of --reps calls:
milliseconds, the bytes the op must move (inputs and output at their dtypes;
Marlin: A, 4-bit weights, fp16 scales, C), FLOPs, and the achieved TB/s and
TFLOP/s.

truth.json: per trace, each step's name, phase, batch, context, tokens, host
wall-clock milliseconds and the GPU milliseconds between CUDA events recorded
at the step's start and end; the model's shapes; versions.

usage: python3 sweep.py --out OUTDIR [--marlin]   (--marlin: also marlin_sweep;
needs `import marlin`, IST-DASLab/marlin, see README.md)
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, record_function

DEVICE = "cuda"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batches", default="1,2,4,8,16,32,64")
    p.add_argument("--contexts", default="512,2048,4096")
    p.add_argument("--steps-each", type=int, default=3)
    p.add_argument("--marlin", action="store_true")
    p.add_argument("--marlin-only", action="store_true", help="marlin_sweep and its microbenchmark alone")
    p.add_argument("--bench-only", action="store_true", help="the microbenchmark alone (no traces)")
    p.add_argument("--marlin-batches", default="1,4,16,64")
    p.add_argument("--reps", type=int, default=20)
    return p.parse_args()


HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTER, VOCAB = 4096, 32, 8, 128, 14336, 128256
Q_SIZE, KV_SIZE = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM


def weight(out_f, in_f, dtype, gen):
    return (torch.randn(out_f, in_f, device=DEVICE, generator=gen) * in_f ** -0.5).to(dtype)


def rms_norm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


_MARLIN = None


def marlin_module():
    global _MARLIN
    if _MARLIN is None:
        try:
            import marlin
        except ImportError as exc:
            sys.exit(f"--marlin: `import marlin` failed ({exc}); build IST-DASLab/marlin (see README.md)")
        _MARLIN = marlin

        @torch.library.custom_op("kts::marlin_gemm", mutates_args=("c", "workspace"))
        def marlin_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, s: torch.Tensor,
                        workspace: torch.Tensor) -> None:
            marlin.mul(a, b, c, s, workspace)
    return _MARLIN


class MarlinWeight:
    """An INT4 weight in Marlin's layout: random nibbles, fp16 scales per 128 inputs."""

    def __init__(self, in_f, out_f, gen):
        marlin_module()
        self.k, self.n = in_f, out_f
        nib = torch.randint(0, 256, (in_f // 16, out_f * 16 // 8 * 4), dtype=torch.uint8, device=DEVICE,
                            generator=gen)
        self.b = nib.view(torch.int32)
        self.s = ((torch.rand(in_f // 128, out_f, device=DEVICE, generator=gen) * 0.5 + 0.75)
                  * in_f ** -0.5 / 4.6).to(torch.float16)
        self.workspace = torch.zeros(out_f // 128 * 16, dtype=torch.int32, device=DEVICE)

    def __call__(self, x):
        out = torch.empty(x.shape[0], self.n, dtype=x.dtype, device=x.device)
        torch.ops.kts.marlin_gemm(x, self.b, out, self.s, self.workspace)
        return out

    def bytes(self, m):
        return m * self.k * 2 + self.k * self.n // 2 + self.s.numel() * 2 + m * self.n * 2


class Linear:
    def __init__(self, in_f, out_f, dtype, gen):
        self.w = weight(out_f, in_f, dtype, gen)

    def __call__(self, x):
        return F.linear(x, self.w)


class Layer:
    def __init__(self, dtype, gen, max_batch, max_ctx, marlin):
        self.qkv = Linear(HIDDEN, Q_SIZE + 2 * KV_SIZE, dtype, gen)
        self.o = Linear(Q_SIZE, HIDDEN, dtype, gen)
        if marlin:
            self.gate_up = MarlinWeight(HIDDEN, 2 * INTER, gen)
            self.down = MarlinWeight(INTER, HIDDEN, gen)
        else:
            self.gate_up = Linear(HIDDEN, 2 * INTER, dtype, gen)
            self.down = Linear(INTER, HIDDEN, dtype, gen)
        self.n1 = torch.ones(HIDDEN, device=DEVICE, dtype=dtype)
        self.n2 = torch.ones(HIDDEN, device=DEVICE, dtype=dtype)
        shape = (max_batch, KV_HEADS, max_ctx, HEAD_DIM)
        self.k_cache = torch.zeros(shape, device=DEVICE, dtype=dtype)
        self.v_cache = torch.zeros(shape, device=DEVICE, dtype=dtype)

    def attention(self, h, batch, ctx, prefill):
        qkv = self.qkv(h)
        q, k, v = qkv.split([Q_SIZE, KV_SIZE, KV_SIZE], dim=-1)
        if prefill:
            seq = h.shape[0] // batch
            qp = q.view(batch, seq, HEADS, HEAD_DIM).transpose(1, 2)
            kp = k.view(batch, seq, KV_HEADS, HEAD_DIM).transpose(1, 2)
            vp = v.view(batch, seq, KV_HEADS, HEAD_DIM).transpose(1, 2)
            self.k_cache[:batch, :, :seq].copy_(kp)
            self.v_cache[:batch, :, :seq].copy_(vp)
            o = F.scaled_dot_product_attention(qp, kp, vp, is_causal=True, enable_gqa=True)
            return o.transpose(1, 2).reshape(batch * seq, Q_SIZE)
        # decode: the new token's K/V at position ctx-1, attention over positions 0..ctx-1
        self.k_cache[:batch, :, ctx - 1].copy_(k.view(batch, KV_HEADS, HEAD_DIM))
        self.v_cache[:batch, :, ctx - 1].copy_(v.view(batch, KV_HEADS, HEAD_DIM))
        qd = q.view(batch, KV_HEADS, HEADS // KV_HEADS, HEAD_DIM)
        o = F.scaled_dot_product_attention(qd, self.k_cache[:batch, :, :ctx], self.v_cache[:batch, :, :ctx])
        return o.reshape(batch, Q_SIZE)

    def __call__(self, x, batch, ctx, prefill):
        h = rms_norm(x, self.n1)
        x = x + self.o(self.attention(h, batch, ctx, prefill))
        h = rms_norm(x, self.n2)
        g, u = self.gate_up(h).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


class Model:
    def __init__(self, dtype, layers, max_batch, max_ctx, marlin, seed=0):
        gen = torch.Generator(device=DEVICE).manual_seed(seed)
        self.dtype = dtype
        self.embed = weight(VOCAB, HIDDEN, dtype, gen)
        self.layers = [Layer(dtype, gen, max_batch, max_ctx, marlin) for _ in range(layers)]
        self.norm = torch.ones(HIDDEN, device=DEVICE, dtype=dtype)
        self.lm_head = Linear(HIDDEN, VOCAB, dtype, gen)

    def step(self, ids, batch, ctx, prefill):
        x = F.embedding(ids, self.embed)
        for layer in self.layers:
            x = layer(x, batch, ctx, prefill)
        x = rms_norm(x, self.norm)
        if prefill:
            x = x.view(batch, -1, HIDDEN)[:, -1]
        logits = self.lm_head(x)
        probs = torch.softmax(logits.float() / 0.8, dim=-1)
        top_p, top_i = probs.topk(50, dim=-1)
        return top_i.gather(-1, top_p.argmax(dim=-1, keepdim=True)).squeeze(-1).cpu()


def step_name(ctx_reqs, ctx_tokens, gen_reqs, gen_tokens):
    return f"execute_context_{ctx_reqs}({ctx_tokens})_generation_{gen_reqs}({gen_tokens})"


def plan_steps(batches, contexts, steps_each):
    """The decode steps in run order: (batch, context) for each context, each batch, steps_each times."""
    return [(b, c) for c in contexts for b in batches for _ in range(steps_each)]


def run_trace(name, model, out, plan, prompt=(4, 128)):
    """Warm-up over the plan once, then the prefill and the plan under the profiler."""
    gen = torch.Generator().manual_seed(1)
    pb, pl = prompt
    prompts = torch.randint(0, VOCAB, (pb * pl,), generator=gen)

    def prefill():
        with record_function(step_name(pb, pb * pl, 0, 0)):
            return model.step(prompts.to(DEVICE, non_blocking=True), pb, pl, True)

    def decode(b, c):
        ids = torch.randint(0, VOCAB, (b,), generator=gen)
        with record_function(step_name(0, 0, b, b)):
            return model.step(ids.to(DEVICE, non_blocking=True), b, c, False)

    prefill()
    for b, c in dict.fromkeys(plan):
        decode(b, c)
    torch.cuda.synchronize()

    steps = []
    trace_dir = os.path.join(out, name)
    os.makedirs(trace_dir, exist_ok=True)
    worker = f"{name}_dp0_pp0_tp0_dcp0_ep0_rank0"
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                                with_stack=False,
                                on_trace_ready=torch.profiler.tensorboard_trace_handler(
                                    trace_dir, worker_name=worker, use_gzip=True)):
        work = [("prefill", pb, pl, pb * pl)] + [("decode", b, c, b) for b, c in plan]
        for phase, b, c, tokens in work:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            if phase == "prefill":
                prefill()
            else:
                decode(b, c)
            end.record()
            t1 = time.perf_counter()
            steps.append({"phase": phase, "batch": b, "context": c, "tokens": tokens,
                          "name": step_name(pb, pb * pl, 0, 0) if phase == "prefill" else step_name(0, 0, b, b),
                          "host_ms": round((t1 - t0) * 1e3, 4), "_events": (start, end)})
        torch.cuda.synchronize()
    for s in steps:
        a, e = s.pop("_events")
        s["cuda_event_ms"] = round(a.elapsed_time(e), 4)
    files = sorted(f for f in os.listdir(trace_dir) if f.endswith(".pt.trace.json.gz"))
    print(f"{name}: {len(steps)} steps, files {files}", flush=True)
    return {"steps": steps, "files": files,
            "prefill": {"requests": pb, "tokens_each": pl},
            "note": "context is the KV length each request's decode attention reads (positions 0..context-1); "
                    "at prefill it is the prompt length. cuda_event_ms spans CUDA events recorded on the "
                    "stream at the step's start and end (GPU idle while the host is late included)."}


class Timer:
    """Times one op at a time with CUDA events, the L2 flushed before each call."""

    def __init__(self, reps):
        self.reps = reps
        self.flush = torch.empty(512 << 20, dtype=torch.uint8, device=DEVICE)

    def median_ms(self, fn):
        for _ in range(3):
            fn()
        times = []
        for _ in range(self.reps):
            # a read of 512 MiB, not a write: it leaves L2 holding clean lines, so the timed call pays
            # no write-back of a flush's dirty lines (a memset cost small GEMMs about 10 us more)
            self.flush.sum(dtype=torch.int64)
            a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            e.record()
            e.synchronize()
            times.append(a.elapsed_time(e))
        return statistics.median(times)

    def kernels(self, fn):
        """The kernels of one call as the profiler (CUPTI) times them, L2 flushed before each of
        --reps calls: their names, and the median over the calls of their summed durations (us).
        CUDA events add the GPU's launch latency (a few us) to what they time; CUPTI does not.
        Each call sits between two marker kernels (an add on an int32 and on an int64 tensor)."""
        a = torch.zeros(1, dtype=torch.int32, device=DEVICE)
        b = torch.zeros(1, dtype=torch.int64, device=DEVICE)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(self.reps):
                self.flush.sum(dtype=torch.int64)
                a.add_(1)
                fn()
                b.add_(1)
            torch.cuda.synchronize()
        events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                        key=lambda e: e.time_range.start)
        per_call, names, group = [], [], None
        for e in events:
            if "CUDAFunctorOnSelf_add<int>" in e.name:
                group = []
            elif "CUDAFunctorOnSelf_add<long>" in e.name:
                if group is not None:
                    per_call.append(sum(k.time_range.elapsed_us() for k in group))
                    names = names or [k.name for k in group]
                group = None
            elif group is not None:
                group.append(e)
        if len(per_call) != self.reps:
            print(f"microbenchmark: {len(per_call)} of {self.reps} calls found between the markers "
                  f"({len(events)} device events); no kernel time for this row", flush=True)
            return names, None
        return names, statistics.median(per_call)


def bench_row(kind, shape, ms, nbytes, flops, kernels):
    names, kernel_us = kernels
    s = ms / 1e3
    row = {"kind": kind, **shape, "kernels": names, "ms": round(ms, 5), "kernel_us": None,
           "bytes": nbytes, "flops": flops,
           "tb_per_s": round(nbytes / s / 1e12, 4), "tflop_per_s": round(flops / s / 1e12, 4)}
    if kernel_us:
        ks = kernel_us / 1e6
        row.update(kernel_us=round(kernel_us, 3), kernel_tb_per_s=round(nbytes / ks / 1e12, 4),
                   kernel_tflop_per_s=round(flops / ks / 1e12, 4))
    return row


def microbench(timer, dtype, batches, marlin):
    """GEMMs of the decoder's weights at every decode batch (and the prefill's 512 rows)."""
    gen = torch.Generator(device=DEVICE).manual_seed(2)
    el = torch.finfo(dtype).bits // 8
    shapes = {"qkv": (HIDDEN, Q_SIZE + 2 * KV_SIZE), "o": (Q_SIZE, HIDDEN), "gate_up": (HIDDEN, 2 * INTER),
              "down": (INTER, HIDDEN), "lm_head": (HIDDEN, VOCAB)}
    rows = []
    for proj, (k, n) in shapes.items():
        quant = marlin and proj in ("gate_up", "down")
        w = MarlinWeight(k, n, gen) if quant else Linear(k, n, dtype, gen)
        for m in sorted(set(batches) | {512}):
            x = torch.randn(m, k, device=DEVICE, generator=gen).to(dtype)
            ms = timer.median_ms(lambda: w(x))
            names = timer.kernels(lambda: w(x))
            nbytes = w.bytes(m) if quant else (m * k + k * n + m * n) * el
            rows.append(bench_row("marlin_int4_gemm" if quant else "gemm",
                                  {"proj": proj, "m": m, "n": n, "k": k, "dtype": str(dtype).removeprefix("torch.")},
                                  ms, nbytes, 2 * m * n * k, names))
        del w
    return rows


def attention_bench(timer, dtype, batches, contexts):
    rows = []
    el = torch.finfo(dtype).bits // 8
    for c in contexts:
        for b in batches:
            q = torch.randn(b, KV_HEADS, HEADS // KV_HEADS, HEAD_DIM, device=DEVICE, dtype=dtype)
            # the cache's layout, as in the model: a [batch, 8, max context, 128] tensor sliced to c positions
            kf = torch.randn(b, KV_HEADS, max(contexts), HEAD_DIM, device=DEVICE, dtype=dtype)
            vf = torch.randn_like(kf)
            k, v = kf[:, :, :c], vf[:, :, :c]
            ms = timer.median_ms(lambda: F.scaled_dot_product_attention(q, k, v))
            names = timer.kernels(lambda: F.scaled_dot_product_attention(q, k, v))
            nbytes = (2 * q.numel() + k.numel() + v.numel()) * el
            flops = 4 * b * HEADS * c * HEAD_DIM
            rows.append(bench_row("decode_attention", {"batch": b, "context": c, "q_heads": HEADS,
                                                       "kv_heads": KV_HEADS, "head_dim": HEAD_DIM,
                                                       "dtype": str(dtype).removeprefix("torch.")},
                                  ms, nbytes, flops, names))
    return rows


def main():
    args = parse_args()
    batches = [int(x) for x in args.batches.split(",")]
    contexts = [int(x) for x in args.contexts.split(",")]
    mbatches = [int(x) for x in args.marlin_batches.split(",")]
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    truth = {"generator": "sampletraces/gen/sweep.py", "argv": sys.argv[1:],
             "versions": {"python": platform.python_version(), "torch": torch.__version__,
                          "cuda": torch.version.cuda, "gpu": props.name, "sms": props.multi_processor_count},
             "model": {"layers": args.layers, "hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS,
                       "head_dim": HEAD_DIM, "intermediate": INTER, "vocab": VOCAB},
             "traces": {}}

    timer = Timer(args.reps)
    bench_rows = []
    if not args.marlin_only:
        if not args.bench_only:
            model = Model(torch.bfloat16, args.layers, max(batches), max(contexts), marlin=False)
            plan = plan_steps(batches, contexts, args.steps_each)
            truth["traces"]["batch_sweep"] = {"dtype": "bfloat16", "gemms": "cuBLAS (F.linear)",
                                              **run_trace("batch_sweep", model, args.out, plan)}
            del model
            torch.cuda.empty_cache()
        bench_rows = (microbench(timer, torch.bfloat16, batches, False) +
                      attention_bench(timer, torch.bfloat16, batches, contexts))
    bench = {"method": "CUDA events around one call, a 512 MiB read (L2 flush, clean lines) before each, "
                       f"median of {args.reps} calls after 3 warm-up calls; bytes = inputs + output at their "
                       "dtypes (Marlin: A fp16, weights 4 bits, fp16 scales per 128 inputs, C fp16); "
                       "GEMM FLOPs 2*m*n*k; decode attention FLOPs 4*batch*q_heads*context*head_dim, bytes "
                       "Q + K + V + O; kernels: the names the profiler gives the kernels of one call; "
                       "kernel_us: the median over --reps calls (L2 flushed before each) of the summed CUPTI "
                       "durations of one call's kernels, as a trace times them (ms, by CUDA events, adds the "
                       "GPU's launch latency); kernel_tb_per_s and kernel_tflop_per_s divide by kernel_us",
             "rows": bench_rows}

    if args.marlin or args.marlin_only:
        if not args.bench_only:
            model = Model(torch.float16, args.layers, max(mbatches), 512, marlin=True)
            mplan = plan_steps(mbatches, [512], args.steps_each)
            truth["traces"]["marlin_sweep"] = {"dtype": "float16", "gemms": "cuBLAS qkv/o/lm_head, Marlin INT4 "
                                               "gate_up/down through kts::marlin_gemm",
                                               **run_trace("marlin_sweep", model, args.out, mplan)}
            del model
            torch.cuda.empty_cache()
        bench["rows"] += microbench(timer, torch.float16, mbatches, True)

    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    with open(os.path.join(args.out, "microbench.json"), "w") as f:
        json.dump(bench, f, indent=1)
    for r in bench["rows"]:
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
