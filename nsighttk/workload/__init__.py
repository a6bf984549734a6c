"""What is profiled: targets (executables, samples, ``.cu`` files, scripts) and benchmark
workloads (the protocol ``kernels/*.py`` follow, and their CUDA-extension variants).

``from nsighttk.workload import Workload, Variant, compiled`` is the protocol a workload file uses.
"""

from nsighttk.workload import replay
from nsighttk.workload.protocol import (
    TOLERANCE,
    Variant,
    Workload,
    compiled,
    kernels_dir,
    list_workloads,
    load_workload,
    missing_requirements,
    select_variants,
)
from nsighttk.workload.target import Target, defines_workload, resolve

__all__ = ["TOLERANCE", "Target", "Variant", "Workload", "compiled", "defines_workload", "kernels_dir",
           "list_workloads", "load_workload", "missing_requirements", "replay", "resolve", "select_variants"]
