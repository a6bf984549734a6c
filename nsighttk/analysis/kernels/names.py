"""Read a kernel's name the way an expert does (the course notes read
``sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x16_stage3_warpsize2x2x1_ff_main_v1`` by hand).

:func:`decode` returns what a name says (:class:`KernelInfo`): the library or generator (cuBLAS
nvjet / xmma, CUTLASS 2.x/3.x, cuDNN, FlashAttention, PyTorch ATen templates, Triton,
``torch.compile``, NCCL, NVSHMEM), the category (matrix, attention, ..., communication, from
``nsighttk/data/ops.json``) and the coarse :attr:`KernelInfo.kind` (compute, memory,
communication), the target arch, tensor-core use, data types, operand layouts, tile / stage /
cluster / warp shapes, the functor or op (``direct_copy``, ``mul``, ``fused_adamw``) and, for
collectives, the collective, algorithm, protocol and reduction.  :func:`short_label` is a short
form for terminals that keeps what tells kernels apart.  Pure string work, no GPU needed;
anything the name does not say is left out rather than guessed.  The grammars live in
:mod:`kernel_libraries` (NVIDIA and communication libraries) and :mod:`kernel_frameworks`
(ATen, Triton/Inductor, plain CUDA).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from nsighttk.analysis.kernels import frameworks as fw
from nsighttk.analysis.kernels import libraries as libs
from nsighttk.analysis.kernels.info import KernelInfo, kernel_category, knowledge, parse

__all__ = ["KernelInfo", "comm_library", "decode", "decode_frame", "is_collective", "kernel_category", "knowledge",
           "short_label", "short_labels"]

#: Longest name prefix decoded: real names reach ~3,000 characters; a hostile export's longer ones are cut.
MAX_NAME = 8192

#: Communication kernels (collectives and point-to-point), by library.  Real names:
#: ``ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)`` (NCCL >= 2.19),
#: ``ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)`` (2.8-2.18),
#: ``ncclAllReduceRingLLKernel_sum_f32(ncclColl)`` (2.4-2.7), ``ncclSymkDevKernel_AllGather_LL`` (symmetric
#: kernels); RCCL keeps NCCL's names.  NVSHMEM's on-stream collectives (``rdxn_on_stream_kernel<float, ...>``),
#: PyTorch's symmetric-memory kernels, vLLM's custom all-reduce and DeepEP's dispatch/combine move data between
#: GPUs too.
_COMM_LIBRARIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:void\s+)?(?:nccl|mscclKernel)"), "NCCL"),
    (re.compile(r"(?:void\s+)?(?:\w+::)*(?:nvshmemi?\w*|(?:alltoall|barrier|barrier_all|broadcast|fcollect|rdxn|"
                r"reducescatter|sync|sync_all)_on_stream_kernel\w*)\b"), "NVSHMEM"),
    (re.compile(r".*\b(?:multimem_(?:one_shot_)?all_reduce|multimem_all_gather|one_shot_all_reduce|"
                r"two_shot_all_reduce|reduce_scatter_multimem)_kernel\b"), "PyTorch symmetric memory"),
    (re.compile(r"(?:void\s+)?vllm::cross_device_reduce_\w+"), "vLLM custom all-reduce"),
    (re.compile(r"(?:void\s+)?deep_ep::"), "DeepEP"),
)


def _text(name: Any) -> str:
    """A name as text: a damaged capture can hold a missing name (None, NaN) or a number."""
    if isinstance(name, str):
        return name
    if name is None or (isinstance(name, float) and name != name) or type(name).__name__ == "NAType":
        return ""
    return str(name)


@functools.lru_cache(maxsize=65536)
def comm_library(name: str) -> str | None:
    """The communication library whose kernel ``name`` is (``"NCCL"``, ``"NVSHMEM"``, ...), else None."""
    plain = _text(name).strip()[:MAX_NAME]
    for rx, lib in _COMM_LIBRARIES:
        if rx.match(plain):
            return lib
    return None


def is_collective(name: str) -> bool:
    """True for a communication kernel: an NCCL/RCCL collective or send/recv, NVSHMEM's on-stream
    collectives, PyTorch symmetric-memory, vLLM custom all-reduce and DeepEP kernels.  Its duration
    includes the time it waits for the other ranks, so launch-geometry advice does not apply to it."""
    return comm_library(name) is not None


_ATEN_BASES = re.compile(r"^(?:softmax_warp_\w+|cunn_\w+|elementwise_kernel_with_index|vectorized_layer_norm_kernel|"
                         r"multi_tensor_apply_kernel)$")
_LEGACY_CUBLAS = re.compile(r"(?:maxwell|pascal|volta|turing|ampere|ada|hopper)_\w*gemm")


def _demangled_words(name: str) -> str:
    """The identifiers of an Itanium-mangled name (``_ZN19cutlass_cudnn_train6Kernel...``), joined by
    ``::``: enough to tell the library and the kernel when a profiler left the name mangled."""
    words, i, s = [], 0, name
    while i < len(s):
        m = re.compile(r"(\d+)").match(s, i)
        if m:
            n, j = int(m.group(1)), m.end()
            if 0 < n <= len(s) - j and re.fullmatch(r"[A-Za-z_]\w*", s[j:j + n]):
                words.append(s[j:j + n])
                i = j + n
                continue
            i = m.end()
        else:
            i += 1
    return "::".join(words)


def decode(name: str) -> KernelInfo:
    """What a kernel's (demangled) name tells about it; see the module doc."""
    name = _text(name)
    k = KernelInfo(name=name)
    plain = name.strip()[:MAX_NAME]
    if plain.startswith("_Z"):
        words = _demangled_words(plain)
        k.notes.append(f"mangled name; its identifiers: {words}")
        plain = words or plain
    low = plain.lower()
    comm = comm_library(plain)
    if comm:
        libs.decode_comm(plain, comm, k)
    elif plain.startswith("nvjet_"):
        libs.decode_nvjet(plain, k)
    elif re.match(r"sm\d+a?_xmma_", plain):
        libs.decode_xmma(plain, k)
    elif plain.startswith("cudnn_generated_fort_native_sdpa"):
        libs.decode_cudnn(plain, k)
    elif plain.startswith("fmha_cutlass") or re.search(r"\bflash_(?:fwd|bwd)\w*|flash::FlashAttn|pytorch_flash::",
                                                          plain):
        libs.decode_attention(plain, k)
    elif re.search(r"cutlass(?:3x)?_\w*?(?:gemm|fprop|dgrad|wgrad)", plain):
        libs.decode_cutlass(plain, k)
    elif _LEGACY_CUBLAS.match(plain) and "cudnn" not in low:
        libs.decode_cublas_legacy(plain, k)
    elif re.match(r"triton_", plain):
        fw.decode_triton(plain, k)
    elif plain.startswith("Cijk_"):
        libs.decode_tensile(plain, k)
    elif libs.decode_cublas_helper(plain, k):
        pass
    elif "cutlass" in low:
        _decode_cutlass_struct(plain, k)
    elif re.match(r"(?:void\s+)?at::", plain):
        fw.decode_aten(plain, k)
    elif "cudnn" in low or re.search(r"\b(?:fft2d_[rc]2[rc]|wgrad_alg\d_engine|dgrad_engine)", plain):
        libs.decode_cudnn(plain, k)
    else:
        c = parse(plain)
        if c.qualname.startswith("at::") or _ATEN_BASES.match(c.base) or "at::native::" in c.qualname:
            fw.decode_aten(plain, k)
        else:
            fw.decode_plain(plain, k)
    if not k.arch:
        am = re.match(r"sm(\d{2,3})_", plain)
        if am:
            k.arch = f"sm_{am.group(1)}"
    return k


