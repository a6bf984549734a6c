"""nsighttk from Python: what the commands do, without the command line.  This module only
re-exports; the code lives in the pipeline's own modules (see docs/DESIGN.md)::

    from nsighttk import api
    profile = api.load("capture.sqlite")              # Profile: pandas tables
    kern = api.report("cuda_gpu_kern_sum", profile)   # one nsys report as a DataFrame, nsys' columns
    ov = api.analyze("capture.sqlite"); ov.findings   # headline numbers, tables, what to try next

Every command is also a module with an ``Options`` dataclass and ``run(options) -> Result``:
``api.nsys.run(api.nsys.Options("add"))``, ``api.bench.run(api.bench.Options("gelu"))`` ...
"""

from nsighttk.commands import analyze as analyze_command
from nsighttk.commands import bench, inspect, model, ncu, nsys, ranks, repro, rules, runs, submit, torch_profile
from nsighttk.commands import compare as compare_command
from nsighttk.commands import report as report_command
from nsighttk.commands import stats as stats_command
from nsighttk.commands.analyze import analyze, analyze_profile, join
from nsighttk.commands.compare import compare
from nsighttk.commands.stats import report, stats
from nsighttk.load import load
from nsighttk.profile import Profile
from nsighttk.settings import Settings

__all__ = ["Profile", "Settings", "analyze", "analyze_command", "analyze_profile", "bench", "compare",
           "compare_command", "inspect", "join", "load", "model", "ncu", "nsys", "ranks", "report", "report_command",
           "repro", "rules", "runs", "stats", "stats_command", "submit", "torch_profile"]
