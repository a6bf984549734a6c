"""Run one recorded ATen op again: what the workloads ``nsighttk repro`` writes are made of.

:func:`resolve` matches recorded arguments (dicts: ``kind`` ``tensor`` / ``scalar`` / ``list`` /
``tensorlist`` / ``unknown``, with ``shape`` (``shapes`` for a list), ``dtype``, ``strides``,
``value``, ``device``, ``pinned``; see :class:`nsighttk.analysis.torch_shapes.Arg`) against the
op's schemas in this PyTorch and returns the call to write (:class:`Call`), or raises
:class:`ReplayError` saying which argument cannot be recovered.  An argument the trace left out
takes ``None`` where the schema allows it, else the schema's default (named in
:attr:`Call.assumed`).  :func:`tensor` makes an input of a recorded shape, dtype and strides
(integer tensors get values below :func:`index_bound`, so that indices stay in range); a tensor
recorded in host memory (``device: "cpu"``) stays there, pinned where recorded so, whatever the
workload's device: the op then moves the same bytes between host and device as in the trace.

A workload's inputs are flat (each a tensor: :func:`inputs`); :func:`grouped` gives a tensor list
back its tensors, and an op that returns nothing (an in-place optimizer step) is checked on the
first argument it writes (:attr:`Call.writes`).  Arguments a schema names as optimizer state get
values the op is defined on (:data:`VALUES`: step counts from 1, non-negative second moments).

Ops that only run on a GPU (the fused attention kernels) have a portable equivalent here
(:data:`EQUIVALENTS`), used for the float64 reference and as a variant off the GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: torch dtype names the reproducers use, to torch attributes
_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
           "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64")
FLOATING = ("float32", "float64", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


class ReplayError(ValueError):
    """The recorded arguments fit none of the op's schemas (the message says why)."""


@dataclass
class Param:
    """One argument of the call: ``tensor`` (the index of the input tensor) or ``literal``."""

    name: str
    kwarg_only: bool
    tensor: int | None = None
    literal: Any = None


@dataclass
class Call:
    op: str  # "aten::addmm"
    overload: str  # "default"
    params: list[Param]
    assumed: list[str] = field(default_factory=list)  # arguments the trace did not record
    writes: list[int] = field(default_factory=list)  # the tensor arguments (Param.tensor) the op writes
    returns: int = 1  # how many results the schema declares

    @property
    def in_place(self) -> bool:
        return bool(self.writes)

    @property
    def target(self) -> str:
        namespace, name = self.op.split("::", 1)
        return f"torch.ops.{namespace}.{name}.{self.overload}"


def _base(type_text: str) -> tuple[str, bool]:
    if type_text.startswith("Optional[") and type_text.endswith("]"):
        return type_text[9:-1], True
    return type_text, False


_SCALARS = {"number", "int", "float", "bool", "SymInt", "Scalar", "SymFloat", "SymBool"}


