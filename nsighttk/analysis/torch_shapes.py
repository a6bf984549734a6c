"""The hot PyTorch ops of a capture with the arguments they were called with: what
``nsighttk repro`` turns into workloads.

Two sources:

* a torch.profiler (Kineto) trace recorded with ``record_shapes``: each op call carries
  ``Input Dims``, ``Input type`` (the dtype of a tensor, ``Scalar``, ``ScalarList``,
  ``TensorList``, or ``""`` for an argument not recorded), ``Input Strides`` and ``Concrete
  Inputs`` (scalar arguments as text); the op's self device time is the time of the kernels,
  copies and memsets that carry its external id (:func:`nsighttk.analysis.torch_ops.per_op_instance`).
  A tensor list's dims and strides are one list per tensor, and empty for a long list (PyTorch
  keeps them for short lists only); its tensors' dtype is not recorded, so it is taken from the
  dtype the op's kernel names (a ``multi_tensor_apply_kernel`` functor), else float32.  Devices
  are not recorded either: an op copying between host and device (``Memcpy HtoD``/``DtoH``) has
  its host-side tensor marked, pinned or pageable as the copy says;
* an nsys capture made with ``--pytorch autograd-shapes-nvtx``: PyTorch's NVTX observer names
  each op's range ``aten::mm, seq = 12, op_id = 34, sizes = [[64, 128], [128, 256]],
  input_op_ids = [...]`` (``seq`` and ``op_id`` present when known, ``sizes`` one list per input,
  ``[]`` for a non-tensor).  Dtypes, strides and scalar values are not in it.  A kernel belongs to
  the innermost such range around the runtime call that launched it, on the same thread.

Calls of one op with the same recorded arguments form one :class:`HotOp`; they are ranked by
self device time (by self CPU time in a trace without device activity).  Nothing here imports
PyTorch: whether the arguments fit one of the op's schemas is decided when the workload is written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.profile import Profile

#: Kineto's ``Input type`` of a tensor (c10's type names) -> torch dtype name
DTYPES = {"float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
          "long int": "int64", "long": "int64", "int": "int32", "short int": "int16", "short": "int16",
          "signed char": "int8", "unsigned char": "uint8", "bool": "bool", "c10::complex<float>": "complex64",
          "c10::complex<double>": "complex128", "c10::Float8_e4m3fn": "float8_e4m3fn",
          "c10::Float8_e5m2": "float8_e5m2", "unsigned short": "uint16", "unsigned int": "uint32",
          "unsigned long": "uint64"}

#: how to record shapes, for the one line a capture without them gets
HOW_TO_RECORD = ("record them: nsighttk torch --record-shapes SCRIPT, torch.profiler.profile(record_shapes=True), "
                 "or nsys profile --pytorch autograd-shapes-nvtx")


@dataclass
class Arg:
    """One recorded argument.  ``kind``: ``tensor`` (shape, dtype, strides; dtype None when not
    recorded), ``scalar`` (value: bool, int or float), ``list`` (value: a list of numbers),
    ``tensorlist`` (``shapes`` and ``strides`` one list per tensor, one ``dtype`` for all; shapes
    None when not recorded), or ``unknown`` (nothing recorded: an optional argument left out, a
    string, a generator ...).  ``device`` is ``"cpu"`` for a tensor the op copied from or to host
    memory in a capture with a device (``pinned`` says which host memory), else None."""

    kind: str
    shape: list[int] | None = None
    dtype: str | None = None
    strides: list[Any] | None = None  # a tensor's strides; a tensor list's, one list per tensor
    value: Any = None
    type_name: str = ""  # as recorded (Kineto's Input type)
    shapes: list[list[int]] | None = None  # a tensor list's shapes
    device: str | None = None
    pinned: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("kind", self.kind), ("shape", self.shape), ("shapes", self.shapes),
                                  ("dtype", self.dtype), ("strides", self.strides), ("value", self.value),
                                  ("type_name", self.type_name), ("device", self.device), ("pinned", self.pinned))
                if v is not None and v != ""}

    def label(self) -> str:
        if self.kind == "tensor":
            dims = "x".join(map(str, self.shape or [])) or "scalar tensor"
            layout = "" if self.strides is None or is_contiguous(self.shape or [], self.strides) else \
                f" strides {tuple(self.strides)}"
            where = ""
            if self.device == "cpu":
                where = " on the host" + ("" if self.pinned is None else " (pinned)" if self.pinned else " (pageable)")
            return f"{self.dtype or '?'}[{dims}]{layout}{where}"
        if self.kind == "tensorlist":
            return _list_label(self)
        if self.kind in ("scalar", "list"):
            return repr(self.value)
        return self.kind if self.kind != "unknown" else "-"


#: at most this many distinct shapes of a tensor list are named in its label
LABEL_SHAPES = 6


def _list_label(a: Arg) -> str:
    """``28 float32 [8192x512, 256x512, 512 x2, ...]``: the list's length, dtype and shapes (runs of
    one shape counted; the first :data:`LABEL_SHAPES` runs), ``strided`` when a tensor is not
    contiguous."""
    if a.shapes is None:
        return "tensorlist (shapes not recorded)"
    if not a.shapes:
        return "[] (an empty list)"
    runs: list[list[Any]] = []
    for s in a.shapes:
        text = "x".join(map(str, s)) or "scalar"
        if runs and runs[-1][0] == text:
            runs[-1][1] += 1
        else:
            runs.append([text, 1])
    parts = [t if n == 1 else f"{t} x{n}" for t, n in runs[:LABEL_SHAPES]]
    if len(runs) > LABEL_SHAPES:
        parts.append(f"... {sum(n for _, n in runs[LABEL_SHAPES:])} more")
    strided = a.strides is not None and any(not is_contiguous(s, st) for s, st in zip(a.shapes, a.strides,
                                                                                       strict=False))
    return f"{len(a.shapes)} {a.dtype or '?'} [{', '.join(parts)}]{' strided' if strided else ''}"


def labels(args: list[Arg]) -> str:
    """The arguments as text, ``; `` between them; a tensor list with the shapes of an earlier one
    says so instead of naming them again."""
    out = []
    for i, a in enumerate(args):
        same = next((j for j in range(i) if a.kind == "tensorlist" and a.shapes and args[j].kind == "tensorlist"
                     and args[j].shapes == a.shapes and args[j].dtype == a.dtype), None)
        out.append(f"as argument {same}" if same is not None else a.label())
    return "; ".join(out)


@dataclass
class HotOp:
    """Calls of one op with the same recorded arguments."""

    op: str
    args: list[Arg]
    calls: int
    self_device_ns: int  # all calls together
    self_cpu_ns: int
    device_pct: float  # share of the capture's device time
    kernels: list[str]  # names of the kernels the op launched itself, most time first
    device: str  # "cuda" when the op launched device work, else "cpu"
    source: str  # "kineto" or "nvtx"
    signature: str = ""  # the recorded arguments as text (the grouping key)
    problems: list[str] = field(default_factory=list)  # why the arguments cannot be recovered
    ranked_by: str = "device"  # "device", or "CPU" for a capture without device activity
    cpu_pct: float = 0.0  # share of all ops' self CPU time
    copies: list[str] = field(default_factory=list)  # its own memory copies, most time first (copy_label)
    notes: list[str] = field(default_factory=list)  # what was taken for what the capture does not record

    @property
    def share_pct(self) -> float:
        """The share of the time the ops were ranked by (device time, else CPU time)."""
        return self.device_pct if self.ranked_by == "device" else self.cpu_pct

    @property
    def per_call_ns(self) -> float:
        return (self.self_device_ns or self.self_cpu_ns) / max(self.calls, 1)

    @property
    def inductor(self) -> bool:
        """An Inductor kernel: recorded under its own name, or launched by no operator of a library."""
        return self.op.startswith("triton_") or ("::" not in self.op and bool(self.kernels)
                                                 and self.kernels[0].startswith("triton_"))

    def shapes(self) -> list[list[int] | None]:
        return [a.shape if a.kind == "tensor" else None for a in self.args]

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "args": [a.as_dict() for a in self.args], "calls": self.calls,
                "self_device_ns": self.self_device_ns, "self_cpu_ns": self.self_cpu_ns,
                "per_call_ns": self.per_call_ns, "device_pct": self.device_pct, "kernels": self.kernels,
                "device": self.device, "source": self.source, "problems": self.problems,
                "ranked_by": self.ranked_by, "share_pct": self.share_pct, "copies": self.copies,
                "notes": self.notes}


class NoShapes(ValueError):
    """The capture has ops but no recorded arguments."""


def is_contiguous(shape: list[int], strides: list[int]) -> bool:
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides), strict=False):
        if n != 1 and s != expect:
            return False
        expect *= max(n, 1)
    return len(shape) == len(strides)


def _scalar(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return float(text)  # "0.", "1.0000000000000001e-05", "inf", "nan"


def _int_lists(x: Any) -> list[list[int]] | None:
    """``x`` when it is a list of lists of integers (a tensor list's dims or strides), else None."""
    if isinstance(x, list) and all(isinstance(e, list) and all(type(v) is int for v in e) for e in x):
        return [list(e) for e in x]
    return None


def kineto_args(dims: Any, types: Any, strides: Any, concrete: Any) -> tuple[list[Arg], list[str]]:
    """The arguments of one op call from Kineto's four lists, and what could not be read."""
    n = len(types)
    strides = strides if isinstance(strides, list) and len(strides) == n else [None] * n
    concrete = concrete if isinstance(concrete, list) and len(concrete) == n else [""] * n
    dims = dims if isinstance(dims, list) and len(dims) == n else [None] * n
    args, problems, lists = [], [], []
    for i, (d, t, s, c) in enumerate(zip(dims, types, strides, concrete, strict=True)):
        t = str(t)
        c = "" if c is None else str(c)
        if t in DTYPES:
            shape = [int(x) for x in d] if isinstance(d, list) and all(type(x) is int for x in d) else None
            st = [int(x) for x in s] if isinstance(s, list) and all(type(x) is int for x in s) else None
            if shape is None:
                problems.append(f"argument {i}: a {t} tensor without its shape")
            args.append(Arg("tensor", shape, DTYPES[t], st if st is not None and len(st) == len(shape or []) else None,
                            type_name=t))
        elif t == "Scalar":
            try:
                args.append(Arg("scalar", value=_scalar(c), type_name=t))
            except ValueError:
                args.append(Arg("unknown", type_name=t))
                if c:
                    problems.append(f"argument {i}: scalar {c[:40]!r} cannot be read")
        elif t == "ScalarList":
            try:
                value = json.loads(c) if c else None
            except ValueError:
                value = None
            if isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
                args.append(Arg("list", value=value, type_name=t))
            else:
                args.append(Arg("unknown", type_name=t))
        elif t == "TensorList":
            each = _int_lists(d)
            each_strides = _int_lists(s)
            if each is None or each_strides is None or [len(x) for x in each] != [len(x) for x in each_strides]:
                each_strides = None
            args.append(Arg("tensorlist", shapes=each, strides=each_strides, type_name=t))
            if each is None and d not in ([], None):
                problems.append(f"argument {i}: a list of tensors whose dims cannot be read")
            else:
                lists.append(i)
        elif t == "":
            args.append(Arg("unknown"))
        else:
            args.append(Arg("unknown", type_name=t))
            problems.append(f"argument {i}: type {t[:40]!r} is not a tensor dtype nsighttk knows")
    # an empty list is one unless every list of the call is empty: PyTorch records no shapes of a
    # long list, and an op of lists only of which all are empty is not what a program runs
    lost = [i for i in lists if args[i].shapes is None or not any(args[j].shapes for j in lists)]
    for i in lost:
        args[i].shapes, args[i].strides = None, None
    if lost:
        which = f"argument {lost[0]} is a list" if len(lost) == 1 else \
            f"arguments {', '.join(map(str, lost))} are lists"
        problems.insert(0, f"{which} of tensors whose shapes the trace did not keep (PyTorch records "
                           "them for short lists only)")
    return args, problems


def _loads(text: Any) -> Any:
    if not isinstance(text, str) or not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _device_total(p: Profile) -> int:
    return int(sum(int(t["duration_ns"].sum()) for t in (p.kernels, p.memcpy, p.memset) if len(t)))


def copy_label(kind: Any, src: Any, dst: Any) -> str:
    """``HtoD (Pinned -> Device)``, as Kineto names a copy (the kind alone where the memory kinds
    are not known)."""
    known = isinstance(src, str) and isinstance(dst, str) and src and dst
    return f"{kind} ({src} -> {dst})" if known else str(kind)


def _copy_labels(m: pd.DataFrame) -> pd.Series:
    return pd.Series([copy_label(k, a, b) for k, a, b in zip(m["kind"], m["src_kind"], m["dst_kind"], strict=True)],
                     index=m.index, dtype=object)


def _kernel_names(p: Profile, group_of_row: np.ndarray, copies: bool = False) -> dict[int, list[str]]:
    """Kernel names per op group, most time first: a kernel belongs to the op row carrying its
    external id (the innermost op, as in :func:`nsighttk.analysis.torch_ops.per_op_instance`).
    With ``copies``, the labels of the memory copies instead (:func:`copy_label`)."""
    k, ops = (p.memcpy if copies else p.kernels), p.ops
    if not len(k) or not len(ops):
        return {}
    row_of = pd.Series(np.arange(len(ops)), index=ops["external_id"].astype("Int64")).loc[lambda x: ~x.index.isna()]
    row_of = row_of[~row_of.index.duplicated(keep="last")]
    rows = row_of.reindex(k["external_id"].to_numpy()).to_numpy(dtype="float64")
    ok = ~np.isnan(rows)
    if not ok.any():
        return {}
    names = _copy_labels(k) if copies else k["name"].astype(str)
    t = pd.DataFrame({"g": group_of_row[rows[ok].astype(np.int64)], "name": names.to_numpy()[ok],
                      "dur": k["duration_ns"].to_numpy(dtype="int64")[ok]})
    sums = t.groupby(["g", "name"], sort=False)["dur"].sum().sort_values(ascending=False, kind="stable")
    out: dict[int, list[str]] = {}
    for (g, name), _ in sums.items():
        out.setdefault(int(g), []).append(str(name))
    return out


def has_shapes(p: Profile) -> bool:
    ops = p.ops
    if len(ops) and "input_types" in ops and ops["input_types"].notna().any():
        return True
    return bool(len(p.nvtx)) and p.nvtx["name"].astype(str).str.contains(SIZES_MARK, regex=False).any()


def hot_ops(p: Profile, top: int | None = 5, op: str | None = None) -> list[HotOp]:
    """The ``top`` op signatures by self device time (all of them for None); only ``op``'s when
    given.  Raises :class:`NoShapes` for a capture whose ops carry no recorded arguments."""
    if len(p.ops) and "input_types" in p.ops and p.ops["input_types"].notna().any():
        found = _kineto_ops(p)
    elif len(p.nvtx) and p.nvtx["name"].astype(str).str.contains(SIZES_MARK, regex=False).any():
        found = _nvtx_ops(p)
    else:
        raise NoShapes("no op arguments recorded")
    if op is not None:
        found = [h for h in found if h.op == op]
    return found if top is None else found[:top]


def _rank(frame: pd.DataFrame, total: int) -> pd.DataFrame:
    by = "self_device_ns" if frame["self_device_ns"].sum() > 0 else "self_cpu_ns"
    cpu_total = int(frame["self_cpu_ns"].clip(lower=0).sum())
    frame = frame[frame[by] > 0]
    g = frame.groupby("key", sort=False).agg(op=("op", "first"), calls=("op", "size"),
                                             self_device_ns=("self_device_ns", "sum"),
                                             self_cpu_ns=("self_cpu_ns", "sum"), row=("row", "first")).reset_index()
    g["device_pct"] = 100.0 * g["self_device_ns"] / total if total else 0.0
    g["cpu_pct"] = 100.0 * g["self_cpu_ns"].clip(lower=0) / cpu_total if cpu_total else 0.0
    g["ranked_by"] = "device" if by == "self_device_ns" else "CPU"
    return g.sort_values([by, "op"], ascending=[False, True], ignore_index=True)


def _kineto_ops(p: Profile) -> list[HotOp]:
    from nsighttk.analysis.torch_ops import per_op_instance

    ops = p.ops.reset_index(drop=True)
    inst = per_op_instance(p)
    cols = [c for c in ("name", "input_dims", "input_types", "input_strides", "concrete_inputs") if c in ops]
    # one group per op name and recorded arguments (codes per column, then per combination)
    group = np.zeros(len(ops), dtype=np.int64)
    for c in cols:  # the pair (group so far, this column's code) as one number below len(ops)**2
        code = pd.factorize(ops[c], use_na_sentinel=False)[0].astype(np.int64)
        group = pd.factorize(group * (int(code.max(initial=0)) + 1) + code)[0].astype(np.int64)
    frame = pd.DataFrame({"key": group, "op": ops["name"].astype(str), "self_device_ns": inst["self_device_ns"],
                          "self_cpu_ns": inst["self_cpu_ns"], "row": np.arange(len(ops))})
    total = _device_total(p)
    g = _rank(frame, total)
    names = _kernel_names(p, group)
    copies = _kernel_names(p, group, copies=True)
    out = []
    for r in g.itertuples(index=False):
        src = ops.iloc[int(r.row)]
        types = _loads(src["input_types"]) or []
        args, problems = kineto_args(_loads(src["input_dims"]), types, _loads(src.get("input_strides")),
                                     _loads(src.get("concrete_inputs")))
        kern = names.get(int(r.key), [])
        signature = " ".join(str(src.get(c) or "") for c in cols)
        h = HotOp(str(r.op), args, int(r.calls), int(r.self_device_ns), int(r.self_cpu_ns), float(r.device_pct),
                  kern, "cuda" if kern or r.self_device_ns else "cpu", "kineto", signature, problems,
                  str(r.ranked_by), float(r.cpu_pct), copies.get(int(r.key), []))
        _list_dtypes(h)
        _place_copies(h)
        out.append(h)
    if g["self_device_ns"].sum() > 0:
        out += _orphan_kernels(p, set(ops["external_id"].dropna().astype("int64")), total)
        out.sort(key=lambda h: (-h.self_device_ns, h.op))
    return out


#: a dtype of this many bytes, for a kernel naming only the size of its elements (``OpaqueType<2>``)
_BY_SIZE = {"2-byte": "bfloat16", "4-byte": "float32", "8-byte": "float64"}


def _list_dtypes(h: HotOp) -> None:
    """Give the op's tensor lists a dtype (the trace records none): the one its first kernel that
    names a dtype names, else float32; the note says which."""
    from nsighttk.analysis.kernels.names import decode

    lists = [a for a in h.args if a.kind == "tensorlist"]
    if not any(a.shapes for a in lists):
        return
    found, kernel = None, ""
    for k in h.kernels:
        info = decode(k)
        if info.dtypes:
            found, kernel = info.dtypes[0], info.op or k
            break
    if found in DTYPES.values():
        dtype, how = str(found), f"{found}, as its kernel names it"
    elif found in _BY_SIZE:
        dtype, how = _BY_SIZE[found], f"{_BY_SIZE[found]}, as its kernel copies {found} elements"
    else:
        dtype, how, kernel = "float32", "float32 (no kernel of the op names one)", ""
    for a in lists:
        a.dtype = dtype
    h.notes.append(f"the dtype of the tensors in lists is not recorded: {how}{f' ({kernel[:80]})' if kernel else ''}")


#: ops whose host-to-device or device-to-host copy is replayed as such: the argument that is in
#: host memory for a ``HtoD`` copy (the source) and for a ``DtoH`` copy (the destination)
HOST_SIDE = {"aten::copy_": {"HtoD": 1, "DtoH": 0}}
_MEMORY = {"Pinned": True, "Pageable": False}


def _place_copies(h: HotOp) -> None:
    """Mark the host-side tensor of an op that copied between host and device (its most time among
    ``HtoD`` and ``DtoH`` copies); where the op's arguments cannot say which tensor was on the host,
    a note says that the reproducer runs on the device only."""
    host = [c for c in h.copies if c.split(" ")[0] in ("HtoD", "DtoH")]
    if not host:
        return
    top = host[0]
    kind = top.split(" ")[0]
    memory = top[top.find("(") + 1:top.rfind(")")].split(" -> ") if "(" in top else []
    where = HOST_SIDE.get(h.op, {}).get(kind)
    arg = h.args[where] if where is not None and where < len(h.args) else None
    if arg is None or arg.kind != "tensor":
        h.notes.append(f"the op copied {top}, and the trace does not record which of its tensors was in host "
                       "memory: the reproducer keeps every tensor on the device")
        return
    arg.device = "cpu"
    side = memory[0 if kind == "HtoD" else 1] if len(memory) == 2 else ""
    arg.pinned = _MEMORY.get(side)
    what = "source" if kind == "HtoD" else "destination"
    mem = "host memory (the trace does not say pinned or pageable)" if arg.pinned is None else \
        "pinned host memory" if arg.pinned else "pageable host memory"
    h.notes.append(f"the trace copied {top}: the {what} is made in {mem}")
    others = [c for c in h.copies if c != top]
    if others:
        h.notes.append(f"calls of the same arguments also copied {', '.join(others[:3])}: replayed as {top}")


def _orphan_kernels(p: Profile, op_ids: set[int], total: int) -> list[HotOp]:
    """Kernels no recorded op launched (Triton kernels of a compiled graph launched without a range
    of their own, extensions), one per name: nothing to replay, except Inductor's from its code."""
    k = p.kernels
    if not len(k):
        return []
    ext = k["external_id"]
    lost = k[ext.isna().to_numpy() | ~ext.fillna(-1).astype("int64").isin(op_ids).to_numpy()]
    out = []
    for name, g in lost.groupby(lost["name"].astype(str), sort=False):
        dur = int(g["duration_ns"].sum())
        why = [] if name.startswith("triton_") else ["a kernel no recorded op launched: no arguments to replay"]
        out.append(HotOp(name, [], len(g), dur, 0, 100.0 * dur / total if total else 0.0, [name], "cuda",
                         "kineto", name, why))
    return out


# ------------------------------------------------------------------------------------------ nsys

SIZES_MARK = ", sizes = ["
_NVTX = re.compile(r"^(?P<name>[^,]+?)(?:, seq = (?P<seq>-?\d+))?(?:, op_id = (?P<op_id>\d+))?"
                   r"(?:, sizes = (?P<sizes>\[.*?\]))?(?:, input_op_ids = .*)?$", re.S)


def parse_nvtx_name(text: str) -> tuple[str, list[list[int]] | None] | None:
    """``aten::mm, seq = 12, sizes = [[64, 128], [128, 256]]`` -> ``("aten::mm", [[64, 128],
    [128, 256]])``; a name without sizes -> ``(name, None)``; None for text PyTorch's NVTX
    observer does not write."""
    m = _NVTX.match(text)
    if not m:
        return None
    sizes_text = None
    if SIZES_MARK in text:  # the sizes list is nested: take it up to its matching bracket
        start = text.index(SIZES_MARK) + len(SIZES_MARK) - 1
        depth = 0
        for i in range(start, len(text)):
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            if depth == 0:
                sizes_text = text[start:i + 1]
                break
    if sizes_text is None:
        return m.group("name"), None
    try:
        sizes = json.loads(sizes_text)
    except ValueError:
        return None
    if not isinstance(sizes, list) or not all(isinstance(s, list) and all(type(x) is int for x in s) for s in sizes):
        return None
    return m.group("name"), sizes


def innermost(start: np.ndarray, end: np.ndarray, depth: np.ndarray, tid: np.ndarray, at: np.ndarray,
              at_tid: np.ndarray) -> np.ndarray:
    """For each point ``at`` (a runtime call's start) on thread ``at_tid``, the index of the deepest
    range ``[start, end]`` of the same thread holding it, or -1.  Push/pop ranges of one thread
    at one depth never overlap, so each depth is one sorted search (deepest last: it wins)."""
    owner = np.full(len(at), -1, dtype=np.int64)
    for t in np.unique(tid[~np.isnan(tid)]):
        points = np.flatnonzero(at_tid == t)
        if not len(points):
            continue
        p_at = at[points]
        on = np.flatnonzero(tid == t)
        for d in np.unique(depth[on]):
            idx = on[depth[on] == d]
            idx = idx[np.argsort(start[idx], kind="stable")]
            pos = np.searchsorted(start[idx], p_at, side="right") - 1  # the last range starting at or before
            cand = idx[np.clip(pos, 0, None)]
            ok = (pos >= 0) & (end[cand] >= p_at)
            owner[points[ok]] = cand[ok]
    return owner


def _nvtx_ops(p: Profile) -> list[HotOp]:
    nv = p.nvtx
    nv = nv[nv["end_ns"].notna() & nv["name"].astype(str).str.contains(SIZES_MARK, regex=False)].reset_index(drop=True)
    found = [parse_nvtx_name(str(t)) for t in nv["name"]]
    keep = np.array([x is not None and x[1] is not None for x in found], dtype=bool)
    nv = nv[keep].reset_index(drop=True)
    parsed = [(x[0], x[1]) for x in found if x is not None and x[1] is not None]
    n = len(nv)
    start = nv["start_ns"].to_numpy(dtype="int64")
    end = nv["end_ns"].to_numpy(dtype="int64")
    depth = nv["depth"].to_numpy(dtype="int64")
    tid = nv["global_tid"].to_numpy(dtype="float64", na_value=np.nan)
    owner = np.full(len(p.api), -1, dtype=np.int64)
    if n and len(p.api):
        owner = innermost(start, end, depth, tid, p.api["start_ns"].to_numpy(dtype="int64"),
                          p.api["global_tid"].to_numpy(dtype="float64", na_value=np.nan))
    corr_owner = pd.Series(owner, index=p.api["correlation_id"].to_numpy(dtype="float64", na_value=np.nan)) \
        if len(p.api) else pd.Series(dtype="int64")
    corr_owner = corr_owner[(corr_owner >= 0).to_numpy() & ~np.isnan(corr_owner.index.to_numpy(dtype="float64"))]
    corr_owner = corr_owner[~corr_owner.index.duplicated()]
    self_dev = np.zeros(n, dtype=np.int64)
    kern_rows: list[tuple[int, str, int]] = []
    copy_rows: list[tuple[int, str, int]] = []
    for table in (p.kernels, p.memcpy, p.memset):
        if not len(table) or not len(corr_owner):
            continue
        r = corr_owner.reindex(table["correlation_id"].to_numpy(dtype="float64", na_value=np.nan)).to_numpy()
        ok = ~np.isnan(r.astype("float64"))
        dur = table["duration_ns"].to_numpy(dtype="int64")
        np.add.at(self_dev, r[ok].astype(np.int64), dur[ok])
        if table is p.kernels:
            kern_rows += list(zip(r[ok].astype(np.int64).tolist(), table["name"].astype(str).to_numpy()[ok].tolist(),
                                  dur[ok].tolist(), strict=True))
        elif table is p.memcpy:
            copy_rows += list(zip(r[ok].astype(np.int64).tolist(), _copy_labels(table).to_numpy()[ok].tolist(),
                                  dur[ok].tolist(), strict=True))
    names = [x[0] for x in parsed]
    sizes = [json.dumps(x[1]) for x in parsed]
    key = pd.Series([f"{a} {b}" for a, b in zip(names, sizes, strict=True)], dtype=object)
    frame = pd.DataFrame({"key": key, "op": names, "self_device_ns": self_dev,
                          "self_cpu_ns": (end - start), "row": np.arange(n)})
    g = _rank(frame, _device_total(p))
    per_key: dict[str, dict[str, int]] = {}
    for r, name, dur in kern_rows:
        d = per_key.setdefault(key[r], {})
        d[name] = d.get(name, 0) + int(dur)
    copies_of: dict[str, dict[str, int]] = {}
    for r, name, dur in copy_rows:
        d = copies_of.setdefault(key[r], {})
        d[name] = d.get(name, 0) + int(dur)
    out = []
    for r in g.itertuples(index=False):
        shapes = parsed[int(r.row)][1]
        args = [Arg("tensor", list(s)) if s else Arg("unknown") for s in shapes]
        kern = [k for k, _ in sorted(per_key.get(r.key, {}).items(), key=lambda kv: -kv[1])]
        copies = [k for k, _ in sorted(copies_of.get(r.key, {}).items(), key=lambda kv: -kv[1])]
        h = HotOp(str(r.op), args, int(r.calls), int(r.self_device_ns), int(r.self_cpu_ns), float(r.device_pct),
                  kern, "cuda" if kern or r.self_device_ns else "cpu", "nvtx", str(r.key), [], str(r.ranked_by),
                  float(r.cpu_pct), copies)
        _place_copies(h)
        out.append(h)
    return out
