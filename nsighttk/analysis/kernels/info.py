"""What a decoded kernel name holds (:class:`KernelInfo`) and the small C++ name helpers the
decoders share: one spelling for the two demanglers (nsys/ncu write ``(int)4``, ``<unnamed>``,
``[lambda(float) (instance 1)]``; torch.profiler writes ``4``, ``(anonymous namespace)``,
``{lambda(float)#1}``), top-level template arguments, and data-type names."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

#: Coarse kind of work, from the category: what an overlap or a utilisation analysis asks.
KINDS = ("communication", "memory", "compute")


@dataclass
class KernelInfo:
    """What a kernel's name says.  Fields the name does not say stay empty (None / [])."""

    name: str
    family: str = "unknown"  # nvjet, xmma, cutlass, cudnn, cublas, aten, triton, inductor, flash-attn, communication,
    # user
    library: str = ""
    category: str = "other"  # matrix, attention, normalization, ..., memory, communication (nsighttk/data/ops.json)
    arch: str | None = None
    tensor_cores: bool | None = None
    dtypes: list[str] = field(default_factory=list)  # input type first; more when the name says more
    layout: str | None = None  # operand layouts, e.g. "tn" (A transposed, B not) / "NNT"
    tile: str | None = None  # CTA tile, M x N (x K)
    stages: int | None = None
    cluster: str | None = None
    warps: str | None = None
    op: str | None = None  # "template: functor" (kept for the tables that show it)
    template: str | None = None  # the kernel template or entry point: vectorized_elementwise_kernel, reduce_kernel
    functor: str | None = None  # what it computes: direct_copy, mul, fused_adamw, AllReduce, gemm
    vector_width: int | None = None
    collective: str | None = None  # NCCL: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv
    algorithm: str | None = None  # NCCL: RING, TREE, NVLS, COLLNET_DIRECT, ...
    protocol: str | None = None  # NCCL: LL, LL128, SIMPLE
    redop: str | None = None  # NCCL / NVSHMEM reduction: Sum, Prod, MinMax, PreMulSum, SumPostDiv
    notes: list[str] = field(default_factory=list)
    #: (priority, text) pieces of the short label, in reading order; higher priority is kept longer.
    tokens: list[tuple[int, str]] = field(default_factory=list, repr=False)

    @property
    def kind(self) -> str:
        """``communication``, ``memory`` (copies, fills, layout changes) or ``compute``."""
        if self.category == "communication":
            return "communication"
        return "memory" if self.category == "memory" else "compute"

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if v not in (None, [], "") and k != "tokens"}
        d["kind"] = self.kind
        return d

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
    """The category ``nsighttk/data/ops.json``'s kernel patterns give ``name`` (``other`` if none)."""
    for rx, cat in _kernel_patterns():
        if rx.search(name):
            return cat
    return "other"


def category_from_words(op: str) -> str:
    """A category from the words of an op or kernel name (``matmul`` -> matrix, ``copy`` -> memory)."""
    low = op.lower()
    for words, cat in ((("matmul", "gemm", "gemv", "mm", "cdist", "conv"), "matrix"),
                       (("softmax", "attn", "attention"), "attention"), (("norm",), "normalization"),
                       (("gelu", "relu", "silu", "tanh", "sigmoid", "threshold", "elu", "softplus", "mish"),
                        "activation"),
                       (("copy", "fill", "cat", "transpose", "permute"), "memory"),
                       (("sum", "reduce", "max", "mean", "min", "argmax"), "reduction"),
                       (("add", "mul", "square", "scale", "sub", "div", "pow", "exp"), "elementwise")):
        if any(w in low for w in words):
            return cat
    return kernel_category(op)


# ------------------------------------------------------------------------------------------------- data types

#: C++ / library spellings -> one name (torch's, without the ``torch.`` prefix).
_CXX_DTYPES = {
    "float": "float32", "double": "float64", "c10::Half": "float16", "__half": "float16", "half": "float16",
    "cutlass::half_t": "float16", "at::Half": "float16", "c10::BFloat16": "bfloat16", "__nv_bfloat16": "bfloat16",
    "cutlass::bfloat16_t": "bfloat16", "at::BFloat16": "bfloat16", "bfloat16_t": "bfloat16", "bool": "bool",
    "signed char": "int8", "int8_t": "int8", "char": "int8", "unsigned char": "uint8", "uint8_t": "uint8",
    "short": "int16", "int16_t": "int16", "int": "int32", "int32_t": "int32", "unsigned int": "uint32",
    "uint32_t": "uint32", "long": "int64", "long long": "int64", "int64_t": "int64", "unsigned long": "uint64",
    "uint64_t": "uint64", "c10::complex<float>": "complex64", "c10::complex<double>": "complex128",
    "c10::Float8_e4m3fn": "float8_e4m3fn", "c10::Float8_e5m2": "float8_e5m2", "__nv_fp8_e4m3": "float8_e4m3fn",
    "__nv_fp8_e5m2": "float8_e5m2", "cutlass::float_e4m3_t": "float8_e4m3fn", "cutlass::float_e5m2_t": "float8_e5m2",
    "float2": "complex64",
}
#: Library type codes (NCCL, xmma, cutlass, cuDNN): f16, bf16, f32, tf32, ...
_CODE_DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "tf32": "tf32", "f64": "float64", "e4m3": "float8_e4m3fn",
    "e5m2": "float8_e5m2", "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "s8": "int8", "i8": "int8",
    "u8": "uint8", "s32": "int32", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64", "fp16": "float16",
    "fp32": "float32", "fp8": "float8", "int8_t": "int8", "uint8_t": "uint8", "int32_t": "int32",
    "uint32_t": "uint32", "int64_t": "int64", "uint64_t": "uint64", "float": "float32", "half": "float16",
    "double": "float64", "__nv_bfloat16": "bfloat16", "bfloat16": "bfloat16", "float16": "float16",
    "float32": "float32",
}
#: Long name -> the short one labels use.
SHORT_DTYPES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "tf32": "tf32", "bool": "bool",
    "int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32", "uint32": "u32", "int64": "i64", "uint64": "u64",
    "complex64": "c64", "complex128": "c128", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2", "float8": "fp8",
}


