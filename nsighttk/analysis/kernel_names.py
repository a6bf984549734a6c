"""Read a kernel's name the way an expert does (seed 000 reads
``sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x16_stage3_warpsize2x2x1_ff_main_v1`` by hand).

:func:`decode` returns what a name says: the library or generator (cuBLAS nvjet / xmma, CUTLASS,
cuDNN, PyTorch ATen templates, Triton, ``torch.compile``), the category (matrix, attention,
normalization, ... from ``nsighttk/data/ops.json``), the target arch, whether tensor cores are
used, data types, operand layouts, tile / stage / cluster / warp shapes, and the functor or op for
PyTorch's elementwise and reduction templates.  Pure string work, no GPU needed; anything the
name does not say is left out rather than guessed.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from nsighttk.profile import strip_templates

_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "tf32": "tf32", "f64": "float64", "e4m3": "fp8 e4m3",
           "e5m2": "fp8 e5m2", "s8": "int8", "i8": "int8", "s32": "int32", "h": "float16", "s": "float32",
           "d": "float64", "c": "complex64", "z": "complex128"}


@dataclass
class KernelInfo:
    name: str
    family: str = "unknown"  # nvjet, xmma, cutlass, cudnn, cublas-legacy, aten, triton, inductor, flash-attn, user
    library: str = ""
    category: str = "other"
    arch: str | None = None
    tensor_cores: bool | None = None
    dtypes: list[str] = field(default_factory=list)
    layout: str | None = None  # operand layouts, e.g. "tn" (A transposed, B not) / "NNT"
    tile: str | None = None  # CTA tile, M x N (x K)
    stages: int | None = None
    cluster: str | None = None
    warps: str | None = None
    op: str | None = None  # the functor / fused ops / template the name carries
    vector_width: int | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [], "")}

    def summary(self) -> str:
        bits = [self.library or self.family, self.category]
        if self.arch:
            bits.append(self.arch)
        if self.tensor_cores is not None:
            bits.append("tensor cores" if self.tensor_cores else "no tensor cores (FFMA)")
        if self.dtypes:
            bits.append("/".join(dict.fromkeys(self.dtypes)))
        if self.tile:
            bits.append(f"tile {self.tile}")
        if self.stages:
            bits.append(f"{self.stages} stages")
        if self.op:
            bits.append(self.op)
        return ", ".join(bits)


@functools.cache
def knowledge() -> dict[str, Any]:
    """``nsighttk/data/ops.json``: categories, op and kernel patterns, ATen op sources."""
    text = resources.files("nsighttk").joinpath("data/ops.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


@functools.cache
def _kernel_patterns() -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p["regex"]), p["category"]) for p in knowledge()["kernel_patterns"]]


def kernel_category(name: str) -> str:
    for rx, cat in _kernel_patterns():
        if rx.search(name):
            return cat
    return "other"


def _sm(tag: str) -> str:
    return f"sm_{tag}"


def _dtype_list(s: str) -> list[str]:
    return [_DTYPES.get(t, t) for t in re.findall(r"bf16|tf32|f16|f32|f64|e4m3|e5m2|s8|i8|s32", s)]


def _decode_nvjet(name: str, k: KernelInfo) -> None:
    # nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT (cuBLAS' JIT-generated Hopper/Blackwell GEMMs)
    k.family, k.library, k.category, k.tensor_cores = "nvjet", "cuBLAS (nvjet)", "matrix", True
    m = re.match(r"nvjet_(sm\d+a?)_", name)
    if m:
        k.arch = "sm_" + m.group(1)[2:]
    parts = name.split("_")
    tiles = [p for p in parts if re.fullmatch(r"\d+x\d+", p)]
    if tiles:
        k.tile = tiles[0]
    if len(tiles) > 1:
        kk, st = tiles[1].split("x")
        k.tile = f"{k.tile}x{kk}"
        k.stages = int(st)
    if len(tiles) > 2:
        k.cluster = tiles[2]
    if parts and re.fullmatch(r"[NT]{2,3}", parts[-1]):
        k.layout = parts[-1]
    if "h" in parts:
        k.dtypes.append("float16/bfloat16 (h)")
    elif "s" in parts:
        k.dtypes.append("float32 (s)")
    if any(p.startswith("coop") for p in parts):
        k.notes.append("cooperative (2-CTA) schedule")
    if "bz" in parts:
        k.notes.append("batched (bz)")
    k.notes.append("tile = CTA M x N x K-slice, then pipeline stages; cluster = thread-block cluster shape")


def _decode_xmma(name: str, k: KernelInfo) -> None:
    # sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_...
    k.family, k.library = "xmma", "cuBLAS / cuDNN (xmma)"
    m = re.match(r"(sm\d+a?)_xmma_(\w+?)_", name)
    if m:
        k.arch = "sm_" + m.group(1)[2:]
    kind = "gemm" if "_gemm_" in name else "fprop" if "fprop" in name else "dgrad" if "dgrad" in name else \
        "wgrad" if "wgrad" in name else None
    k.op = kind
    k.category = "matrix"
    if kind in ("fprop", "dgrad", "wgrad"):
        k.library = "cuDNN (xmma convolution)"
    t = r"(?:bf16|f16|f32|tf32|f64|e4m3|e5m2|s8|i8|s32)"
    dm = re.search(rf"_({t}{{2,}})_({t}{{1,}})_((?:bf16|f16|f32|tf32|f64|s32){{1,2}})_", name)
    if dm:
        k.dtypes = _dtype_list("".join(dm.groups()))
        k.notes.append("types: A/B inputs, C/D, then accumulator/compute")
    lm = re.search(r"_(nn|nt|tn|tt)_(n|t)_", name)
    if lm:
        k.layout = lm.group(1)
    tm = re.search(r"tilesize(\d+x\d+x\d+)", name)
    if tm:
        k.tile = tm.group(1)
    sm = re.search(r"stage(\d+)", name)
    if sm:
        k.stages = int(sm.group(1))
    wm = re.search(r"warp(?:group)?size(\d+x\d+x\d+)", name)
    if wm:
        k.warps = wm.group(1)
    if "_ffma_" in name or name.endswith("_ffma") or "_ff_" in name:
        k.tensor_cores = False
        k.notes.append("FFMA: plain fp32 fused multiply-adds on CUDA cores, no tensor cores")
    elif re.search(r"hmma|imma|tensorop|wgmma|warpgroup|_tf32|bf16|f16", name):
        k.tensor_cores = True
    if "split_k" in name:
        k.notes.append("split-K: K is split across CTAs and the partial sums reduced")


def _decode_cutlass(name: str, k: KernelInfo) -> None:
    # cutlass_80_tensorop_s1688gemm_f16_256x128_32x3_nn_align8, cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_...
    k.family, k.library, k.category = "cutlass", "CUTLASS", "matrix"
    m = re.search(r"cutlass(?:3x)?_(?:sm)?(\d{2,3}a?)_", name)
    if m:
        k.arch = "sm_" + m.group(1)
    k.tensor_cores = "tensorop" in name or "wmma" in name or "wgmma" in name
    im = re.search(r"_([hsdic])(\d{3,4})gemm", name)
    if im:
        shape = im.group(2)
        k.op = f"mma instruction {shape[:2]}x{shape[2]}x{shape[3:]}" if len(shape) >= 4 else None
        k.dtypes.append(_DTYPES.get(im.group(1), im.group(1)))
    k.dtypes += _dtype_list(name.split("gemm", 1)[-1])
    tm = re.search(r"_(\d+x\d+)_(\d+)x(\d+)_", name)
    if tm:
        k.tile = f"{tm.group(1)}x{tm.group(2)}"
        k.stages = int(tm.group(3))
    lm = re.search(r"_(nn|nt|tn|tt)_", name)
    if lm:
        k.layout = lm.group(1)


def _decode_legacy_cublas(name: str, k: KernelInfo) -> None:
    # ampere_sgemm_128x64_nn, volta_h884gemm_64x64_ldg8_nn, ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn
    k.family, k.library, k.category = "cublas-legacy", "cuBLAS", "matrix"
    gen = name.split("_")[0]
    k.arch = {"maxwell": "sm_50", "pascal": "sm_60", "volta": "sm_70", "turing": "sm_75", "ampere": "sm_80",
              "ada": "sm_89", "hopper": "sm_90"}.get(gen)
    gm = re.search(r"_([hsdcz]|bf16_s|s)(\d*)gemm", name)
    k.tensor_cores = bool(re.search(r"\d{3,5}gemm", name))
    if "sgemm" in name:
        k.dtypes.append("float32")
    k.dtypes += _dtype_list(name)
    if gm and not k.dtypes:
        k.dtypes.append(_DTYPES.get(gm.group(1), gm.group(1)))
    tm = re.search(r"_(\d+x\d+)", name)
    if tm:
        k.tile = tm.group(1)
    lm = re.search(r"_(nn|nt|tn|tt)$", name)
    if lm:
        k.layout = lm.group(1)


_ATEN_FUNCTOR = [
    (re.compile(r"(\w+?)_kernel_cuda\("), lambda m: m.group(1)),
    (re.compile(r"(\w+)CUDAKernelImpl"), lambda m: m.group(1).lower()),
    (re.compile(r"binary_internal::(\w+?)Functor"), lambda m: m.group(1).lower()),
    (re.compile(r"CUDAFunctor(?:OnSelf)?_(\w+?)<"), lambda m: m.group(1)),
    (re.compile(r"(?:<unnamed>::)?(\w+?)Functor<"), lambda m: m.group(1)),
    (re.compile(r"(\w+?)_tensor_scalar_kernel"), lambda m: m.group(1)),
    (re.compile(r"launch_(\w+?)_(?:scalar|kernel)"), lambda m: m.group(1)),
    (re.compile(r"(\w+?)_functor<"), lambda m: m.group(1)),
    (re.compile(r"(Max|Min|Mean|Norm|WelfordOps|ArgMax|ArgMin)Ops<"), lambda m: m.group(1).lower()),
    (re.compile(r"(and|or)_kernel_cuda"), lambda m: m.group(1)),
]


def _decode_aten(name: str, k: KernelInfo) -> None:
    k.family, k.library = "aten", "PyTorch (ATen)"
    base = strip_templates(name.split("(", 1)[0]).replace("void ", "").strip()
    template = base.split("::")[-1]
    k.op = template
    vm = re.search(r"vectorized_elementwise_kernel<\(?int\)?\s*(\d+)", name)
    if vm:
        k.vector_width = int(vm.group(1))
    fm = re.search(r"elementwise_kernel<\(int\)(\d+), \(int\)(\d+)", name)
    if fm:
        k.notes.append(f"{fm.group(1)} threads per block, {fm.group(2)} elements per thread (non-contiguous or "
                       "mixed-type inputs take this path)")
    inner = name[name.find("<") + 1:] if "<" in name else ""
    functor = None
    wrappers = {"AUnary", "BUnary", "Unary", "Binary", "CUDAFunctor", "CUDAFunctorOnSelf"}
    named = [m.group(1) for m in re.finditer(r"(?:::|<|\s)(\w+?)Functor\b", inner) if m.group(1) not in wrappers]
    if named:
        functor = named[-1]
    for rx, get in _ATEN_FUNCTOR:
        m = rx.search(inner)
        if functor is None and m:
            functor = get(m)
            break
    if "elementwise_kernel" in template:
        k.category = "elementwise"
        if functor:
            k.op = f"{template}: {functor}"
            if functor in ("Fill", "fill"):
                k.category = "memory"
        if "distribution_" in template:
            k.op = f"{template}: random numbers"
    elif "reduce_kernel" in template:
        k.category = "reduction"
        k.op = f"reduce_kernel: {functor or 'reduction'}"
        bm = re.search(r"reduce_kernel<\(int\)(\d+), \(int\)(\d+)", name)
        if bm:
            k.notes.append(f"{bm.group(1)} threads per block, {bm.group(2)} outputs per thread")
    else:
        k.category = kernel_category(template)
    tm = re.search(r"<(float|double|c10::Half|c10::BFloat16|__half|__nv_bfloat16|bool|int|long)\b", name)
    if tm:
        k.dtypes.append({"c10::Half": "float16", "__half": "float16", "c10::BFloat16": "bfloat16",
                         "__nv_bfloat16": "bfloat16", "double": "float64", "long": "int64", "int": "int32",
                         "float": "float32"}.get(tm.group(1), tm.group(1)))


def _decode_triton(name: str, k: KernelInfo) -> None:
    m = re.match(r"triton_(poi|red|per|tem|for)_(fused_)?(\w+?)(?:_\d+)?$", name)
    k.family, k.library = "inductor", "torch.compile (Inductor, Triton)"
    kind = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template (GEMM/conv)",
            "for": "foreach"}[m.group(1)] if m else None
    ops = m.group(3).split("_") if m else []
    k.op = f"{kind}: {' '.join(ops)}" if kind else None
    k.category = {"pointwise": "elementwise", "reduction": "reduction", "persistent reduction": "reduction",
                  "template (GEMM/conv)": "matrix", "foreach": "elementwise"}.get(kind or "", "other")
    if m and m.group(2):
        k.notes.append(f"fused: {len(ops)} op(s) in one kernel")


def decode(name: str) -> KernelInfo:
    """What a kernel's (demangled) name tells about it; see the module doc."""
    k = KernelInfo(name=name)
    # Kineto spells anonymous namespaces "(anonymous namespace)", nsys "<unnamed>"
    plain = name.strip().replace("(anonymous namespace)", "<unnamed>")
    if plain.startswith("nvjet_"):
        _decode_nvjet(plain, k)
    elif re.match(r"sm\d+a?_xmma_", plain):
        _decode_xmma(plain, k)
    elif "cutlass" in plain and ("gemm" in plain.lower() or "tensorop" in plain):
        _decode_cutlass(plain, k)
    elif re.match(r"(maxwell|pascal|volta|turing|ampere|ada|hopper)_\w*gemm", plain):
        _decode_legacy_cublas(plain, k)
    elif re.match(r"triton_(poi|red|per|tem|for)_", plain):
        _decode_triton(plain, k)
    elif "flash" in plain.lower() or "fmha" in plain:
        lib = "cuDNN (fused SDPA)" if "cudnn" in plain else "FlashAttention / memory-efficient SDPA"
        k.family, k.library, k.category, k.tensor_cores = "flash-attn", lib, "attention", True
        am = re.search(r"sm(\d{2,3})", plain)
        k.arch = f"sm_{am.group(1)}" if am else None
        tm = re.search(r"Flash_fwd_kernel_traits<\(int\)(\d+), \(int\)(\d+), \(int\)(\d+), \(int\)(\d+)", plain)
        if tm:
            k.notes.append(f"head dim {tm.group(1)}, block M {tm.group(2)}, block N {tm.group(3)}, {tm.group(4)} warps")
            k.tile = f"{tm.group(2)}x{tm.group(3)}"
        k.op = "fused attention"
    elif "cudnn" in plain.lower():
        k.family, k.library = "cudnn", "cuDNN"
        k.category = kernel_category(plain)
    elif "at::native" in plain or plain.startswith("void at::") or "at::" in plain.split("(")[0]:
        _decode_aten(plain, k)
    elif re.fullmatch(r"_?\w+_kernel", plain) or re.fullmatch(r"_\w+", plain):
        k.family, k.library = "triton", "Triton (user kernel) or a plain CUDA kernel"
        k.category = kernel_category(plain)
        k.op = plain.lstrip("_").removesuffix("_kernel")
        if k.category == "other" or k.category == "elementwise":
            k.category = _category_from_words(k.op)
    else:
        k.family, k.library = "user", "user CUDA"
        base = strip_templates(plain.split("(", 1)[0]).replace("void ", "").strip()
        k.op = base.split("::")[-1]
        fm = re.search(r"::(\w+?)Op>", plain)
        if fm:
            k.op = f"{k.op}: {fm.group(1)}"
        k.category = _category_from_words(k.op)
        tm = re.search(r"<(float|double|__half|__nv_bfloat16|half)\b", plain)
        if tm:
            k.dtypes.append({"__half": "float16", "half": "float16", "__nv_bfloat16": "bfloat16", "double": "float64",
                             "float": "float32"}[tm.group(1)])
    if not k.arch:
        am = re.match(r"sm(\d{2,3})_", plain)
        if am:
            k.arch = f"sm_{am.group(1)}"
    return k


def _category_from_words(op: str) -> str:
    op = op.lower()
    for words, cat in ((("matmul", "gemm", "mm", "cdist", "conv"), "matrix"), (("softmax", "attn", "attention"),
                       "attention"), (("norm",), "normalization"), (("gelu", "relu", "silu", "tanh", "sigmoid"),
                       "activation"), (("sum", "reduce", "max", "mean"), "reduction"), (("copy", "fill", "cat"),
                       "memory"), (("add", "mul", "square", "scale", "sub", "div", "pow", "exp"), "elementwise")):
        if any(w in op for w in words):
            return cat
    return kernel_category(op)


def decode_frame(names: Any) -> Any:
    """A DataFrame (one row per name): family, category, arch, tensor_cores, dtypes, tile, op."""
    import pandas as pd

    rows = []
    for n in names:
        k = decode(n)
        rows.append({"name": n, "family": k.family, "category": k.category, "arch": k.arch,
                     "tensor_cores": k.tensor_cores, "dtypes": "/".join(dict.fromkeys(k.dtypes)) or None,
                     "tile": k.tile, "op": k.op, "decoded": k.summary()})
    return pd.DataFrame(rows)
