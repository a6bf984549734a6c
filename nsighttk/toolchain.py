"""Find the CUDA toolchain and the Nsight tools, their versions, and the GPU; ``nsighttk doctor``.

Discovery order for each tool, first hit wins:

1. an explicit override: ``NSIGHTTK_NVCC``, ``NSIGHTTK_NSYS``, ``NSIGHTTK_NCU``,
   ``NSIGHTTK_NVIDIA_SMI``, ``NSIGHTTK_COMPUTE_SANITIZER`` (a path to the executable);
2. ``PATH``;
3. ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``, then ``/usr/local/cuda*/bin`` (newest first);
4. standalone installs: ``/opt/nvidia/nsight-systems/*/bin``, ``/opt/nvidia/nsight-compute/*``;
5. bundled copies: the ``nsys`` shipped inside Nsight Compute
   (``/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys``) and Debian's
   ``nsight-systems-target`` (``/usr/lib/*/nsight-systems/target-linux-x64/nsys``).

Every command uses :func:`find_tool` / :func:`require_tool`, so they all agree with ``doctor``.
"""

from __future__ import annotations

import ctypes
import glob
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from nsighttk.errors import ToolNotFound
from nsighttk.settings import TOOL_VARS, current, use

TOOLS = ("nvcc", "nsys", "ncu", "nvidia-smi", "compute-sanitizer", "cuobjdump")

#: Where NVIDIA's standalone Nsight installers put things (a variable so tests can point it elsewhere).
NVIDIA_OPT = "/opt/nvidia"
#: Where distribution packages put bundled nsys copies.
LIB_GLOB = "/usr/lib/*/nsight-systems/target-linux-x64/nsys"

_ENV = TOOL_VARS  # the NSIGHTTK_<TOOL> override of each tool (read by nsighttk.settings)

#: What is lost without each piece (``doctor`` prints it for missing ones).
DISABLES = {
    "nvcc": "building cuda_samples/ and .cu files (nsighttk build, nsighttk nsys SAMPLE)",
    "nsys": "capturing timelines (nsighttk nsys) and reading .nsys-rep files; .sqlite exports still work",
    "ncu": "kernel metrics captures (nsighttk ncu)",
    "nvidia-smi": "GPU details when libcuda cannot be queried",
    "compute-sanitizer": "memory and race checking of samples",
    "cuobjdump": "SASS and register counts of compiled Triton kernels (nsighttk inspect)",
    "torch": "PyTorch workloads and the torch.profiler path",
    "triton": "Triton workload variants",
    "nvtx": "NVTX ranges from plain Python (PyTorch's torch.cuda.nvtx still works)",
    "ncu_report": "reading .ncu-rep files (CSV exports still work)",
}

_INSTALL_HINT = {
    "nvcc": "install the CUDA Toolkit, or set CUDA_HOME or NSIGHTTK_NVCC",
    "nsys": "install Nsight Systems (or Nsight Compute, which bundles nsys), or set NSIGHTTK_NSYS",
    "ncu": "install Nsight Compute, or set NSIGHTTK_NCU",
    "nvidia-smi": "install the NVIDIA driver utilities, or set NSIGHTTK_NVIDIA_SMI",
    "compute-sanitizer": "install the CUDA Toolkit, or set NSIGHTTK_COMPUTE_SANITIZER",
    "cuobjdump": "install the CUDA Toolkit (or triton, which bundles one), or set NSIGHTTK_CUOBJDUMP",
}


@dataclass
class ToolInfo:
    name: str
    path: str | None
    version: str | None = None
    source: str | None = None  # override, PATH, CUDA_HOME, /usr/local/cuda, standalone, bundled
    problem: str | None = None

    @property
    def found(self) -> bool:
        return self.path is not None


def _cuda_roots() -> list[tuple[str, str]]:
    roots = [(value, var) for var, value in (("CUDA_HOME", os.environ.get("CUDA_HOME")),
                                             ("CUDA_PATH", os.environ.get("CUDA_PATH"))) if value]
    found = sorted(glob.glob("/usr/local/cuda*"), key=_version_key, reverse=True)
    roots += [(r, "/usr/local/cuda") for r in found]
    return roots


def _version_key(path: str) -> tuple[int, ...]:
    nums = re.findall(r"\d+", Path(path).name)
    return tuple(int(n) for n in nums) if nums else (10**6,)  # plain "cuda" symlink first


