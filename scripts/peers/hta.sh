#!/bin/bash
# Issue 12's reference timing of a Python peer against Kinetoscope, on the
# 886 MB compact trace built from a real H200 rank repeated 61 times. Run it
# from the repository root on a machine with pandas (the device machine has
# it), laid out as (all git-ignored; none of the peers' code is committed):
#   .bin/kinetoscope.gz         gzip of a linux build of cmd/kinetoscope
#   .bin/h200x1.kineto.json.gz  the real rank trace to repeat
#   .hta/hta                    HTA's package (facebookresearch/HolisticTraceAnalysis)
#   .tl/TraceLens               TraceLens's package (AMD-AGI/TraceLens)
# and call it as scripts/peers/NAME.sh after copying it to .bin/ (it cds there).
# Reference timing of the Python peer (HTA) against Kinetoscope and gunzip on
# the same 894 MB-class compact file, built from a real H200 rank x61.
cd "$(dirname "$0")"; [ -x kinetoscope ] || { gzip -dc kinetoscope.gz > /tmp/kinetoscope && chmod +x /tmp/kinetoscope && ln -sf /tmp/kinetoscope kinetoscope; }
python3 - <<'PY'
import importlib
for m in ["pandas","numpy","networkx","plotly","pydot","orjson","ijson","tqdm","openpyxl","torch"]:
    try:
        mod=importlib.import_module(m); print("PKG", m, getattr(mod,"__version__","?"))
    except Exception as e: print("PKG", m, "MISSING", type(e).__name__)
PY
nproc; free -g | head -2
python3 -c "import pandas" 2>/dev/null || { echo "NO PANDAS: stop"; exit 0; }
./kinetoscope bench --repeat 61 --layout compact --out /tmp/x61.json.gz --build-only h200x1.kineto.json.gz 2>&1 | tail -2
ls -la /tmp/x61.json.gz; echo "JSON bytes: $(gzip -dc /tmp/x61.json.gz | wc -c)"
mkdir -p /tmp/hta_dir && cp /tmp/x61.json.gz /tmp/hta_dir/rank-0.pt.trace.json.gz
mkdir -p /tmp/stubs
python3 -c "import plotly" 2>/dev/null || { mkdir -p /tmp/stubs/plotly; for m in __init__ express graph_objects subplots io; do printf 'def __getattr__(n):\n    return lambda *a, **k: None\n' > /tmp/stubs/plotly/$m.py; done; echo "plotly stubbed (visualize=False never draws)"; }
python3 -c "import pydot" 2>/dev/null || { printf 'def __getattr__(n):\n    return None\n' > /tmp/stubs/pydot.py; }
for i in 1 2 3; do
  /usr/bin/time -f "TIME gunzip %e s %M KB" sh -c 'gzip -dc /tmp/x61.json.gz > /dev/null'
  /usr/bin/time -f "TIME kinetoscope-analyze %e s %M KB" ./kinetoscope analyze --format json /tmp/x61.json.gz > /tmp/k.json
done
ls -la /tmp/k.json
cd ..
PYTHONPATH=.hta:/tmp/stubs timeout 420 /usr/bin/time -f "TIME HTA %e s %M KB" python3 - <<'PY'
import time, logging
t=time.time()
from hta.trace_analysis import TraceAnalysis
a=TraceAnalysis(trace_dir='/tmp/hta_dir')
t1=time.time(); print('HTA parse (TraceAnalysis)', round(t1-t,1), 's')
try:
    k=a.get_gpu_kernel_breakdown(visualize=False)
    print('HTA get_gpu_kernel_breakdown', round(time.time()-t1,1), 's')
    print(k[0].head(8).to_string())
except Exception as e:
    print('HTA breakdown failed', type(e).__name__, e)
PY