def _decode_cutlass_struct(name: str, k: KernelInfo) -> None:
    """CUTLASS kernels named by their C++ types (``cutlass::device_kernel<...GemmUniversal<...>>``,
    cuDNN's ``cutlass_cudnn_train::Kernel<...ImplicitGemmConvolution<...>>``)."""
    k.family, k.library = "cutlass", "CUTLASS (in cuDNN)" if "cudnn" in name else "CUTLASS"
    m = re.search(r"(ImplicitGemmConvolution|GemmUniversal\w*|Gemm\w*|ReduceSplitK|\w*Conv\w*)", name)
    k.functor = {"ImplicitGemmConvolution": "conv (implicit GEMM)", "ReduceSplitK": "split-K reduce"}.get(
        m.group(1), m.group(1)) if m else parse(name).base
    k.category = "matrix" if m else kernel_category(name)
    k.template = k.op = k.functor
    shape = re.search(r"GemmShape<(\d+), (\d+), (\d+)>|GemmShapeILi(\d+)ELi(\d+)ELi(\d+)E", k.name)
    if shape:
        g = [x for x in shape.groups() if x]
        k.tile = "x".join(g)
    k.tokens += [(3, "cutlass"), (3, k.functor or "kernel"), (1, k.tile or "")]


# ------------------------------------------------------------------------------------------------ short labels

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _join(tokens: list[tuple[int, str]]) -> str:
    out = ""
    for _, t in tokens:
        out += t if t.startswith("<") or not out else " " + t
    return out


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` with an ellipsis in the middle (the end often tells kernels apart)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


@functools.lru_cache(maxsize=65536)
def _tokens(name: str) -> tuple[tuple[int, str], ...]:
    name = _text(name)
    k = decode(name)
    toks = [(p, _CONTROL.sub("?", t)) for p, t in k.tokens if t]
    if not toks:
        fallback = _CONTROL.sub("?", parse(name[:MAX_NAME]).base or name.strip()[:200])
        toks = [(3, fallback or "(unnamed kernel)")]
    return tuple(toks)


def short_label(name: str, width: int | None = None) -> str:
    """A short, readable form of a kernel name for terminals: what the kernel does and what tells
    it apart (``elementwise direct_copy<bf16> 128x2``, ``nvjet gemm 192x128x64<bf16> ...``,
    ``nccl AllReduce ring LL bf16 sum``, ``triton_poi_fused_add_0``).  Deterministic and never
    empty; with ``width``, the least telling pieces (pipeline stages, layouts, vector widths, then
    tiles, then types) are dropped first, and what still does not fit is cut in the middle."""
    toks = list(_tokens(name))
    text = _join(toks)
    if width is None or len(text) <= width:
        return text
    while len(text) > width:
        droppable = [i for i, (p, _) in enumerate(toks) if p < 3]
        if not droppable:
            break
        low = min(toks[i][0] for i in droppable)
        toks.pop(max(i for i in droppable if toks[i][0] == low))
        text = _join(toks)
    return _fit(text, width)


def short_labels(names: Any, width: int | None = None) -> list[str]:
    """:func:`short_label` for a column of names, made unique among distinct names: where labels
    collide, the full labels are used if they differ and fit, else ``#2``, ``#3``... are added in
    order of appearance (the label shortened to leave room)."""
    names = list(names)
    order = list(dict.fromkeys(names))
    labels = {n: short_label(n, width) for n in order}

    def collisions() -> list[list[str]]:
        groups: dict[str, list[str]] = {}
        for n in order:
            groups.setdefault(labels[n], []).append(n)
        return [g for g in groups.values() if len(g) > 1]

    for members in collisions():
        full = {n: short_label(n) for n in members}
        if len(set(full.values())) == len(members) and (width is None or all(len(v) <= width for v in full.values())):
            labels.update(full)
    taken = set(labels.values())
    for members in collisions():
        for n in members[1:]:
            i = 2
            while True:
                suffix = f" #{i}"
                cand = (short_label(n, max(width - len(suffix), 1)) if width else labels[n]) + suffix
                if cand not in taken:
                    break
                i += 1
            labels[n] = cand
            taken.add(cand)
    return [labels[n] for n in names]


def decode_frame(names: Any) -> Any:
    """A DataFrame (one row per name): family, category, kind, arch, tensor_cores, dtypes, tile,
    functor, op, label, decoded."""
    import pandas as pd

    rows = []
    for n in names:
        k = decode(n)
        rows.append({"name": n, "family": k.family, "category": k.category, "kind": k.kind, "arch": k.arch,
                     "tensor_cores": k.tensor_cores, "dtypes": "/".join(dict.fromkeys(k.dtypes)) or None,
                     "tile": k.tile, "functor": k.functor, "op": k.op, "label": short_label(n),
                     "decoded": k.summary()})
    return pd.DataFrame(rows)