def _fit(schema: Any, args: list[dict[str, Any]]) -> tuple[list[Param], list[str], list[int]] | str:
    """The parameters for this schema, or why the arguments do not fit it."""
    formal = list(schema.arguments)
    if any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in formal):
        return "an out= overload"
    if len(args) > len(formal):
        lists = [f.name for f in formal if _base(str(f.type))[0] in ("List[Tensor]", "List[Optional[Tensor]]")]
        why = (f" (a list of tensors, {lists[0]}, recorded as one size per tensor, as NVTX ranges do, with "
               "nothing saying where the list ends)" if lists and not any(a.get("kind") == "tensorlist" for a in args)
               else "")
        return f"{len(args)} arguments recorded, the schema has {len(formal)}{why}"
    params, assumed, writes, n_tensor = [], [], [], 0
    for i, f in enumerate(formal):
        if args[i:i + 1] and args[i].get("kind") in ("tensor", "tensorlist") and f.alias_info is not None \
                and f.alias_info.is_write:
            writes.append(n_tensor)
        a = args[i] if i < len(args) else {"kind": "unknown"}
        base, optional = _base(str(f.type))
        kind = a.get("kind")
        if kind == "tensor":
            if base != "Tensor":
                return f"argument {i} ({f.name}: {f.type}) was recorded as a tensor"
            params.append(Param(f.name, f.kwarg_only, tensor=n_tensor))
            n_tensor += 1
        elif kind == "scalar":
            if base not in _SCALARS:
                return f"argument {i} ({f.name}: {f.type}) was recorded as the scalar {a.get('value')!r}"
            value = a.get("value")
            if base == "bool" and isinstance(value, int) and not isinstance(value, bool):
                value = bool(value)
            if base in ("int", "SymInt") and isinstance(value, float):
                if not value.is_integer():
                    return f"argument {i} ({f.name}: {f.type}) was recorded as {value!r}"
                value = int(value)
            params.append(Param(f.name, f.kwarg_only, literal=value))
        elif kind == "list":
            if (not base.startswith("List[") and not base.endswith("[]")) or "Tensor" in base:  # numbers only
                return f"argument {i} ({f.name}: {f.type}) was recorded as the list {a.get('value')!r}"
            params.append(Param(f.name, f.kwarg_only, literal=list(a.get("value") or [])))
        elif kind == "tensorlist":
            if base not in ("List[Tensor]", "List[Optional[Tensor]]"):
                return f"argument {i} ({f.name}: {f.type}) was recorded as a list of tensors"
            if a.get("shapes") is None:
                return f"argument {i} ({f.name}) is a list of tensors whose shapes the trace did not keep"
            params.append(Param(f.name, f.kwarg_only, tensor=n_tensor))
            n_tensor += 1
        else:  # nothing recorded
            if optional and (not f.has_default_value() or f.default_value is None):
                params.append(Param(f.name, f.kwarg_only, literal=None))
            elif f.has_default_value():
                params.append(Param(f.name, f.kwarg_only, literal=f.default_value))
                assumed.append(f"{f.name}={f.default_value!r} (not recorded: the schema's default)")
            elif base == "Tensor" and i < len(args):
                return f"argument {i} ({f.name}: Tensor) was not recorded"
            else:
                return f"argument {i} ({f.name}: {f.type}) was not recorded and has no default"
    return params, assumed, writes


def resolve(op: str, args: list[dict[str, Any]]) -> Call:
    """The overload of ``op`` (``aten::addmm``) the recorded ``args`` fit (see the module doc)."""
    import torch

    if "::" not in op:
        raise ReplayError(f"{op} is not an operator of a PyTorch library (no namespace::name)")
    namespace, name = op.split("::", 1)
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        overloads = list(packet.overloads())
    except (AttributeError, RuntimeError):
        raise ReplayError(f"PyTorch {torch.__version__} has no operator {op}") from None
    why = []
    best: Call | None = None
    for o in sorted(overloads, key=lambda x: (x != "default", x)):
        schema = getattr(packet, o)._schema
        fit = _fit(schema, args)
        if isinstance(fit, str):
            why.append(f"{o}: {fit}")
            continue
        call = Call(op, o, fit[0], fit[1], fit[2], len(schema.returns))
        if best is None or len(call.assumed) < len(best.assumed):
            best = call
    if best is None:
        reasons = [w for w in why if "out= overload" not in w] or why
        raise ReplayError(f"the recorded arguments fit no schema of {op} ({'; '.join(reasons[:2])})")
    return best


def dtype(name: str) -> Any:
    import torch

    if name not in _DTYPES or not hasattr(torch, name):
        raise ReplayError(f"dtype {name} is not available in this PyTorch")
    return getattr(torch, name)


def index_bound(args: list[dict[str, Any]], op: str = "") -> int:
    """Integer inputs take values in ``[0, bound)``: for an embedding the rows of its table (the
    weight's first dimension, or ``num_weights`` of its backward), else the smallest dimension of
    the floating inputs (an index then stays in range of the tensor it indexes: gather, losses)."""
    if op == "aten::embedding" and args and args[0].get("shape"):
        return max(1, int(args[0]["shape"][0]))
    if op == "aten::embedding_dense_backward" and len(args) > 2 and isinstance(args[2].get("value"), int):
        return max(1, int(args[2]["value"]))
    dims = [d for a in args if a.get("kind") == "tensor" and a.get("dtype") in FLOATING for d in a.get("shape") or []
            if d > 0]
    return min(dims) if dims else 2


