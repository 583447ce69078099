#!/bin/bash
# Issue 24: HTA's idle-time breakdown (host wait / kernel wait / other, per
# rank and stream, whole trace) on the given traces, for the comparison
# recorded in analyze/account_hta_test.go. Needs pandas (the device machine
# has it) and HTA's package at .hta/hta (facebookresearch/HolisticTraceAnalysis,
# git-ignored, or HTA_PATH; plotly and pydot are stubbed when missing: visualize=False
# never draws). usage: scripts/peers/hta_idle.sh TRACE...
mkdir -p /tmp/stubs
python3 -c "import plotly" 2>/dev/null || { mkdir -p /tmp/stubs/plotly; for m in __init__ express graph_objects subplots io; do printf 'def __getattr__(n):\n    return lambda *a, **k: None\n' > /tmp/stubs/plotly/$m.py; done; }
python3 -c "import pydot" 2>/dev/null || printf 'def __getattr__(n):\n    return None\n' > /tmp/stubs/pydot.py
for f in "$@"; do
	d=$(mktemp -d); cp "$f" "$d/$(basename "$f")"
	PYTHONPATH=${HTA_PATH:-.hta}:/tmp/stubs timeout 120 python3 - "$d" "$f" <<'PY'
import sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
d, f = sys.argv[1], sys.argv[2]
try:
    a = TraceAnalysis(trace_dir=d)
    ranks = sorted(a.t.traces.keys())
    for delay in (30, 30000):
        df, _ = a.get_idle_time_breakdown(ranks=ranks, visualize=False, consecutive_kernel_delay=delay)
        for _, r in df.iterrows():
            print(f"HTA {f} delay={delay} stream={r['stream']} {r['idle_category']} idle_time={r['idle_time']} ratio={r['idle_time_ratio']:.4f}")
    t = a.t.get_trace(ranks[0])
    print(f"HTA {f} ts_sample={t['ts'].iloc[len(t)//2]} dur_sample={t['dur'].iloc[len(t)//2]}")
except Exception as e:
    print(f"HTA {f} failed {type(e).__name__}: {e}")
PY
	rm -rf "$d"
done
