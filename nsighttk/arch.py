"""GPU architectures: model -> compute capability -> ``-arch``, and per-arch occupancy limits.

The GPU table of the course notes, brought up to date (Turing through Blackwell; Volta and Pascal kept, marked as
unsupported by CUDA 13's nvcc).  Per-arch limits follow the CUDA C++ Programming Guide's
"Technical Specifications per Compute Capability"; ``verified`` says which rows were checked
against a real device (``cuDeviceGetAttribute`` and nsys' TARGET_INFO_GPU on an H200, 2026-11).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from nsighttk.errors import UsageError


@dataclass(frozen=True)
class GpuModel:
    """A GPU product and the compute capability it has."""

    name: str
    architecture: str
    compute_capability: str  # "9.0"
    segment: str  # datacenter, workstation, consumer, embedded
    min_cuda: str  # first CUDA release that targets it

    @property
    def sm(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "")


@dataclass(frozen=True)
class ArchLimits:
    """Per-SM resource limits used by the occupancy calculator."""

    sm: str
    compute_capability: str
    architecture: str
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    register_alloc_unit: int  # registers, allocated per warp
    max_smem_per_sm_bytes: int
    max_smem_per_block_bytes: int  # opt-in maximum
    smem_alloc_unit_bytes: int
    reserved_smem_per_block_bytes: int
    smem_carveouts_kb: tuple[int, ...]
    max_threads_per_block: int = 1024
    warp_size: int = 32
    verified: bool = False

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


_KB = 1024
_CARVE_90 = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)
_CARVE_80 = (0, 8, 16, 32, 64, 100, 132, 164)
_CARVE_86 = (0, 8, 16, 32, 64, 100)

#: Per-arch limits, keyed by ``sm_XX``.
LIMITS: dict[str, ArchLimits] = {
    a.sm: a
    for a in [
        ArchLimits("sm_75", "7.5", "Turing", 1024, 32, 16, 65536, 255, 256, 64 * _KB, 64 * _KB, 256, 0, (32, 64)),
        ArchLimits("sm_80", "8.0", "Ampere", 2048, 64, 32, 65536, 255, 256, 164 * _KB, 163 * _KB, 128, 1024, _CARVE_80),
        ArchLimits("sm_86", "8.6", "Ampere", 1536, 48, 16, 65536, 255, 256, 100 * _KB, 99 * _KB, 128, 1024, _CARVE_86),
        ArchLimits("sm_87", "8.7", "Ampere", 1536, 48, 16, 65536, 255, 256, 164 * _KB, 163 * _KB, 128, 1024, _CARVE_80),
        ArchLimits("sm_89", "8.9", "Ada Lovelace", 1536, 48, 24, 65536, 255, 256, 100 * _KB, 99 * _KB, 128, 1024,
                   _CARVE_86),
        ArchLimits("sm_90", "9.0", "Hopper", 2048, 64, 32, 65536, 255, 256, 228 * _KB, 227 * _KB, 128, 1024, _CARVE_90,
                   verified=True),
        ArchLimits("sm_100", "10.0", "Blackwell", 2048, 64, 32, 65536, 255, 256, 228 * _KB, 227 * _KB, 128, 1024,
                   _CARVE_90),
        ArchLimits("sm_103", "10.3", "Blackwell", 2048, 64, 32, 65536, 255, 256, 228 * _KB, 227 * _KB, 128, 1024,
                   _CARVE_90),
        ArchLimits("sm_110", "11.0", "Blackwell", 1536, 48, 24, 65536, 255, 256, 228 * _KB, 227 * _KB, 128, 1024,
                   _CARVE_90),
        ArchLimits("sm_120", "12.0", "Blackwell", 1536, 48, 32, 65536, 255, 256, 100 * _KB, 99 * _KB, 128, 1024,
                   _CARVE_86),
        ArchLimits("sm_121", "12.1", "Blackwell", 1536, 48, 32, 65536, 255, 256, 100 * _KB, 99 * _KB, 128, 1024,
                   _CARVE_86),
    ]
}

#: GPU models (the course notes' table, brought up to date).
MODELS: list[GpuModel] = [
    GpuModel("P100", "Pascal", "6.0", "datacenter", "8.0"),
    GpuModel("P40", "Pascal", "6.1", "datacenter", "8.0"),
    GpuModel("GTX 1080 Ti", "Pascal", "6.1", "consumer", "8.0"),
    GpuModel("V100", "Volta", "7.0", "datacenter", "9.0"),
    GpuModel("Titan V", "Volta", "7.0", "consumer", "9.0"),
    GpuModel("T4", "Turing", "7.5", "datacenter", "10.0"),
    GpuModel("RTX 2080 Ti", "Turing", "7.5", "consumer", "10.0"),
    GpuModel("Quadro RTX 8000", "Turing", "7.5", "workstation", "10.0"),
    GpuModel("TITAN RTX", "Turing", "7.5", "consumer", "10.0"),
    GpuModel("A100", "Ampere", "8.0", "datacenter", "11.0"),
    GpuModel("A800", "Ampere", "8.0", "datacenter", "11.0"),
    GpuModel("A30", "Ampere", "8.0", "datacenter", "11.0"),
    GpuModel("A40", "Ampere", "8.6", "datacenter", "11.1"),
    GpuModel("A10", "Ampere", "8.6", "datacenter", "11.1"),
    GpuModel("A16", "Ampere", "8.6", "datacenter", "11.1"),
    GpuModel("A2", "Ampere", "8.6", "datacenter", "11.1"),
    GpuModel("RTX A6000", "Ampere", "8.6", "workstation", "11.1"),
    GpuModel("RTX 3090", "Ampere", "8.6", "consumer", "11.1"),
    GpuModel("RTX 3080", "Ampere", "8.6", "consumer", "11.1"),
    GpuModel("RTX 3060", "Ampere", "8.6", "consumer", "11.1"),
    GpuModel("Jetson AGX Orin", "Ampere", "8.7", "embedded", "11.4"),
    GpuModel("L4", "Ada Lovelace", "8.9", "datacenter", "11.8"),
    GpuModel("L40", "Ada Lovelace", "8.9", "datacenter", "11.8"),
    GpuModel("L40S", "Ada Lovelace", "8.9", "datacenter", "11.8"),
    GpuModel("RTX 6000 Ada", "Ada Lovelace", "8.9", "workstation", "11.8"),
    GpuModel("RTX 4090", "Ada Lovelace", "8.9", "consumer", "11.8"),
    GpuModel("RTX 4080", "Ada Lovelace", "8.9", "consumer", "11.8"),
    GpuModel("RTX 4060", "Ada Lovelace", "8.9", "consumer", "11.8"),
    GpuModel("H100", "Hopper", "9.0", "datacenter", "11.8"),
    GpuModel("H800", "Hopper", "9.0", "datacenter", "11.8"),
    GpuModel("H200", "Hopper", "9.0", "datacenter", "11.8"),
    GpuModel("H20", "Hopper", "9.0", "datacenter", "11.8"),
    GpuModel("GH200", "Hopper", "9.0", "datacenter", "11.8"),
    GpuModel("B200", "Blackwell", "10.0", "datacenter", "12.8"),
    GpuModel("B100", "Blackwell", "10.0", "datacenter", "12.8"),
    GpuModel("GB200", "Blackwell", "10.0", "datacenter", "12.8"),
    GpuModel("B300", "Blackwell Ultra", "10.3", "datacenter", "12.9"),
    GpuModel("GB300", "Blackwell Ultra", "10.3", "datacenter", "12.9"),
    GpuModel("Jetson Thor", "Blackwell", "11.0", "embedded", "13.0"),
    GpuModel("RTX PRO 6000 Blackwell", "Blackwell", "12.0", "workstation", "12.8"),
    GpuModel("RTX 5090", "Blackwell", "12.0", "consumer", "12.8"),
    GpuModel("RTX 5080", "Blackwell", "12.0", "consumer", "12.8"),
    GpuModel("RTX 5070", "Blackwell", "12.0", "consumer", "12.8"),
    GpuModel("DGX Spark (GB10)", "Blackwell", "12.1", "workstation", "12.9"),
]

#: What nvcc supports when it cannot be asked (``nvcc --list-gpu-code``), by CUDA major version.
NVCC_DEFAULT_ARCHS = {
    13: ["sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_100", "sm_103", "sm_110", "sm_120",
         "sm_121"],
    12: ["sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87",
         "sm_89", "sm_90"],
}

#: Default ``-arch`` when there is no GPU to ask: the oldest arch CUDA 13 still builds, so the
#: binary runs (as SASS or through PTX JIT) on every GPU CUDA 13 supports.
DEFAULT_ARCH = "sm_75"

_SM_RE = re.compile(r"^(?:sm_|compute_)?(\d)(\d+)([af]?)$")


def normalize_sm(value: str) -> str:
    """``"90"``, ``"9.0"``, ``"sm_90"``, ``"compute_90"``, ``"sm_90a"`` -> ``"sm_90"``/``"sm_90a"``."""
    v = value.strip().lower().replace("-arch=", "")
    m = re.match(r"^(\d+)\.(\d+)$", v)
    if m:
        return f"sm_{m.group(1)}{m.group(2)}"
    m = _SM_RE.match(v)
    if not m:
        raise UsageError(f"not an architecture: {value!r}", "use sm_XX, e.g. sm_90, or a compute capability like 9.0")
    return f"sm_{m.group(1)}{m.group(2)}{m.group(3)}"


def base_sm(sm: str) -> str:
    """``sm_90a`` -> ``sm_90`` (feature-specific suffixes share the base arch's limits)."""
    return sm.rstrip("af") if sm[-1:] in ("a", "f") else sm


def sm_number(sm: str) -> int:
    """``sm_90a`` -> 90: the arch as a number, for comparisons and compiler targets."""
    return int(base_sm(normalize_sm(sm))[3:])


def sm_to_cc(sm: str) -> str:
    digits = base_sm(normalize_sm(sm))[3:]
    return f"{digits[:-1]}.{digits[-1]}"


def cc_to_sm(cc: str) -> str:
    return normalize_sm(cc)


def limits_for(arch: str) -> ArchLimits:
    """Occupancy limits for an arch (``sm_90``, ``9.0`` ...); clear error for unknown ones."""
    sm = base_sm(normalize_sm(arch))
    if sm not in LIMITS:
        raise UsageError(f"no occupancy limits for {sm}", f"known: {', '.join(LIMITS)}")
    return LIMITS[sm]


def _norm_model(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower().replace("nvidia", "").replace("geforce", "").replace("tesla", ""))


def find_models(query: str) -> list[GpuModel]:
    """Models matching a name (``H100``, ``NVIDIA H100 80GB HBM3``, ``rtx4090``) or an arch."""
    q = query.strip()
    try:
        sm = base_sm(normalize_sm(q))
        return [m for m in MODELS if m.sm == sm]
    except UsageError:
        pass
    nq = _norm_model(q)
    exact = [m for m in MODELS if _norm_model(m.name) == nq]
    if exact:
        return exact
    # Longest model name contained in the query ("NVIDIA H100 80GB HBM3" -> H100), then substring.
    contained = sorted((m for m in MODELS if _norm_model(m.name) and _norm_model(m.name) in nq),
                       key=lambda m: len(m.name), reverse=True)
    if contained:
        best = len(_norm_model(contained[0].name))
        return [m for m in contained if len(_norm_model(m.name)) == best]
    return [m for m in MODELS if nq and nq in _norm_model(m.name)]


def lookup(query: str) -> dict[str, object]:
    """What ``nsighttk arch QUERY`` shows: matching models, the arch, its limits."""
    models = find_models(query)
    if not models:
        raise UsageError(f"unknown GPU model or architecture: {query!r}",
                         "try a model such as H100 or RTX 4090, or an arch such as sm_90 (nsighttk arch lists all)")
    sm = models[0].sm
    lim = LIMITS.get(sm)
    return {
        "query": query,
        "arch": sm,
        "compute_capability": models[0].compute_capability,
        "architecture": models[0].architecture,
        "models": [m.name for m in models],
        "nvcc_flag": f"-arch={sm}",
        "gencode": f"-gencode arch=compute_{sm[3:]},code={sm}",
        "cuda13_supported": sm in NVCC_DEFAULT_ARCHS[13],
        "limits": lim.as_dict() if lim else None,
    }


def table() -> list[dict[str, str]]:
    """The whole model table, one row per model."""
    return [{"architecture": m.architecture, "model": m.name, "compute_capability": m.compute_capability,
             "arch": m.sm, "segment": m.segment, "min_cuda": m.min_cuda,
             "cuda13": "yes" if m.sm in NVCC_DEFAULT_ARCHS[13] else "no"} for m in MODELS]


@dataclass(frozen=True)
class LinkPeak:
    """A GPU's nominal GPU-to-GPU bandwidth in one direction: NVIDIA's datasheet NVLink figure (the
    total of both directions) halved, what nccl-tests' bus bandwidth is compared with.  Nominal:
    whether the GPUs of a capture are linked that way (NVSwitch, bridges) is not recorded in it."""

    link: str  # "NVLink 4 (18 links)"
    gbps: float  # 10^9 bytes per second, one direction

    def describe(self, gpu: str) -> str:
        return f"nominal {self.link} of {gpu}: {self.gbps:g} GB/s per direction"


#: (GPU name pattern, its link): the SXM / mezzanine parts, whose NVLink connects every GPU of a
#: board.  PCIe and NVL (bridged) cards are left out: their GPU-to-GPU path depends on the host.
_LINKS: tuple[tuple[re.Pattern[str], LinkPeak], ...] = (
    (re.compile(r"\bG?B200\b", re.I), LinkPeak("NVLink 5 (18 links)", 900.0)),  # 1.8 TB/s
    (re.compile(r"\bH(?:100|200)\b(?!.*\b(?:PCIe|NVL)\b)", re.I), LinkPeak("NVLink 4 (18 links)", 450.0)),  # 900 GB/s
    (re.compile(r"\bA100\b(?!.*\bPCIe\b)", re.I), LinkPeak("NVLink 3 (12 links)", 300.0)),  # 600 GB/s; PG509: SXM4
    (re.compile(r"\bV100-SXM", re.I), LinkPeak("NVLink 2 (6 links)", 150.0)),  # 300 GB/s
)


def link_peak(gpu_name: str) -> LinkPeak | None:
    """The nominal NVLink bandwidth of a GPU named as a capture names it (``NVIDIA H200``,
    ``NVIDIA A100-SXM4-80GB``), or None where it is not known (PCIe cards, other GPUs)."""
    for rx, link in _LINKS:
        if rx.search(gpu_name or ""):
            return link
    return None