def tensor(shape: list[int], dtype_name: str, strides: list[int] | None, device: str, seed: int,
           bound: int = 2, non_negative: bool = False, counts: bool = False, pinned: bool = False) -> Any:
    """A tensor of the recorded shape, dtype and strides (on a storage just large enough; strides
    of 0, a broadcast, included): standard normal values (their absolute values with
    ``non_negative``; whole numbers from 1 to ``bound`` with ``counts``), integers in ``[0,
    bound)``, or random booleans; in pinned host memory with ``pinned`` (where a GPU is)."""
    import torch

    dt = dtype(dtype_name)
    g = torch.Generator(device="cpu").manual_seed(seed)
    if strides is None or len(strides) != len(shape):
        strides = list(torch.empty(shape, device="meta").stride())
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) if all(shape) else 0
    if counts:
        flat = torch.randint(1, max(1, bound) + 1, (span,), generator=g)
    elif dt.is_floating_point or dt.is_complex:
        flat = torch.randn(span, generator=g, dtype=torch.float64 if not dt.is_complex else torch.complex128)
        flat = flat.abs() if non_negative and not dt.is_complex else flat
    elif dt == torch.bool:
        flat = torch.rand(span, generator=g) < 0.5
    else:
        flat = torch.randint(0, max(1, bound), (span,), generator=g)
    flat = flat.to(dt).to(device)
    if pinned and device == "cpu" and torch.cuda.is_available():
        flat = flat.pin_memory()
    return flat.as_strided(shape, strides)


#: ops defined on non-negative inputs only: their floating inputs are made non-negative
NON_NEGATIVE = frozenset(f"aten::{name}{suffix}" for name in ("sqrt", "rsqrt", "log", "log2", "log10", "_foreach_sqrt",
                                                              "_foreach_log", "acosh")
                         for suffix in ("", "_"))


#: ops whose result is random: a reproducer checks only that their output is finite
RANDOM = frozenset(f"aten::{name}" for name in ("normal_", "uniform_", "bernoulli", "bernoulli_", "random_",
                                                "exponential_", "multinomial", "native_dropout", "dropout",
                                                "rand_like", "randn_like", "randint_like", "randperm", "rand",
                                                "randn", "normal", "poisson"))


#: schema argument names -> the values their tensors take (see :func:`tensor`): optimizer state
#: that is only meaningful so (a step count of 0 divides by zero in Adam's bias correction, a
#: negative second moment has no square root)
VALUES = {"state_steps": "counts", "step": "counts", "exp_avg_sqs": "non_negative",
          "max_exp_avg_sqs": "non_negative", "exp_avg_sq": "non_negative", "max_exp_avg_sq": "non_negative"}

#: the largest step count :data:`VALUES` gives an optimizer's step tensors
MAX_STEP = 1000


def _flat(args: list[dict[str, Any]]) -> list[tuple[int, int | None, dict[str, Any]]]:
    """(argument index, position in its list or None, the argument) of each input tensor, in order."""
    out: list[tuple[int, int | None, dict[str, Any]]] = []
    for i, a in enumerate(args):
        if a.get("kind") == "tensor":
            out.append((i, None, a))
        elif a.get("kind") == "tensorlist":
            out += [(i, j, a) for j in range(len(a.get("shapes") or []))]
    return out


def inputs(args: list[dict[str, Any]], device: str, op: str = "") -> tuple[Any, ...]:
    """The recorded tensors of ``args``, in order, a list's one after another, made by
    :func:`tensor`: non-negative for the ops of :data:`NON_NEGATIVE` and for the arguments
    :data:`VALUES` marks (``"values"`` in ``args``), in host memory where recorded there."""
    bound = index_bound(args, op)
    out = []
    for i, j, a in _flat(args):
        values = a.get("values")
        shape = a["shape"] if j is None else a["shapes"][j]
        strides = a.get("strides") if j is None else (a.get("strides") or [None] * (j + 1))[j]
        host = a.get("device") == "cpu"
        out.append(tensor(shape, a.get("dtype") or "float32", strides, "cpu" if host else device,
                          seed=i if j is None else 1000 * (i + 1) + j,
                          bound=MAX_STEP if values == "counts" else bound,
                          non_negative=op in NON_NEGATIVE or values == "non_negative", counts=values == "counts",
                          pinned=host and bool(a.get("pinned")) and device != "cpu"))
    return tuple(out)