def _candidates(name: str) -> list[tuple[str, str]]:
    cands: list[tuple[str, str]] = []
    which = shutil.which(name)
    if which:
        cands.append((which, "PATH"))
    for root, label in _cuda_roots():
        cands.append((os.path.join(root, "bin", name), label))
        if name == "compute-sanitizer":
            cands.append((os.path.join(root, "compute-sanitizer", name), label))
    if name == "nsys":
        for d in sorted(glob.glob(f"{NVIDIA_OPT}/nsight-systems/*"), key=_version_key, reverse=True):
            cands += [(os.path.join(d, "bin", "nsys"), "standalone"),
                      (os.path.join(d, "target-linux-x64", "nsys"), "standalone")]
        for d in sorted(glob.glob(f"{NVIDIA_OPT}/nsight-compute/*"), key=_version_key, reverse=True):
            cands.append((os.path.join(d, "host", "target-linux-x64", "nsys"), "bundled with Nsight Compute"))
        for p in sorted(glob.glob(LIB_GLOB)):
            cands.append((p, "bundled (Debian nsight-systems-target)"))
    if name == "ncu":
        for d in sorted(glob.glob(f"{NVIDIA_OPT}/nsight-compute/*"), key=_version_key, reverse=True):
            cands.append((os.path.join(d, "ncu"), "standalone"))
    if name == "cuobjdump":
        spec = importlib.util.find_spec("triton")
        if spec and spec.origin:
            cands.append((os.path.join(os.path.dirname(spec.origin), "backends", "nvidia", "bin", name),
                          "bundled with triton"))
    if name == "nvidia-smi":
        cands += [("/usr/local/nvidia/bin/nvidia-smi", "driver"), ("/usr/bin/nvidia-smi", "driver")]
    return cands


def _is_exe(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _run(cmd: list[str], timeout: float = 30) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or "") + (out.stderr or "")


_VERSION_PATTERNS = {
    "nvcc": r"release\s+([\d.]+)",
    "nsys": r"version\s+([\d.]+)",
    "ncu": r"Version\s+([\d.]+)",
    "compute-sanitizer": r"Version\s+([\d.]+)",
    "cuobjdump": r"release\s+([\d.]+)",
}


def tool_version(name: str, path: str) -> str | None:
    if name == "nvidia-smi":
        out = _run([path, "--query-gpu=driver_version", "--format=csv,noheader"])
        return out.strip().splitlines()[0].strip() if out and out.strip() and "failed" not in out.lower() else None
    out = _run([path, "--version"])
    if not out:
        return None
    m = re.search(_VERSION_PATTERNS[name], out)
    return m.group(1) if m else None


@cache
def locate_tool(name: str) -> ToolInfo:
    """Locate one tool (see the module doc for the search order) without running it: its version
    is None (:func:`find_tool` asks it)."""
    if name not in TOOLS:
        raise KeyError(name)
    override = current().tools.get(name)
    if override:
        if _is_exe(override):
            return ToolInfo(name, override, None, f"override ({_ENV[name]})")
        return ToolInfo(name, None, None, f"override ({_ENV[name]})",
                        problem=f"{_ENV[name]}={override} is not an executable file")
    seen = set()
    for path, source in _candidates(name):
        real = os.path.realpath(path)
        if real in seen or not _is_exe(path):
            continue
        seen.add(real)
        return ToolInfo(name, path, None, source)
    return ToolInfo(name, None)


@cache
def find_tool(name: str) -> ToolInfo:
    """Locate one tool (see the module doc for the search order), with its version."""
    info = locate_tool(name)
    if info.path is None:
        return info
    return ToolInfo(name, info.path, tool_version(name, info.path), info.source, info.problem)


def require_tool(name: str, version: bool = True) -> ToolInfo:
    """Like :func:`find_tool`, but a missing tool is a :class:`ToolNotFound` naming the fix.
    ``version=False``: do not run the tool to ask its version (a start of nsys costs a second; the
    version is in what it writes)."""
    info = find_tool(name) if version else locate_tool(name)
    if not info.found:
        why = info.problem or (f"{name} not found (looked in {_ENV[name]}, PATH, CUDA_HOME, /usr/local/cuda*, "
                               "/opt/nvidia)")
        raise ToolNotFound(why, _INSTALL_HINT[name])
    return info


