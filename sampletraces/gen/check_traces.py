#!/usr/bin/env python3
"""Checks the real sample traces against their truth.json (stdlib only).

For every variant directory given (default: sampletraces/real/*/), it reads
truth.json and each rank's *.pt.trace.json.gz, cuts the trace into steps by
the execute_context_* annotations, attributes every GPU kernel to the step
whose annotation holds its launch (by correlation id), and checks:
  - step annotation names and order equal truth.step_names;
  - the file name and distributedInfo.rank name the rank truth.traces gives;
  - NCCL AllReduce / AllGather kernels per step equal truth.per_rank_per_step;
  - eager record_param_comms messages carry truth's element counts;
  - cudaGraphLaunch: one per decode step in the cudagraph variant, none elsewhere;
  - kernels, python_function events and user annotations are present.
For a style directory (truth.style set; see tp_decode.py and styles.py) it
checks instead, per rank:
  - the trace header's with_stack / record_shapes and the events they bring
    (python_function events, "Input Dims") against truth.profiler;
  - the step marks truth.marks names, in order: vLLM's execute_* annotations,
    execute_model annotations with their nested ones, ProfilerStep#N (with
    the vLLM annotation inside), the python_function execute_model events
    with the model runner's nested inside, or no mark at all;
  - that each step's host window (truth.steps[].host_window_ns, the
    generator's own clock) lines up with its mark, and cuts every style into
    its steps the same way: kernels attributed by window and by mark agree;
  - per step: cudaGraphLaunch count, Marlin kernels against truth's
    marlin.mul calls, NCCL kernels against truth's collectives, one
    device-to-host copy (the sampled tokens) and no GPU work at all in an
    empty step; a mixed step runs the attention kernels of both prefill and
    decode steps.
It prints a summary per variant and rank, and with --write stores it as
observed.json (measured from the trace, not known by construction).
Exit status 1 if any check fails.
"""

import argparse
import glob
import gzip
import json
import os
import re
import statistics
import sys

RUNTIME_CATS = ("cuda_runtime", "cuda_driver")


