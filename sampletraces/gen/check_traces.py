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
It prints a summary per variant and rank, and with --write stores it as
observed.json (measured from the trace, not known by construction).
Exit status 1 if any check fails.
"""

import argparse
import glob
import gzip
import json
import os
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
    out = {"source": "measured from the traces by sampletraces/gen/check_traces.py; not by construction",
           "variant": truth["variant"], "ranks": {}}
    for rank, fname in sorted(truth["traces"].items()):
        ck.expect(fname is not None, f"{vdir}: no trace for rank {rank}")
        if fname:
            out["ranks"][rank] = check_rank(ck, vdir, truth, rank, fname)
    return out


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
        for rank, s in obs["ranks"].items():
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
