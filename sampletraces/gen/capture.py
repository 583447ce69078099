#!/usr/bin/env python3
"""A real graph-capture trace beside its replay trace, and the same steps eager
(issue #29 item 3(a): the replayed kernels' shapes taken from the capture).

One GPU, one process; sweep.py's decoder (bf16, cuBLAS GEMMs, --layers of
Llama-3-8B-shaped layers). The decode forward at batch --batch, context
--context (embedding, every layer, final norm, lm_head) is

  1. captured once in a torch.cuda.CUDAGraph under a torch.profiler with
     record_shapes=True (torch.profiler._utils._init_for_cuda_graphs() first):
     the capture trace, capture/graph_capture_capture_dp0_pp0_tp0_dcp0_ep0_rank0.*;
  2. replayed for --steps decode steps under a second profiler, each step a
     record_function("execute_context_0(0)_generation_B(B)"): the replay trace,
     replay/graph_capture_replay_...;
  3. run eager for the same steps under a third profiler: the truth (same
     shapes, each kernel linked to its op), eager/graph_capture_eager_....

Each step: the token ids copied into the graph's static input, the forward
(replayed or eager), then an argmax over the logits and a device-to-host copy
(eager in both). In the repository, capture/ is moved to
sampletraces/real/graph_capture/capture_traces/ beside the replay trace
(vLLM's layout) and eager/ is sampletraces/real/graph_capture_eager/.
truth.json: the shapes, the steps, versions, and what the
capture trace held (counts of its events by category and name).

usage: python3 capture.py --out OUTDIR
"""

import argparse
import collections
import gzip
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, record_function  # noqa: E402

PREFIX = "graph_capture"


def worker(kind):
    return f"{PREFIX}_{kind}_dp0_pp0_tp0_dcp0_ep0_rank0"


def profiler(out, kind):
    d = os.path.join(out, kind)
    os.makedirs(d, exist_ok=True)
    return torch.profiler.profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, with_stack=False,
        on_trace_ready=torch.profiler.tensorboard_trace_handler(d, worker_name=worker(kind), use_gzip=True))


def trace_file(out, kind):
    d = os.path.join(out, kind)
    files = sorted(f for f in os.listdir(d) if f.endswith(".pt.trace.json.gz"))
    return os.path.join(kind, files[-1]) if files else None


def summary(path):
    """What a trace holds: events by category, the commonest names, arg keys of launches."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    ev = [e for e in doc.get("traceEvents", []) if isinstance(e, dict)]
    cats = collections.Counter(e.get("cat") for e in ev)
    names = collections.Counter((e.get("cat"), e.get("name")) for e in ev
                                if e.get("cat") in ("cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy",
                                                    "gpu_memset"))
    keys = collections.Counter()
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver", "kernel"):
            for k in (e.get("args") or {}):
                keys[(e.get("cat"), k)] += 1
    shaped = sum(1 for e in ev if e.get("cat") == "cpu_op" and "Input Dims" in (e.get("args") or {}))
    return {"categories": dict(cats), "launch_names": {f"{c}:{n}": k for (c, n), k in names.most_common(40)},
            "arg_keys": {f"{c}:{k}": n for (c, k), n in sorted(keys.items())}, "cpu_ops_with_shapes": shaped}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--context", type=int, default=512)
    p.add_argument("--steps", type=int, default=8)
    a = p.parse_args()
    b, ctx = a.batch, a.context
    os.makedirs(a.out, exist_ok=True)
    model = sweep.Model(torch.bfloat16, a.layers, b, ctx, marlin=False)
    static_ids = torch.zeros(b, dtype=torch.long, device="cuda")
    gen = torch.Generator().manual_seed(1)
    ids = [torch.randint(0, sweep.VOCAB, (b,), generator=gen).pin_memory() for _ in range(a.steps)]

    def forward(x_ids):
        x = F.embedding(x_ids, model.embed)
        for layer in model.layers:
            x = layer(x, b, ctx, False)
        x = sweep.rms_norm(x, model.norm)
        return model.lm_head(x)

    def step(i, run):
        with record_function(sweep.step_name(0, 0, b, b)):
            static_ids.copy_(ids[i % len(ids)], non_blocking=True)
            logits = run()
            return logits.argmax(dim=-1).cpu()

    # (i) warm-up: eager steps (cuBLAS heuristics, cuDNN plans), then two forwards on a side stream
    for i in range(3):
        step(i, lambda: forward(static_ids))
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            forward(static_ids)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    # (ii) capture under the first profiler
    from torch.profiler._utils import _init_for_cuda_graphs
    _init_for_cuda_graphs()
    graph = torch.cuda.CUDAGraph()
    with profiler(a.out, "capture"):
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            static_out = forward(static_ids)
        torch.cuda.synchronize()
    for i in range(3):  # replays before profiling
        step(i, lambda: (graph.replay(), static_out)[1])
    torch.cuda.synchronize()

    # (iii) replay, (iv) eager, each under its own profiler
    timings = {}
    for kind, run in (("replay", lambda: (graph.replay(), static_out)[1]), ("eager", lambda: forward(static_ids))):
        ms = []
        with profiler(a.out, kind):
            for i in range(a.steps):
                t0 = time.perf_counter()
                step(i, run)
                ms.append(round((time.perf_counter() - t0) * 1e3, 4))
            torch.cuda.synchronize()
        timings[kind] = ms

    files = {k: trace_file(a.out, k) for k in ("capture", "replay", "eager")}
    hold = {k: summary(os.path.join(a.out, f)) for k, f in files.items() if f}
    props = torch.cuda.get_device_properties(0)
    h, q, kv, hd, inter, vocab = sweep.HIDDEN, sweep.Q_SIZE, sweep.KV_SIZE, sweep.HEAD_DIM, sweep.INTER, sweep.VOCAB
    gemms = [{"proj": "qkv", "m": b, "n": q + 2 * kv, "k": h}, {"proj": "o", "m": b, "n": h, "k": q},
             {"proj": "gate_up", "m": b, "n": 2 * inter, "k": h}, {"proj": "down", "m": b, "n": h, "k": inter}]
    truth = {
        "generator": "sampletraces/gen/capture.py", "argv": sys.argv[1:],
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
                     "gpu": props.name, "sms": props.multi_processor_count},
        "model": {"layers": a.layers, "hidden": h, "heads": sweep.HEADS, "kv_heads": sweep.KV_HEADS,
                  "head_dim": hd, "intermediate": inter, "vocab": vocab, "dtype": "bfloat16"},
        "batch": b, "context": ctx, "steps": a.steps, "step_name": sweep.step_name(0, 0, b, b),
        "files": files,
        "graph": {"captured": "the decode forward: embedding, every layer, final norm, lm_head; one "
                              "cudaGraphLaunch per replayed step",
                  "outside": "the ids copy into the static input, argmax and the device-to-host copy"},
        "gemms_per_layer": gemms, "lm_head": {"m": b, "n": vocab, "k": h},
        "attention": {"batch": b, "q_heads": sweep.HEADS, "kv_heads": sweep.KV_HEADS, "context": ctx,
                      "head_dim": hd, "op": "aten::scaled_dot_product_attention, q [b, 8, 4, 128], "
                                            "k and v [b, 8, context, 128] slices of the cache"},
        "host_ms": timings, "held": hold,
    }
    with open(os.path.join(a.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    print(json.dumps({"files": files, "host_ms": timings}), flush=True)
    print(json.dumps(hold, indent=0), flush=True)


if __name__ == "__main__":
    with torch.inference_mode():
        main()
