"""``nsighttk build SAMPLE|FILE.cu``: nvcc for the requested archs (see :mod:`nsighttk.build`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nsighttk.build import BuildConfig, BuildResult, build, list_samples
from nsighttk.settings import Settings, current


@dataclass
class Options:
    target: str
    archs: list[str] = field(default_factory=list)
    lineinfo: bool = True
    extra_flags: list[str] = field(default_factory=list)
    out_dir: Path | None = None
    force: bool = False


def samples() -> list[str]:
    return list_samples()


def run(opts: Options, settings: Settings | None = None) -> BuildResult:
    settings = settings or current()
    return build(opts.target, BuildConfig(list(opts.archs), opts.lineinfo, extra_flags=list(opts.extra_flags),
                                          out_root=opts.out_dir or settings.build_root, force=opts.force))
