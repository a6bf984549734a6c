"""What a TARGET means: an executable, a bundled sample, a ``.cu`` file, or a Python script.

Resolution order for ``nsighttk nsys TARGET``:

1. an existing file: ``*.py`` runs with this Python; ``*.cu`` is built first; otherwise it must
   be executable;
2. the name of a bundled sample (``add``, ``gelu`` ...): built for the local arch (or ``--arch``);
3. a program on ``PATH``.

Anything else is a :class:`WorkloadError` listing what would have worked.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nsighttk.build import BuildConfig, BuildResult, build, find_source, list_samples
from nsighttk.errors import WorkloadError


@dataclass
class Target:
    """A resolved target: the command to run and what it is."""

    name: str  # short name for run directories: "add", "streams_demo"
    kind: str  # "executable", "sample", "cu", "python"
    command: list[str]
    build: BuildResult | None = None
    notes: list[str] = field(default_factory=list)


def _safe_name(s: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in s)
    return keep.strip("._") or "target"


def resolve(target: str, args: list[str] | None = None, build_config: BuildConfig | None = None) -> Target:
    args = list(args or [])
    p = Path(target)
    if p.is_dir():
        raise WorkloadError(f"{target}: is a directory",
                            "give an executable, a .py script, a .cu file or a sample name")
    if p.is_file():
        if p.suffix == ".py":
            return Target(_safe_name(p.stem), "python", [sys.executable, str(p), *args])
        if p.suffix == ".cu":
            res = build(p, build_config)
            return Target(_safe_name(p.stem), "cu", [str(res.binary.resolve()), *args], build=res)
        if not os.access(p, os.X_OK):
            raise WorkloadError(f"{target}: is not executable", f"chmod +x {target}, or run a .py/.cu file")
        return Target(_safe_name(p.name), "executable", [str(p.resolve()), *args])
    if "/" not in target and find_source(target) is not None:
        res = build(target, build_config)
        return Target(_safe_name(target), "sample", [str(res.binary.resolve()), *args], build=res)
    found = shutil.which(target) if "/" not in target else None
    if found:
        return Target(_safe_name(Path(found).name), "executable", [found, *args])
    if "/" in target or p.suffix:
        raise WorkloadError(f"{target}: no such file", "check the path")
    samples = ", ".join(list_samples()) or "none found"
    raise WorkloadError(f"unknown target {target!r}: not a file, a sample or a program on PATH",
                        f"samples: {samples}")
