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
# Reference timing of TraceLens (source, AMD-AGI/TraceLens 171dd747) on the
# 886 MB compact file that peers.sh builds; modules it imports that the
# device lacks (Excel/SharePoint/xprof reporting) are stubbed: the timing
# covers loading the trace, building the tree and the GPU timeline.
cd "$(dirname "$0")"; [ -x kinetoscope ] || { gzip -dc kinetoscope.gz > /tmp/kinetoscope && chmod +x /tmp/kinetoscope && ln -sf /tmp/kinetoscope kinetoscope; }
[ -f /tmp/x61.json.gz ] || ./kinetoscope bench --repeat 61 --layout compact --out /tmp/x61.json.gz --build-only h200x1.kineto.json.gz 2>&1 | tail -1
cd ..
cat > /tmp/stubfinder.py <<'PY'
import importlib.abc, importlib.machinery, sys, types
class _Any(types.ModuleType):
    __path__ = []
    def __getattr__(self, n):
        if n.startswith("__"): raise AttributeError(n)
        return _Any(self.__name__ + "." + n)
    def __call__(self, *a, **k): return _Any(self.__name__ + "()")
    def __mro_entries__(self, bases): return (object,)
STUB = ("openpyxl", "msal", "office365", "xprof", "tabulate", "plotly", "pydot", "orjson_stub")
class F(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in STUB:
            return importlib.machinery.ModuleSpec(name, self)
    def create_module(self, spec): return _Any(spec.name)
    def exec_module(self, m): pass
sys.meta_path.append(F())
PY
PYTHONPATH=.tl:/tmp timeout 500 /usr/bin/time -f "TIME TraceLens %e s %M KB" python3 - <<'PY'
import stubfinder, time
t = time.time()
from TraceLens import TreePerfAnalyzer
t0 = time.time(); print("import", round(t0 - t, 1), "s")
a = TreePerfAnalyzer.from_file("/tmp/x61.json.gz")
t1 = time.time(); print("TraceLens from_file (load + tree)", round(t1 - t0, 1), "s")
df = a.get_df_gpu_timeline()
t2 = time.time(); print("TraceLens get_df_gpu_timeline", round(t2 - t1, 1), "s"); print(df.to_string()[:1500])
PY