def clear_cache() -> None:
    """Forget what was found (and the settings read from the environment: tests change it)."""
    use(None)
    locate_tool.cache_clear()
    find_tool.cache_clear()
    gpu_info.cache_clear()
    nvcc_archs.cache_clear()


# ------------------------------------------------------------------------------- nsys importer

@dataclass
class ImporterCheck:
    """Whether nsys' report importer (QdstrmImporter) can load its shared libraries."""

    importer: str | None
    ok: bool | None  # None: could not tell
    missing: list[str] = field(default_factory=list)
    hint: str | None = None


_LIB_PACKAGES = {
    "libdw.so.1": "libdw1 (Debian/Ubuntu: apt-get install libdw1; RHEL: elfutils-libs)",
    "libelf.so.1": "libelf1 (Debian/Ubuntu: apt-get install libelf1; RHEL: elfutils-libelf)",
}


def find_importer(nsys_path: str) -> str | None:
    d = Path(nsys_path).resolve().parent
    for cand in [d / "QdstrmImporter", d.parent / "host-linux-x64" / "QdstrmImporter",
                 *sorted(d.parent.glob("*/QdstrmImporter")), *sorted(d.parent.parent.glob("*/QdstrmImporter"))]:
        if cand.is_file():
            return str(cand)
    return None


def missing_libraries(binary: str) -> list[str] | None:
    """Shared libraries ``ldd`` reports as "not found" for ``binary`` (None if ldd is unavailable)."""
    out = _run(["ldd", binary], timeout=20)
    if out is None:
        return None
    return sorted({m.group(1) for m in re.finditer(r"^\s*(\S+)\s+=>\s+not found", out, re.M)})


def explain_missing_libraries(missing: list[str]) -> str:
    fixes = [_LIB_PACKAGES.get(lib, lib) for lib in missing]
    return "install " + "; ".join(fixes) + ", or put the libraries' folder on LD_LIBRARY_PATH"


def check_importer(nsys_path: str) -> ImporterCheck:
    importer = find_importer(nsys_path)
    if importer is None:
        return ImporterCheck(None, None, hint="QdstrmImporter not found next to nsys")
    missing = missing_libraries(importer)
    if missing is None:
        return ImporterCheck(importer, None, hint="ldd not available")
    if missing:
        return ImporterCheck(importer, False, missing, explain_missing_libraries(missing))
    return ImporterCheck(importer, True)


# ------------------------------------------------------------------------------------------ GPU

@dataclass
class GpuInfo:
    index: int
    name: str
    compute_capability: str
    sm_count: int | None = None
    memory_bandwidth_bytes_per_s: int | None = None
    memory_bytes: int | None = None
    clock_khz: int | None = None
    l2_bytes: int | None = None
    source: str = "libcuda"

    @property
    def sm(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "")


# CUdevice_attribute values (cuda.h)
_ATTR = {"clock_khz": 13, "sm_count": 16, "mem_clock_khz": 36, "bus_bits": 37, "l2_bytes": 38, "major": 75, "minor": 76}


def _gpus_libcuda() -> list[GpuInfo] | None:
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    if cu.cuInit(0) != 0:
        return None
    count = ctypes.c_int()
    if cu.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return None
    gpus = []
    for i in range(count.value):
        dev = ctypes.c_int()
        if cu.cuDeviceGet(ctypes.byref(dev), i) != 0:
            continue
        name = ctypes.create_string_buffer(256)
        cu.cuDeviceGetName(name, 256, dev)
        vals: dict[str, int] = {}
        for key, attr in _ATTR.items():
            v = ctypes.c_int()
            if cu.cuDeviceGetAttribute(ctypes.byref(v), attr, dev) == 0:
                vals[key] = v.value
        mem = ctypes.c_size_t()
        total = mem.value if cu.cuDeviceTotalMem_v2(ctypes.byref(mem), dev) == 0 else None
        bw = None
        if vals.get("mem_clock_khz") and vals.get("bus_bits"):
            bw = 2 * vals["mem_clock_khz"] * 1000 * vals["bus_bits"] // 8  # double data rate
        gpus.append(GpuInfo(i, name.value.decode(errors="replace"), f"{vals.get('major', 0)}.{vals.get('minor', 0)}",
                            vals.get("sm_count"), bw, total or None, vals.get("clock_khz"), vals.get("l2_bytes")))
    return gpus