def load_trace(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def kernel_kind(name):
    """A rough bucket for the summary: nccl, gemm, attention, other."""
    low = name.lower()
    if "nccl" in low:
        return "nccl"
    if "marlin" in low:
        return "marlin"
    if any(s in low for s in ("gemm", "nvjet", "xmma", "cutlass", "cublas", "matmul")):
        return "gemm"
    if any(s in low for s in ("flash", "fmha", "attention", "sdpa", "cudnn")):
        return "attention"
    return "other"


def union_us(spans):
    total, end = 0.0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def cut_steps(events):
    marks = [e for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X"
             and e.get("name", "").startswith("execute_")]
    return sorted(marks, key=lambda e: e["ts"])


def step_of(ts, steps):
    for i, s in enumerate(steps):
        if s["ts"] <= ts <= s["ts"] + s["dur"]:
            return i
    return None


def per_step_stats(events, steps):
    launch = {}
    for e in events:
        if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = e
    stats = [{"kernels": 0, "allreduce": 0, "allgather": 0, "other_nccl": 0, "graph_launches": 0,
              "memcpy": 0, "kernel_us": {}, "spans": [], "comms": []} for _ in steps]
    for e in events:
        cat = e.get("cat")
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            r = launch.get(e.get("args", {}).get("correlation"))
            i = step_of(r["ts"] if r else e["ts"], steps)
            if i is None:
                continue
            st = stats[i]
            if cat == "gpu_memcpy":
                st["memcpy"] += 1
            if cat != "kernel":
                continue
            st["kernels"] += 1
            name = e["name"]
            if "AllReduce" in name:
                st["allreduce"] += 1
            elif "AllGather" in name:
                st["allgather"] += 1
            elif "nccl" in name.lower():
                st["other_nccl"] += 1
            kind = kernel_kind(name)
            st["kernel_us"][kind] = st["kernel_us"].get(kind, 0.0) + e["dur"]
            st["spans"].append((e["ts"], e["ts"] + e["dur"]))
        elif cat in RUNTIME_CATS and e.get("name", "").startswith("cudaGraphLaunch"):
            i = step_of(e["ts"], steps)
            if i is not None:
                stats[i]["graph_launches"] += 1
        elif cat == "cpu_op" and e.get("name") == "record_param_comms":
            i = step_of(e["ts"], steps)
            a = e.get("args", {})
            if i is not None and a.get("Collective name") not in (None, "barrier"):
                stats[i]["comms"].append((a.get("Collective name"), a.get("In msg nelems")))
    for st in stats:
        spans = st.pop("spans")
        st["gpu_span_us"] = (max(e for _, e in spans) - min(s for s, _ in spans)) if spans else 0.0
        st["gpu_busy_us"] = union_us(spans)
    return stats


class Checker:
    def __init__(self):
        self.failures = []

    def expect(self, ok, what):
        if not ok:
            self.failures.append(what)
            print("  FAIL:", what)


def check_rank(ck, vdir, truth, rank, fname):
    path = os.path.join(vdir, fname)
    label = f"{os.path.basename(vdir)} rank {rank}"
    doc = load_trace(path)
    events = doc["traceEvents"]
    ck.expect(f"rank{rank}" in fname, f"{label}: file name {fname} lacks rank{rank}")
    di = doc.get("distributedInfo", {})
    ck.expect(di.get("rank") == int(rank), f"{label}: distributedInfo.rank {di.get('rank')}")
    ck.expect(di.get("world_size") == truth["world_size"], f"{label}: distributedInfo.world_size")
    steps = cut_steps(events)
    names = [s["name"] for s in steps]
    ck.expect(names == truth["step_names"], f"{label}: step names differ from truth ({len(names)} found)")
    cats = {}
    for e in events:
        cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
    for cat in ("kernel", "python_function", "user_annotation", "cpu_op"):
        ck.expect(cats.get(cat, 0) > 0, f"{label}: no {cat} events")
    stats = per_step_stats(events, steps)
    want = truth["per_rank_per_step"]
    graph = truth["cuda_graph"]["used"]
    for i, (st, tstep) in enumerate(zip(stats, truth["steps"])):
        ck.expect(st["allreduce"] == want["allreduce"], f"{label} step {i}: {st['allreduce']} AllReduce kernels")
        ck.expect(st["allgather"] == want["allgather"], f"{label} step {i}: {st['allgather']} AllGather kernels")
        ck.expect(st["other_nccl"] == 0, f"{label} step {i}: {st['other_nccl']} other NCCL kernels")
        launches = 1 if graph and tstep["phase"] == "decode" else 0
        ck.expect(st["graph_launches"] == launches, f"{label} step {i}: {st['graph_launches']} cudaGraphLaunch")
        check_comms(ck, f"{label} step {i}", st["comms"], tstep)
    return summarize(doc, events, cats, stats, truth)


def check_comms(ck, label, comms, tstep):
    """Eager collectives leave record_param_comms with their element counts."""
    for c in tstep["collectives_per_rank"]:
        key = "allreduce" if c["kind"] == "allreduce" else "all_gather"
        got = [n for name, n in comms if name and name.replace("_", "").startswith(key.replace("_", ""))]
        want = 0 if c["in_cuda_graph"] else c["count"]
        ck.expect(len(got) == want, f"{label}: {len(got)} {c['kind']} record_param_comms, want {want}")
        nelems = c.get("nelems", c.get("in_nelems"))
        ck.expect(all(n == nelems for n in got), f"{label}: {c['kind']} nelems {set(got)} != {nelems}")


def collective_kernels(events):
    """NCCL kernels by name and launch shape, with their durations.

    NCCL names a kernel after the collective, type and a representative
    algorithm/protocol (RING_LL here), not after the protocol that runs: an
    NCCL_PROTO change shows in the block size (LL 512 threads, Simple 544)
    and the grid, not in the name.
    """
    groups = {}
    for e in events:
        if e.get("cat") != "kernel" or "nccl" not in e.get("name", "").lower():
            continue
        a = e.get("args", {})
        key = (e["name"].split("(")[0], str(a.get("grid")), str(a.get("block")))
        groups.setdefault(key, []).append(e["dur"])
    return [{"name": n, "grid": g, "block": b, "count": len(d), "min_us": round(min(d), 1),
             "median_us": round(statistics.median(d), 1)}
            for (n, g, b), d in sorted(groups.items())]


def summarize(doc, events, cats, stats, truth):
    dec = [s for s, t in zip(stats, truth["steps"]) if t["phase"] == "decode"]
    pre = stats[0]
    med = statistics.median

    def share(st_list, kind):
        tot = sum(sum(s["kernel_us"].values()) for s in st_list)
        return round(sum(s["kernel_us"].get(kind, 0.0) for s in st_list) / tot, 4) if tot else 0.0

    return {
        "events": len(events),
        "events_by_cat": cats,
        "distributedInfo": {k: doc.get("distributedInfo", {}).get(k) for k in ("backend", "rank", "world_size", "nccl_version")},
        "prefill": {"kernels": pre["kernels"], "allreduce": pre["allreduce"], "allgather": pre["allgather"],
                    "gpu_span_us": round(pre["gpu_span_us"], 1), "gpu_busy_us": round(pre["gpu_busy_us"], 1),
                    "kernel_us_by_kind": {k: round(v, 1) for k, v in pre["kernel_us"].items()}},
        "decode": {
            "steps": len(dec),
            "kernels_per_step": sorted({s["kernels"] for s in dec}),
            "allreduce_per_step": sorted({s["allreduce"] for s in dec}),
            "allgather_per_step": sorted({s["allgather"] for s in dec}),
            "graph_launches_per_step": sorted({s["graph_launches"] for s in dec}),
            "median_gpu_span_us": round(med([s["gpu_span_us"] for s in dec]), 1),
            "median_gpu_busy_us": round(med([s["gpu_busy_us"] for s in dec]), 1),
            "kernel_time_share": {k: share(dec, k) for k in ("gemm", "attention", "nccl", "other")},
        },
        "collective_kernels": collective_kernels(events),
    }


def check_variant(ck, vdir):
    with open(os.path.join(vdir, "truth.json")) as f:
        truth = json.load(f)
    ck.expect(truth.get("synthetic") is False, f"{vdir}: truth.synthetic is not false")
    if truth.get("style"):
        return check_style(ck, vdir, truth)
    out = {"source": "measured from the traces by sampletraces/gen/check_traces.py; not by construction",
           "variant": truth["variant"], "ranks": {}}
    for rank, fname in sorted(truth["traces"].items()):
        ck.expect(fname is not None, f"{vdir}: no trace for rank {rank}")
        if fname:
            out["ranks"][rank] = check_rank(ck, vdir, truth, rank, fname)
    return out


# ---- styles -------------------------------------------------------------

def interval(e):
    return (e["ts"], e["ts"] + e.get("dur", 0))


def inside(a, b):
    """Interval a lies within interval b."""
    return b[0] <= a[0] and a[1] <= b[1]


def find_marks(events, truth):
    """The step marks truth.marks describes, as (name, interval), in time order, and the mark kind."""
    kind = truth["marks"]["kind"]
    ann = sorted((e for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X"),
                 key=lambda e: e["ts"])
    if kind == "python_function":
        outer = truth["marks"]["outer"]
        return [(e["name"], interval(e)) for e in sorted(
            (e for e in events if e.get("cat") == "python_function" and e.get("name") == outer),
            key=lambda e: e["ts"])]
    if kind == "profiler_step":
        return [(e["name"], interval(e)) for e in ann if e["name"].startswith("ProfilerStep#")]
    if kind == "user_annotation":
        step = truth["marks"]["step"]
        if step == "execute_model":
            return [(e["name"], interval(e)) for e in ann if e["name"] == "execute_model"]
        return [(e["name"], interval(e)) for e in ann if e["name"].startswith("execute_")]
    return []


def step_windows(doc, truth, rank):
    """Each step's host window in trace microseconds."""
    base = doc["baseTimeNanoseconds"]
    return [((s["host_window_ns"][rank][0] - base) / 1000.0, (s["host_window_ns"][rank][1] - base) / 1000.0)
            for s in truth["steps"]]


def attribute(events, cuts):
    """Per cut (interval), the GPU work whose launch (or own start, if unlaunched) lies in it."""
    launch = {}
    for e in events:
        if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = e
    starts = [c[0] for c in cuts]
    per = [{"kernels": [], "memcpy": [], "memset": 0, "graph_launches": 0, "dtoh": 0} for _ in cuts]
    outside = 0

    def which(ts):
        import bisect
        i = bisect.bisect_right(starts, ts) - 1
        return i if i >= 0 and ts <= cuts[i][1] else None

    for e in events:
        cat = e.get("cat")
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            r = launch.get(e.get("args", {}).get("correlation"))
            i = which(r["ts"] if r else e["ts"])
            if i is None:
                outside += cat == "kernel"
                continue
            if cat == "kernel":
                per[i]["kernels"].append(e)
            elif cat == "gpu_memcpy":
                per[i]["memcpy"].append(e)
                if "DtoH" in e["name"] or "Device -> Pinned" in e["name"] or "Device -> Pageable" in e["name"]:
                    per[i]["dtoh"] += 1
            else:
                per[i]["memset"] += 1
        elif cat in RUNTIME_CATS and e.get("name", "").startswith("cudaGraphLaunch"):
            i = which(e["ts"])
            if i is not None:
                per[i]["graph_launches"] += 1
    return per, outside


def check_marks(ck, label, events, truth, marks, windows):
    """Mark names and order; nesting; host windows against marks. Returns the largest offset (us)."""
    steps = truth["steps"]
    kind = truth["marks"]["kind"]
    ann = [e for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
    step_like = re.compile(r"^(execute_|ProfilerStep#|gpu_model_runner: )")
    if kind == "none":
        ck.expect(not any(step_like.match(e["name"]) for e in ann), f"{label}: a step annotation in a no-marks trace")
        ck.expect(not any(e.get("cat") == "python_function" for e in events), f"{label}: python_function events")
        ck.expect(not any(e.get("name") == "execute_model" for e in events), f"{label}: an execute_model event")
        return None
    names = [n for n, _ in marks]
    if kind == "profiler_step":
        want = [s["profiler_step"] for s in steps]
    else:
        want = [s["name"] for s in steps]
    ck.expect(names == want, f"{label}: marks {names[:3]}... ({len(names)}) differ from truth ({len(want)})")
    if kind == "python_function":
        inner = [interval(e) for e in events
                 if e.get("cat") == "python_function" and e.get("name") == truth["marks"]["inner"]]
        for i, (_, iv) in enumerate(marks):
            n = sum(1 for x in inner if inside(x, iv))
            ck.expect(n == 1, f"{label} step {i}: {n} {truth['marks']['inner']} inside execute_model")
        ck.expect(not any(step_like.match(e["name"]) or e["name"] == "execute_model" for e in ann),
                  f"{label}: a step user annotation in a python_function-only trace")
    if "profiler_step" in truth["marks"]:
        ps = [(e["name"], interval(e)) for e in ann if e["name"].startswith("ProfilerStep#")]
        ck.expect([n for n, _ in ps] == [s["profiler_step"] for s in steps],
                  f"{label}: ProfilerStep names {[n for n, _ in ps][:3]}... differ from truth")
        if kind == "user_annotation":
            for i, (_, iv) in enumerate(ps[:len(marks)]):
                ck.expect(inside(marks[i][1], iv), f"{label} step {i}: {marks[i][0]} not inside {ps[i][0]}")
    nested_ann = [(e["name"], interval(e)) for e in ann]
    for i, (s, (_, iv)) in enumerate(zip(steps, marks)):
        got = [n for n, x in sorted(nested_ann, key=lambda a: a[1][0]) if inside(x, iv) and x != iv
               and n in set(s.get("nested_annotations", []))]
        ck.expect(got == s.get("nested_annotations", []), f"{label} step {i}: nested {got}")
    worst = 0.0
    for i, (w, (_, iv)) in enumerate(zip(windows, marks)):
        mid = (w[0] + w[1]) / 2
        ck.expect(iv[0] <= mid <= iv[1], f"{label} step {i}: host window {w} not over its mark {iv}")
        worst = max(worst, abs(w[0] - iv[0]), abs(w[1] - iv[1]))
    return round(worst, 1)


def check_style_rank(ck, vdir, truth, rank, fname):
    path = os.path.join(vdir, fname)
    label = f"{os.path.basename(vdir)} rank {rank}"
    doc = load_trace(path)
    events = doc["traceEvents"]
    prof = truth["profiler"]
    if truth["profiler"]["on_trace_ready"].startswith("tensorboard_trace_handler(dir, worker_name"):
        ck.expect(f"rank{rank}" in fname, f"{label}: file name {fname} lacks rank{rank}")
    di = doc.get("distributedInfo", {})
    ck.expect(di.get("rank") == int(rank), f"{label}: distributedInfo.rank {di.get('rank')}")
    ck.expect(di.get("world_size") == truth["world_size"], f"{label}: distributedInfo.world_size")
    ck.expect(bool(doc.get("with_stack")) == prof["with_stack"], f"{label}: header with_stack {doc.get('with_stack')}")
    ck.expect(bool(doc.get("record_shapes")) == prof["record_shapes"],
              f"{label}: header record_shapes {doc.get('record_shapes')}")
    cats = {}
    for e in events:
        cats[e.get("cat")] = cats.get(e.get("cat"), 0) + 1
    ck.expect((cats.get("python_function", 0) > 0) == prof["with_stack"], f"{label}: python_function events")
    shapes = any("Input Dims" in e.get("args", {}) for e in events if e.get("cat") == "cpu_op")
    ck.expect(shapes == prof["record_shapes"], f"{label}: Input Dims present {shapes}")
    windows = step_windows(doc, truth, rank)
    marks = find_marks(events, truth)
    worst = check_marks(ck, label, events, truth, marks, windows)
    by_window, outside = attribute(events, windows)
    by_mark = None
    if marks and len(marks) == len(windows):
        by_mark, _ = attribute(events, [iv for _, iv in marks])
        for i, (a, b) in enumerate(zip(by_window, by_mark)):
            ck.expect(len(a["kernels"]) == len(b["kernels"]),
                      f"{label} step {i}: {len(a['kernels'])} kernels by host window, {len(b['kernels'])} by mark")
    ck.expect(outside == 0, f"{label}: {outside} kernels outside every step window")
    attn = {}  # phase -> attention kernels per step (the first step of that phase)
    for st, ts in zip(by_window, truth["steps"]):
        attn.setdefault(ts["phase"], sum(1 for k in st["kernels"] if kernel_kind(k["name"]) == "attention"))
    for i, (st, ts) in enumerate(zip(by_window, truth["steps"])):
        ks = st["kernels"]
        marlin = sum(1 for k in ks if "marlin" in k["name"].lower())
        nccl = sum(1 for k in ks if "nccl" in k["name"].lower())
        want_nccl = sum(c["count"] for c in ts["collectives_per_rank"])
        ck.expect(nccl == want_nccl, f"{label} step {i}: {nccl} NCCL kernels, want {want_nccl}")
        ck.expect(st["graph_launches"] == ts["cuda_graph_launches"],
                  f"{label} step {i}: {st['graph_launches']} cudaGraphLaunch, want {ts['cuda_graph_launches']}")
        if ts["phase"] == "empty":
            ck.expect(not ks and not st["memcpy"] and not st["memset"], f"{label} step {i}: GPU work in an empty step")
            continue
        ck.expect(st["dtoh"] == ts["device_to_host_copies"], f"{label} step {i}: {st['dtoh']} device-to-host copies")
        if ts["phase"] == "decode" or ts["scheduled_tokens"] <= 64:
            ck.expect(marlin == ts["marlin_calls"], f"{label} step {i}: {marlin} Marlin kernels, {ts['marlin_calls']} calls")
        else:
            ck.expect(marlin >= ts["marlin_calls"], f"{label} step {i}: {marlin} Marlin kernels, {ts['marlin_calls']} calls")
        if ts["phase"] == "mixed":  # runs both attentions: a prefill step's and a decode step's
            n = sum(1 for k in ks if kernel_kind(k["name"]) == "attention")
            want = attn.get("prefill", 0) + attn.get("decode", 0)
            ck.expect(n == want and attn.get("prefill", 0) > 0,
                      f"{label} step {i}: {n} attention kernels in a mixed step, want {want}")
    return summarize_style(doc, events, cats, by_window, truth, marks, worst, path)


def step_figures(st):
    ks = st["kernels"]
    spans = [(k["ts"], k["ts"] + k["dur"]) for k in ks]
    by_kind = {}
    for k in ks:
        kind = kernel_kind(k["name"])
        by_kind[kind] = by_kind.get(kind, 0.0) + k["dur"]
    return {
        "kernels": len(ks),
        "marlin_kernels": sum(1 for k in ks if "marlin" in k["name"].lower()),
        "graph_launches": st["graph_launches"],
        "memcpy": len(st["memcpy"]),
        "gpu_span_us": round(max(e for _, e in spans) - min(s for s, _ in spans), 1) if spans else 0.0,
        "gpu_busy_us": round(union_us(spans), 1),
        "kernel_us_by_kind": {k: round(v, 1) for k, v in sorted(by_kind.items())},
    }


def summarize_style(doc, events, cats, per, truth, marks, worst, path):
    figs = [step_figures(st) for st in per]
    phases = {}
    for f, ts in zip(figs, truth["steps"]):
        phases.setdefault(ts["phase"], []).append(f)
    out_phases = {}
    for ph, fs in phases.items():
        tot = sum(sum(f["kernel_us_by_kind"].values()) for f in fs)
        kinds = sorted({k for f in fs for k in f["kernel_us_by_kind"]})
        out_phases[ph] = {
            "steps": len(fs),
            "kernels_per_step": sorted({f["kernels"] for f in fs}),
            "marlin_kernels_per_step": sorted({f["marlin_kernels"] for f in fs}),
            "graph_launches_per_step": sorted({f["graph_launches"] for f in fs}),
            "median_gpu_span_us": round(statistics.median(f["gpu_span_us"] for f in fs), 1),
            "median_gpu_busy_us": round(statistics.median(f["gpu_busy_us"] for f in fs), 1),
            "kernel_time_share": {k: round(sum(f["kernel_us_by_kind"].get(k, 0.0) for f in fs) / tot, 4)
                                  for k in kinds} if tot else {},
        }
    marlin_names = {}
    for e in events:
        if e.get("cat") == "kernel" and "marlin" in e["name"].lower():
            marlin_names[e["name"]] = marlin_names.get(e["name"], 0) + 1
    ann = {}
    for e in events:
        if e.get("cat") == "user_annotation":
            ann[e["name"]] = ann.get(e["name"], 0) + 1
    py_marks = {}
    for e in events:
        if e.get("cat") == "python_function" and e["name"].endswith(": execute_model"):
            py_marks[e["name"]] = py_marks.get(e["name"], 0) + 1
    return {
        "file_bytes": os.path.getsize(path),
        "events": len(events),
        "events_by_cat": cats,
        "distributedInfo": {k: doc.get("distributedInfo", {}).get(k) for k in ("backend", "rank", "world_size", "nccl_version")},
        "header": {k: doc.get(k) for k in ("with_stack", "record_shapes")},
        "marks_found": len(marks),
        "host_window_vs_mark_max_offset_us": worst,
        "user_annotations": ann,
        "python_function_execute_model": py_marks,
        "marlin_kernels": marlin_names,
        "steps": [dict(f, index=i, phase=ts["phase"]) for i, (f, ts) in enumerate(zip(figs, truth["steps"]))],
        "phases": out_phases,
    }


def check_style(ck, vdir, truth):
    out = {"source": "measured from the traces by sampletraces/gen/check_traces.py; not by construction",
           "style": truth["style"], "ranks": {}}
    ck.expect(len(truth["steps"]) == truth["steps_total"], f"{vdir}: steps_total")
    for rank, fname in sorted(truth["traces"].items()):
        ck.expect(fname is not None, f"{vdir}: no trace for rank {rank}")
        if fname:
            out["ranks"][rank] = check_style_rank(ck, vdir, truth, rank, fname)
    return out


def print_style(obs):
    for rank, s in obs["ranks"].items():
        print(f"  rank {rank}: {s['events']} events, {s['file_bytes']} bytes; marks {s['marks_found']}, "
              f"host window vs mark <= {s['host_window_vs_mark_max_offset_us']} us")
        for ph, p in s["phases"].items():
            print(f"    {ph} x{p['steps']}: kernels/step {p['kernels_per_step']} marlin/step "
                  f"{p['marlin_kernels_per_step']} graph launches/step {p['graph_launches_per_step']}; "
                  f"median span {p['median_gpu_span_us']} us busy {p['median_gpu_busy_us']} us; "
                  f"share {p['kernel_time_share']}")
        for n, c in s["marlin_kernels"].items():
            print(f"    {n}: x{c}")
        for n, c in s["python_function_execute_model"].items():
            print(f"    python_function {n}: x{c}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default = sorted(glob.glob(os.path.join(here, "..", "real", "*", "truth.json")))
    p = argparse.ArgumentParser(description="check real sample traces against truth.json")
    p.add_argument("dirs", nargs="*", default=[os.path.dirname(t) for t in default])
    p.add_argument("--write", action="store_true", help="write observed.json next to truth.json")
    args = p.parse_args()
    ck = Checker()
    for vdir in args.dirs:
        print(f"== {vdir}")
        obs = check_variant(ck, vdir)
        if "style" in obs:
            print_style(obs)
        for rank, s in ({} if "style" in obs else obs["ranks"]).items():
            d = s["decode"]
            print(f"  rank {rank}: {s['events']} events; prefill {s['prefill']['kernels']} kernels "
                  f"span {s['prefill']['gpu_span_us']} us; decode x{d['steps']}: kernels/step {d['kernels_per_step']} "
                  f"allreduce/step {d['allreduce_per_step']} allgather/step {d['allgather_per_step']} "
                  f"graph launches/step {d['graph_launches_per_step']}; median span {d['median_gpu_span_us']} us "
                  f"busy {d['median_gpu_busy_us']} us; kernel-time share {d['kernel_time_share']}")
            for c in s["collective_kernels"]:
                print(f"    {c['name']} grid {c['grid']} block {c['block']}: x{c['count']}, "
                      f"min {c['min_us']} us, median {c['median_us']} us")
        if args.write:
            with open(os.path.join(vdir, "observed.json"), "w") as f:
                json.dump(obs, f, indent=1)
                f.write("\n")
    print("OK" if not ck.failures else f"{len(ck.failures)} check(s) failed")
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
