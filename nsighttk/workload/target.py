"""What a name means: a TARGET to profile (an executable, a bundled sample, a ``.cu`` file, a
Python script, a workload).

Resolution order for ``nsighttk nsys TARGET``:

1. ``workload:NAME`` (a built-in workload) and ``.py`` files defining ``WORKLOAD``: their variants
   run through the driver :mod:`nsighttk.collect.drivers.workload_main`;
2. an existing file: ``*.py`` runs with this Python; ``*.cu`` is built first; otherwise it must
   be executable;
3. the name of a bundled sample (``add``, ``gelu`` ...): built for the local arch (or ``--arch``);
4. a program on ``PATH``.

Anything else is a :class:`WorkloadError` listing what would have worked.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nsighttk.build import BuildConfig, BuildResult, build, find_source, list_samples
from nsighttk.errors import WorkloadError
from nsighttk.safeio import safe_filename
from nsighttk.workload.protocol import load_workload

WORKLOAD_DRIVER = "nsighttk.collect.drivers.workload_main"


@dataclass
class Target:
    """A resolved target: the command to run and what it is."""

    name: str  # short name for run directories: "add", "streams_demo"
    kind: str  # "executable", "sample", "cu", "python"
    command: list[str]
    build: BuildResult | None = None
    notes: list[str] = field(default_factory=list)


def defines_workload(path: Path) -> bool:
    """Whether a ``.py`` file defines ``WORKLOAD`` (read as text, never imported here)."""
    try:
        if not path.is_file() or path.stat().st_size > 8 * 2**20:
            return False
        return re.search(r"^WORKLOAD\s*=", path.read_text(errors="replace"), re.M) is not None
    except OSError:
        return False


def _workload_target(spec: str, name: str, args: list[str], build_config: BuildConfig | None) -> Target:
    if build_config and build_config.archs and "--arch" not in args:  # for the CUDA-extension variants
        args = [*args, "--arch", build_config.archs[0]]
    return Target(safe_filename(name), "workload", [sys.executable, "-m", WORKLOAD_DRIVER, spec, *args])


def resolve(target: str, args: list[str] | None = None, build_config: BuildConfig | None = None) -> Target:
    """Also: ``workload:NAME`` (a built-in workload) and ``.py`` files defining ``WORKLOAD`` run
    their variants through :mod:`nsighttk.workload_main` (arguments: ``--size``, ``--variants`` ...)."""
    args = list(args or [])
    if target.startswith("workload:"):
        name = target.split(":", 1)[1]
        load_workload(name)  # unknown names fail here, listing the known ones
        return _workload_target(name, name, args, build_config)
    p = Path(target)
    if p.is_file() and p.suffix == ".py" and defines_workload(p):
        return _workload_target(str(p), p.stem, args, build_config)
    if p.is_dir():
        raise WorkloadError(f"{target}: is a directory",
                            "give an executable, a .py script, a .cu file or a sample name")
    if p.is_file():
        if p.suffix == ".py":
            return Target(safe_filename(p.stem), "python", [sys.executable, str(p), *args])
        if p.suffix == ".cu":
            res = build(p, build_config)
            return Target(safe_filename(p.stem), "cu", [str(res.binary.resolve()), *args], build=res)
        if not os.access(p, os.X_OK):
            raise WorkloadError(f"{target}: is not executable", f"chmod +x {target}, or run a .py/.cu file")
        return Target(safe_filename(p.name), "executable", [str(p.resolve()), *args])
    if "/" not in target and find_source(target) is not None:
        res = build(target, build_config)
        return Target(safe_filename(target), "sample", [str(res.binary.resolve()), *args], build=res)
    found = shutil.which(target) if "/" not in target else None
    if found:
        return Target(safe_filename(Path(found).name), "executable", [found, *args])
    if "/" in target or p.suffix:
        raise WorkloadError(f"{target}: no such file", "check the path")
    samples = ", ".join(list_samples()) or "none found"
    raise WorkloadError(f"unknown target {target!r}: not a file, a sample or a program on PATH",
                        f"samples: {samples}")
