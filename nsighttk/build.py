"""Build standalone ``.cu`` programs with nvcc: command lines as lists, a content-hash cache.

* one ``--arch``: SASS for it plus its PTX (like ``-arch=sm_XX``);
* several: one fat binary with SASS for each arch and PTX for the highest (cuda-samples'
  ``-gencode`` idiom), so newer GPUs can still JIT it;
* ``-lineinfo`` by default (source lines in Nsight Compute), ``-O3``;
* outputs under ``build/<arch>/`` (``build/sm_80-sm_90/`` for fat binaries), reused while the
  source (and the local headers it includes), the flags and the nvcc binary are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from nsighttk import progress, safeio
from nsighttk.arch import DEFAULT_ARCH, base_sm, normalize_sm, sm_number
from nsighttk.errors import BuildFailed, OutputFileError, UsageError, WorkloadError
from nsighttk.paths import bundled_dir
from nsighttk.settings import Settings, current
from nsighttk.toolchain import local_arch, nvcc_archs, require_tool

_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


@dataclass
class BuildConfig:
    """How to build one program."""

    archs: list[str] = field(default_factory=list)  # empty: default_arch()
    lineinfo: bool = True
    opt: str = "-O3"
    extra_flags: list[str] = field(default_factory=list)
    out_root: Path = Path("build")
    force: bool = False


@dataclass
class BuildResult:
    source: Path
    binary: Path
    archs: list[str]
    command: list[str]
    cached: bool
    log: str = ""


def samples_dir() -> Path:
    """Where the bundled ``cuda_samples/`` are: ``$NSIGHTTK_SAMPLES``, the checkout, or ./cuda_samples."""
    return bundled_dir("cuda_samples")


def list_samples() -> list[str]:
    d = samples_dir()
    return sorted(p.stem for p in d.glob("*.cu")) if d.is_dir() else []


def find_source(target: str) -> Path | None:
    """A ``.cu`` path, or the name of a bundled sample (``add`` -> cuda_samples/add.cu)."""
    p = Path(target)
    if p.suffix == ".cu":
        return p if p.is_file() else None
    cand = samples_dir() / f"{target}.cu"
    return cand if cand.is_file() else None


def default_arch(settings: Settings | None = None) -> str:
    """The one default ``--arch`` of every command (build, nsys, ncu, bench, torch, inspect):
    ``$NSIGHTTK_ARCH``, else the local GPU's, else sm_75 (the oldest arch CUDA 13 builds, which
    runs on every GPU it supports, as SASS or through PTX)."""
    s = settings or current()
    return normalize_sm(s.arch) if s.arch else (local_arch() or DEFAULT_ARCH)


def resolve_archs(archs: list[str] | tuple[str, ...] | None, settings: Settings | None = None,
                  check_nvcc: bool = True) -> list[str]:
    """``--arch`` values (any spelling :func:`~nsighttk.arch.normalize_sm` accepts) or the default,
    normalized, de-duplicated and, with ``check_nvcc``, checked against what this nvcc builds."""
    chosen = list(archs) if archs else [default_arch(settings)]
    return check_archs(chosen) if check_nvcc else list(dict.fromkeys(normalize_sm(a) for a in chosen))


def arch_plan(built: list[str], gpu_sm: str | None) -> tuple[str, str | None]:
    """How a binary built for ``built`` runs on the GPU: ("native"|"jit"|"cannot", message)."""
    if not gpu_sm or not built:
        return "native", None
    gpu = sm_number(gpu_sm)
    nums = [sm_number(a) for a in built]
    if any(n // 10 == gpu // 10 and n <= gpu for n in nums):
        return "native", None
    ptx = max(nums)
    if ptx <= gpu:
        return "jit", (f"built for {', '.join(built)} but the GPU is {gpu_sm}: the driver will JIT-compile the "
                       f"compute_{ptx} PTX at load time, so the SASS that runs (and that ncu profiles) is not "
                       f"what nvcc would emit for {gpu_sm}")
    return "cannot", f"built for {', '.join(built)}, which a {gpu_sm} GPU cannot run (no SASS or PTX it accepts)"


def check_archs(archs: list[str]) -> list[str]:
    """Normalize, de-duplicate and check against what this nvcc can build."""
    norm = list(dict.fromkeys(normalize_sm(a) for a in archs))
    supported = nvcc_archs()
    bad = [a for a in norm if supported and base_sm(a) not in supported]
    if bad:
        nvcc = require_tool("nvcc")
        raise UsageError(f"nvcc {nvcc.version or ''} cannot build {', '.join(bad)}".replace("  ", " "),
                         f"supported: {' '.join(supported)}")
    return norm


def gencode_flags(archs: list[str]) -> list[str]:
    """SASS for each arch, PTX for the highest: ``-gencode=arch=compute_XX,code=sm_XX`` ..."""
    flags = [f"-gencode=arch=compute_{a[3:]},code={a}" for a in archs]
    top = max(archs, key=lambda a: (sm_number(a), a))
    flags.append(f"-gencode=arch=compute_{top[3:]},code=compute_{top[3:]}")
    return flags


def nvcc_command(nvcc: str, source: Path, output: Path, archs: list[str], config: BuildConfig) -> list[str]:
    """The nvcc command line, as a list (never a shell string)."""
    cmd = [nvcc, config.opt, *gencode_flags(archs)]
    if config.lineinfo:
        cmd.append("-lineinfo")
    cmd += [*config.extra_flags, "-o", str(output), str(source)]
    return cmd


def _sources_digest(source: Path, seen: set[Path] | None = None) -> str:
    """Hash of the source and, recursively, the local headers it includes with quotes."""
    seen = seen or set()
    h = hashlib.sha256()
    src = source.resolve()
    if src in seen:
        return ""
    seen.add(src)
    text = src.read_bytes()
    h.update(text)
    for inc in _INCLUDE_RE.findall(text.decode(errors="replace")):
        p = src.parent / inc
        if p.is_file():
            h.update(_sources_digest(p, seen).encode())
    return h.hexdigest()


def _fingerprint(source: Path, cmd: list[str], nvcc_version: str | None, nvcc_path: str) -> str:
    st = os.stat(nvcc_path)
    payload = json.dumps({"src": _sources_digest(source), "cmd": cmd[1:], "nvcc": nvcc_version,
                          "nvcc_id": [os.path.realpath(nvcc_path), st.st_size, int(st.st_mtime)]})
    return hashlib.sha256(payload.encode()).hexdigest()


def build(target: str | Path, config: BuildConfig | None = None) -> BuildResult:
    """Build a sample name or ``.cu`` file; reuse the previous binary when nothing changed."""
    config = config or BuildConfig()
    source = find_source(str(target))
    if source is None:
        known = ", ".join(list_samples()) or "none found"
        raise WorkloadError(f"no sample or .cu file named {str(target)!r}", f"samples: {known}")
    nvcc = require_tool("nvcc")
    assert nvcc.path is not None
    archs = resolve_archs(config.archs)
    out_dir = Path(config.out_root) / "-".join(archs)
    output = out_dir / source.stem
    cmd = nvcc_command(nvcc.path, source, output, archs, config)
    stamp = output.with_name(output.name + ".nsighttk.json")
    fp = _fingerprint(source, cmd, nvcc.version, nvcc.path)
    if not config.force and output.is_file() and stamp.is_file():
        try:
            if json.loads(stamp.read_text()).get("fingerprint") == fp:
                return BuildResult(source, output, archs, cmd, cached=True)
        except (OSError, ValueError):
            pass
    safeio.make_dirs(out_dir, "build folder")
    # nvcc writes beside the binary; the result replaces it only when complete (Ctrl-C, a full disk)
    tmp = output.with_name(f".{output.name}.tmp-{os.getpid()}")
    run_cmd = [str(tmp) if a == str(output) else a for a in cmd]
    try:
        with progress.step(f"nvcc {source.name} for {', '.join(archs)}"):  # "done" only once it built
            proc = subprocess.run(run_cmd, capture_output=True, text=True, check=False)
            log = proc.stdout + proc.stderr
            if proc.returncode != 0:
                raise _failed(source, output, log)
            os.replace(tmp, output)
    finally:
        if tmp.exists():
            tmp.unlink()
    safeio.write_text(stamp, json.dumps({"fingerprint": fp, "command": cmd, "nvcc_version": nvcc.version}, indent=1))
    return BuildResult(source, output, archs, cmd, cached=False, log=log)


def _failed(source: Path, output: Path, log: str) -> BuildFailed:
    """nvcc's error lines (three at most) in one line; its whole output kept beside the binary."""
    errors = [ln.strip() for ln in log.splitlines() if "error" in ln.lower()] or log.strip().splitlines()[-3:]
    more = len(errors) - 3
    return BuildFailed(f"nvcc failed on {source}: {' | '.join(errors[:3])}"
                       + (f" (and {more} more error line(s))" if more > 0 else ""),
                       f"fix the source; nvcc's full output: {_keep_log(output, log)}")


def _keep_log(output: Path, log: str) -> str:
    """Write nvcc's output beside where the binary would go; its path, or why there is none."""
    path = output.with_name(output.name + ".nvcc.log")
    try:
        safeio.write_text(path, log)
    except OutputFileError as ex:
        return f"not kept ({ex.message})"
    return str(path)