def _gpus_nvidia_smi() -> list[GpuInfo]:
    smi = find_tool("nvidia-smi")
    if not smi.found or smi.path is None:
        return []
    out = _run([smi.path, "--query-gpu=index,name,compute_cap,memory.total", "--format=csv,noheader,nounits"])
    gpus = []
    for line in (out or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            mem = int(float(parts[3])) * 1024 * 1024 if len(parts) > 3 and parts[3].replace(".", "").isdigit() else None
            gpus.append(GpuInfo(int(parts[0]), parts[1], parts[2], memory_bytes=mem, source="nvidia-smi"))
    return gpus


@cache
def gpu_info() -> tuple[GpuInfo, ...]:
    """The visible GPUs (empty on a machine without one)."""
    gpus = _gpus_libcuda()
    if gpus is None:
        gpus = _gpus_nvidia_smi()
    return tuple(gpus)


def local_arch() -> str | None:
    """``sm_XX`` of GPU 0, or None without a GPU."""
    gpus = gpu_info()
    return gpus[0].sm if gpus else None


@cache
def nvcc_archs() -> tuple[str, ...]:
    """The ``sm_XX`` targets this nvcc can build (``nvcc --list-gpu-code``)."""
    from nsighttk.arch import NVCC_DEFAULT_ARCHS

    nvcc = find_tool("nvcc")
    if not nvcc.found or nvcc.path is None:
        return ()
    out = _run([nvcc.path, "--list-gpu-code"])
    archs = re.findall(r"\bsm_\d+[af]?\b", out or "")
    if archs:
        return tuple(dict.fromkeys(archs))
    major = int((nvcc.version or "0").split(".")[0])
    return tuple(NVCC_DEFAULT_ARCHS.get(major, []))


# --------------------------------------------------------------------------------------- doctor

_PY_MODULES = {"torch": "torch", "triton": "triton", "nvtx": "nvtx", "ncu_report": "ncu-report"}


def python_module(module: str) -> dict[str, Any]:
    dist = _PY_MODULES.get(module, module)
    if importlib.util.find_spec(module) is not None:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = None
        return {"found": True, "version": version, "where": "python environment"}
    if module == "ncu_report":
        for d in sorted(glob.glob(f"{NVIDIA_OPT}/nsight-compute/*/extras/python"), key=_version_key, reverse=True):
            if os.path.isfile(os.path.join(d, "ncu_report.py")):
                return {"found": True, "version": None, "where": d}
        ncu = find_tool("ncu")
        if ncu.path:
            d = os.path.join(os.path.dirname(os.path.realpath(ncu.path)), "extras", "python")
            if os.path.isfile(os.path.join(d, "ncu_report.py")):
                return {"found": True, "version": None, "where": d}
    return {"found": False, "version": None, "where": None}


def doctor() -> dict[str, Any]:
    """Everything nsighttk can find, as a JSON-ready dict."""
    tools = {name: asdict(find_tool(name)) for name in TOOLS}
    nsys = find_tool("nsys")
    importer = asdict(check_importer(nsys.path)) if nsys.path else None
    modules = {m: python_module(m) for m in _PY_MODULES}
    gpus = [dict(asdict(g), arch=g.sm) for g in gpu_info()]
    missing = [n for n, t in tools.items() if not t["path"]] + [m for m, v in modules.items() if not v["found"]]
    disabled = {n: DISABLES[n] for n in missing}
    if importer and importer["ok"] is False:
        disabled["nsys importer"] = ("nsys profile leaves only a .qdstrm (no .nsys-rep/.sqlite): "
                                     + (importer["hint"] or ""))
    from nsighttk.arch import DEFAULT_ARCH

    return {
        "tools": tools,
        "nsys_importer": importer,
        "python_modules": modules,
        "gpus": gpus,
        "nvcc_archs": list(nvcc_archs()),
        "default_arch": gpus[0]["arch"] if gpus else DEFAULT_ARCH,
        "default_arch_reason": "the local GPU" if gpus else "no GPU here: the oldest arch CUDA 13 builds",
        "disabled": disabled,
    }