def grouped(xs: tuple[Any, ...], args: list[dict[str, Any]]) -> list[Any]:
    """The flat inputs ``xs`` (:func:`inputs`) as the op takes them: one entry per tensor
    argument, a list of tensors per tensor list."""
    out: list[Any] = []
    k = 0
    for a in args:
        if a.get("kind") == "tensor":
            out.append(xs[k])
            k += 1
        elif a.get("kind") == "tensorlist":
            n = len(a.get("shapes") or [])
            out.append(list(xs[k:k + n]))
            k += n
    return out


def as_recorded(xs: tuple[Any, ...], args: list[dict[str, Any]]) -> tuple[Any, ...]:
    """Float64 copies of the inputs (what a workload's reference gets) with integer and bool tensors
    given back their recorded dtype."""
    dts = [a.get("dtype") or "float32" for _, _, a in _flat(args)]
    return tuple(x if d in FLOATING or x.dtype == dtype(d) else x.to(dtype(d)) for x, d in zip(xs, dts, strict=True))


def first_tensor(out: Any) -> Any:
    """The output a reproducer is checked on: the op's result (a tensor, or a list of tensors for
    an op returning one), or its first."""
    if isinstance(out, list) and out and all(hasattr(o, "detach") for o in out):
        return out
    if isinstance(out, (tuple, list)):
        for o in out:
            if hasattr(o, "detach") or isinstance(o, list):
                return first_tensor(o)
    return out


def nbytes(args: list[dict[str, Any]]) -> int:
    """Bytes of the recorded tensors (what one call reads at least)."""
    return sum(dtype(a.get("dtype") or "float32").itemsize *
               math.prod(a["shape"] if j is None else a["shapes"][j]) for _, j, a in _flat(args))


# ------------------------------------------------------------------ portable equivalents

def _efficient_attention_forward(q: Any, k: Any, v: Any, **kw: Any) -> Any:
    """``aten::_efficient_attention_forward`` (inputs [batch, seq, heads, dim]) without a GPU:
    the math of scaled dot-product attention, transposed back."""
    import torch

    out = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                           is_causal=kw.get("custom_mask_type") == 1,
                                                           scale=kw.get("scale"))
    return out.transpose(1, 2)


def _sdpa_fused(q: Any, k: Any, v: Any, **kw: Any) -> Any:
    """``aten::_scaled_dot_product_{efficient,flash,cudnn}_attention`` and
    ``aten::_cudnn_attention_forward`` (inputs [batch, heads, seq, dim]) without a GPU."""
    import torch

    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(kw.get("is_causal", False)),
                                                            scale=kw.get("scale"))


#: GPU-only ops -> a function of the same inputs (query, key, value; the other arguments by name)
#: computing the op's first output
EQUIVALENTS = {"aten::_efficient_attention_forward": _efficient_attention_forward,
               "aten::_scaled_dot_product_efficient_attention": _sdpa_fused,
               "aten::_scaled_dot_product_flash_attention": _sdpa_fused,
               "aten::_scaled_dot_product_cudnn_attention": _sdpa_fused,
               "aten::_cudnn_attention_forward": _sdpa_fused}


def has_equivalent(op: str, n_tensors: int, literals: dict[str, Any]) -> bool:
    """Whether :data:`EQUIVALENTS` computes ``op`` for these arguments: query, key and value only
    (no bias, no variable-length batches), no dropout, no mask other than causal."""
    if op not in EQUIVALENTS or n_tensors != 3:
        return False
    if any(literals.get(name) is not None for name in ("cu_seqlens_q", "cu_seqlens_k", "cum_seq_q", "cum_seq_k",
                                                       "seqlen_k", "window_size", "attn_bias", "bias")):
        return False
    return not literals.get("dropout_p") and literals.get("custom_mask_type", 0) in (0, 1)