def cxx_dtype(token: str) -> str | None:
    """``c10::BFloat16`` -> ``bfloat16``; ``OpaqueType<4>`` -> ``4-byte``; None for non-types."""
    t = token.strip().removeprefix("const ").removesuffix(" const").strip()
    t = re.sub(r"^(?:at::native::)?(?:detail::)?", "", t) if "OpaqueType" in t else t
    if t in _CXX_DTYPES:
        return _CXX_DTYPES[t]
    m = re.fullmatch(r"(?:\w+::)*OpaqueType<(\d+)u?>", t)
    if m:
        return f"{m.group(1)}-byte"
    return None


def code_dtype(code: str) -> str | None:
    """A library's type code (``bf16``, ``f32``, ``int8_t``) -> the dtype name, else None."""
    return _CODE_DTYPES.get(code)


def short_dtype(dtype: str) -> str:
    return SHORT_DTYPES.get(dtype, dtype)


# ------------------------------------------------------------------------------------------------- C++ names


def normalize(name: str) -> str:
    """One spelling for both demanglers, for parsing only (the original name is kept elsewhere):
    anonymous namespaces dropped, lambdas as ``lambda(T)``, ``(int)4`` -> ``4``, ``(bool)0`` -> ``false``,
    ``3ul`` -> ``3``, no blanks before ``*``, ``&`` or ``>``."""
    s = name.strip()
    s = s.replace("(anonymous namespace)::", "").replace("<unnamed>::", "").replace("operator ()", "operator()")
    s = re.sub(r"\{lambda\(([^(){}]*)\)#\d+\}", r"lambda(\1)", s)
    s = re.sub(r"\[lambda\(([^()\[\]]*)\) \(instance \d+\)\]", r"lambda(\1)", s)
    s = re.sub(r"\(bool\)0\b", "false", s)
    s = re.sub(r"\(bool\)1\b", "true", s)
    s = re.sub(r"\((?:unsigned )?(?:int|long|long long|short|char)\)(-?\d+)", r"\1", s)
    s = re.sub(r"\b(\d+)u?l{0,2}\b", r"\1", s)
    s = re.sub(r"\s+([*&>])", r"\1", s)
    s = re.sub(r"\s+", " ", s)
    return s


_CLOSE = {"<": ">", "(": ")", "[": "]", "{": "}"}


def split_args(s: str) -> list[str]:
    """Top-level comma-separated items of ``s`` (brackets of every kind respected)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur and "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _match(s: str, i: int) -> int:
    """Index just past the bracket that closes the one at ``s[i]`` (len(s) if unbalanced)."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] in "<([{":
            depth += 1
        elif s[j] in ">)]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(s)


@dataclass
class CxxName:
    """A kernel's (normalised) C++ name taken apart: ``void ns::f<A, B>(params)``."""

    qualname: str  # ns::f
    base: str  # f
    args: list[str]  # [A, B]
    params: str  # params
    text: str  # the whole normalised name


@functools.lru_cache(maxsize=8192)
def parse(name: str) -> CxxName:
    """``name`` taken apart (cached: decoders of one name parse it more than once; do not modify the result)."""
    s = normalize(name)
    # the parameter list: the first "(" outside template brackets that follows an identifier or ">"
    depth, params_at = 0, -1
    for i, ch in enumerate(s):
        if ch == "(" and depth == 0:
            prev = s[:i].rstrip()
            if prev and (prev[-1].isalnum() or prev[-1] in "_>"):
                params_at = i
                break
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
    head = s[:params_at] if params_at >= 0 else s
    params = s[params_at + 1:_match(s, params_at) - 1] if params_at >= 0 else ""
    # the function is the last blank-separated word of head at depth 0 (drops "void", return types)
    depth, word_start = 0, 0
    for i, ch in enumerate(head):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        elif ch == " " and depth == 0:
            word_start = i + 1
    func = head[word_start:]
    lt = func.find("<")
    qual, args = (func, []) if lt < 0 else (func[:lt], split_args(func[lt + 1:_match(func, lt) - 1]))
    return CxxName(qualname=qual, base=qual.split("::")[-1], args=args, params=params, text=s)


def type_args(args: list[str]) -> list[str]:
    """The dtype names among template arguments, in order."""
    return [d for d in (cxx_dtype(a) for a in args) if d]


def value_args(args: list[str]) -> list[str]:
    """Template arguments that are numbers or booleans (tile sizes, flags), as written."""
    return [a for a in args if re.fullmatch(r"-?\d+|true|false", a)]


def values_token(args: list[str]) -> str:
    """The number and flag template arguments in one short piece: ``128,16,T,F``."""
    return ",".join({"true": "T", "false": "F"}.get(a, a) for a in value_args(args))


_FLOATING = ("float", "bfloat", "tf32", "complex")


def data_type(types: list[str]) -> list[str]:
    """The element type among several (kernels often take an index type first): the first
    floating-point one, else the first."""
    floats = [t for t in types if t.startswith(_FLOATING)]
    return floats[:1] or types[:1]
