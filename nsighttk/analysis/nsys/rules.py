"""Nsight Systems' expert rules (``nsys analyze``), as pure functions over Profile tables.

Six rules, with the semantics of Nsight Systems 2025.3 (rule names, options, defaults, columns,
row order and limits), so ``nsighttk rules`` can stand in for ``nsys analyze`` on any machine:

``cuda_memcpy_async``  async memcpys that touch pageable memory (and so run synchronously);
``cuda_memcpy_sync``   synchronous memcpys, except H2D copies of 64 kB or less and copies within one device;
``cuda_memset_sync``   synchronous memsets of pinned or managed memory;
``cuda_api_sync``      cudaDeviceSynchronize / cudaStreamSynchronize calls;
``gpu_gaps``           stretches longer than ``gap`` ms where a GPU of a process runs nothing;
``gpu_time_util``      the GPU span of each process and device cut in ``chunks`` equal chunks; runs of
                       chunks busy less than ``threshold`` % of the time, merged.

nsys 2022.4 named them cuda-async-memcpy, cuda-sync-memcpy, cuda-sync-memset, cuda-sync-api,
gpu-starv and gpu-low-util; those names are accepted, and ``style="2022.4"`` reproduces that
version's output (no green-context column; its gpu-low-util merges empty chunks of the same index
across devices, a quirk of its SQL kept here so outputs can be compared).

Each run gives a :class:`RuleResult` whose ``frame`` has nsys' columns (sizes kept in bytes):
the copy rules ``Duration (ns), Start (ns), Src Kind, Dst Kind, Bytes (B), PID, Device ID, Context ID,
Green Context ID, Stream ID, API Name``; cuda_memset_sync the same with ``Memory Kind`` for the two
kinds; cuda_api_sync ``Duration (ns), Start (ns), PID, TID, API Name``; gpu_gaps ``Row#, Duration (ns),
Start (ns), PID, Device ID, Context ID``; gpu_time_util ``Row#, In-Use (%), Duration (ns), Start (ns),
PID, Device ID, Context ID``.  :mod:`nsighttk.report.rules_format` renders them as nsys does.

The rules themselves (SQL over the capture's engine, :mod:`nsighttk.engine`, and the few export
facts they need that a Profile does not carry) are in :mod:`nsighttk.analysis.nsys.rule_queries`;
this module holds their names, options, messages, the runner and the conversion to nsighttk
findings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk.analysis.advice import Finding
from nsighttk.analysis.groupstats import exact_total
from nsighttk.analysis.nsys.rule_queries import (
    ExportFacts,
    RuleInput,
    cuda_api_sync,
    cuda_memcpy_async,
    cuda_memcpy_sync,
    cuda_memset_sync,
    gpu_gaps,
    gpu_time_util,
    read_ahead,
    read_export_facts,
    rule_input,
    time_window,
)
from nsighttk.errors import UsageError
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import Profile
from nsighttk.units import fmt_bytes, fmt_ns

STYLE_2025 = "2025.3"
STYLE_2022 = "2022.4"
STYLES = (STYLE_2025, STYLE_2022)
DEFAULT_ROWS = 50

_NO_CUDA = ("{DBFILE} could not be analyzed because it does not contain the required CUDA data."
            " Does the application use CUDA {WHAT} APIs?")
_WHAT_API = {"CUPTI_ACTIVITY_KIND_RUNTIME": "runtime", "CUPTI_ACTIVITY_KIND_MEMCPY": "memcpy",
             "CUPTI_ACTIVITY_KIND_MEMSET": "memset"}
_NO_GPU = ("{DBFILE} could not be analyzed because it does not contain the required data."
           " Does the application launch GPU operations?")
_NO_GREEN = ("{DBFILE} could not be analyzed due to missing 'greenContextId'."
             " Please re-export the report file with a recent version of Nsight Systems.")
_SYNC_ADVICE = ("The following are synchronization APIs that block the host until all issued CUDA calls are"
                " complete.\n\nSuggestions:\n   1. Avoid excessive use of synchronization.\n   2. Use asynchronous"
                " CUDA event calls, such as cudaStreamWaitEvent() and cudaEventSynchronize(), to prevent host"
                " synchronization.")
_SYNC_NONE = "There were no problems detected related to synchronization APIs."
_GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
_IDLE_HINTS = ("Suggestions:\n   1. Use CPU sampling data, OS Runtime blocked state backtraces, and/or OS Runtime"
               " APIs related to thread synchronization to understand if a sluggish or blocked CPU is causing the"
               " gaps.\n   2. Add NVTX annotations to CPU code to understand the reason behind the gaps.")


# ------------------------------------------------------------------------------------ options

@dataclass(frozen=True)
class RuleSpec:
    """One rule: its names, title, options (name -> default) and messages in both styles."""

    name: str
    legacy_name: str
    title: str
    legacy_title: str
    options: dict[str, int | None]
    compute: Callable[[RuleInput, dict[str, Any]], pd.DataFrame]
    tables: tuple[str, ...]  # the export tables it needs (all of them, or one with ``any_table``)
    skip_message: str  # for ``any_table`` rules; the others name the first missing table
    advice: str
    noresult: str
    legacy_advice: str = ""
    legacy_noresult: str = ""
    new_options: tuple[str, ...] = ()  # options nsys 2022.4's rule does not have
    any_table: bool = False

    def display_name(self, style: str) -> str:
        return self.legacy_name if style == STYLE_2022 else self.name


@dataclass(frozen=True)
class RuleRequest:
    """A rule as asked for: ``gpu_gaps:gap=100:rows=5`` -> spec, ("gap=100", "rows=5"), values."""

    spec: RuleSpec
    args: tuple[str, ...]
    values: dict[str, Any]

    def file_tag(self, style: str = STYLE_2025) -> str:
        """``gpu_gaps_gap=100`` for ``gpu_gaps:gap=100``: nsys' output file name after its base."""
        return "_".join([self.spec.display_name(style), *self.args])


_COMMON = {"rows": DEFAULT_ROWS, "start": None, "end": None, "nvtx": None}


def parse_rule(text: str, style: str = STYLE_2025) -> RuleRequest:
    """``name[:opt=value[:opt=value]...]`` with nsys' names (either version's) and option syntax."""
    name, *args = text.strip().split(":")
    spec = RULES_BY_NAME.get(name.strip())
    if spec is None:
        known = ", ".join(s.display_name(style) for s in RULES)
        raise UsageError(f"unknown rule {name.strip()!r}", f"known rules: {known}")
    allowed = {k: v for k, v in {**_COMMON, **spec.options}.items()
               if not (style == STYLE_2022 and k in spec.new_options)}
    values: dict[str, Any] = dict(allowed)
    for arg in args:
        key, eq, value = arg.partition("=")
        if key not in allowed or not eq:
            raise UsageError(f"{spec.display_name(style)}: unknown option {arg!r}",
                             f"options of this rule: {', '.join(f'{k}=' for k in allowed)}")
        if key == "nvtx":
            values[key] = value
            continue
        try:
            values[key] = int(value)
        except ValueError:
            raise UsageError(f"{spec.display_name(style)}: {key}={value!r} is not an integer",
                             f"give a whole number, e.g. {key}={allowed[key] or 0}") from None
    if "chunks" in values and values["chunks"] and not 1 <= values["chunks"] <= 1000:
        raise UsageError(f"{spec.display_name(style)}: chunks must be between 1 and 1000", "e.g. chunks=30")
    if values["start"] is not None and values["end"] is not None and values["start"] > values["end"]:
        raise UsageError(f"{spec.display_name(style)}: start is after end", "give start <= end (nanoseconds)")
    return RuleRequest(spec, tuple(args), values)


def parse_rules(specs: str | list[str] | None, style: str = STYLE_2025) -> list[RuleRequest]:
    """``"a,b:rows=3"`` (or a list of such strings) -> requests; None -> the six rules."""
    if style not in STYLES:
        raise UsageError(f"unknown nsys version {style!r} to follow", f"use one of {', '.join(STYLES)}")
    if not specs:
        return [RuleRequest(s, (), {**_COMMON, **s.options}) for s in RULES]
    items = [specs] if isinstance(specs, str) else list(specs)
    return [parse_rule(part, style) for item in items for part in item.split(",") if part.strip()]


# ----------------------------------------------------------------------------------- registry

RULES: list[RuleSpec] = [
    RuleSpec(
        "cuda_memcpy_async", "cuda-async-memcpy", "CUDA Async Memcpy with Pageable Memory",
        "CUDA Async Memcpy with Pageable Memory", {}, cuda_memcpy_async,
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY"), "",
        "The following APIs use PAGEABLE memory which causes asynchronous CUDA memcpy operations to block and be"
        " executed synchronously. This leads to low GPU utilization.\n\nSuggestion: If applicable, use PINNED"
        " memory instead.",
        "There were no problems detected related to memcpy operations using pageable memory."),
    RuleSpec(
        "cuda_memcpy_sync", "cuda-sync-memcpy", "CUDA Synchronous Memcpy", "CUDA Synchronous Memcpy", {},
        cuda_memcpy_sync, ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY"), "",
        "The following are synchronous memory transfers that block the host. This does not include host to device"
        " transfers of a memory block of 64 KB or less.\n\nSuggestion: Use cudaMemcpy*Async() APIs instead.",
        "There were no problems detected related to synchronous memcpy operations."),
    RuleSpec(  # nsys prints the synchronization-API advice for this rule too
        "cuda_memset_sync", "cuda-sync-memset", "CUDA Synchronous Memset", "CUDA Synchronous Memset", {},
        cuda_memset_sync, ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMSET"), "", _SYNC_ADVICE,
        _SYNC_NONE),
    RuleSpec(
        "cuda_api_sync", "cuda-sync-api", "CUDA Synchronization APIs", "CUDA Synchronization APIs",
        {"process": -1, "thread": -1}, cuda_api_sync, ("CUPTI_ACTIVITY_KIND_RUNTIME",), "", _SYNC_ADVICE,
        _SYNC_NONE, new_options=("process", "thread")),
    RuleSpec(
        "gpu_gaps", "gpu-starv", "GPU Gaps", "GPU Starvation", {"gap": 500}, gpu_gaps, _GPU_TABLES, _NO_GPU,
        "The following are ranges where a GPU is idle for more than {gap}ms. Addressing these gaps might improve"
        " application performance.\n\n" + _IDLE_HINTS,
        "There were no problems detected with GPU utilization. GPU was not found to be idle for more than {gap}ms.",
        "The following are ranges where a GUP is idle for more than {gap}ms. Addressing these gaps might imporve"
        " application performance\n\nSuggestions:\n   1. Use GPU sampling data, OS Runtime blocked state"
        " backgraces, and/or OS Runtime APIs related to thread synchronization to understand if a sluggish or"
        " blocked CPU is causing these gaps.\n   2. Add NVTX annotations to CPU code to understand the reason behind"
        " these gaps.",
        "There were no problems detected with GPU utilization. GPU was not found to be idle for more than {gap}ms.",
        any_table=True),
    RuleSpec(  # "%%": nsys formats this message with str.format, which leaves it doubled
        "gpu_time_util", "gpu-low-util", "GPU Time Utilization", "GPU Low Utilization",
        {"threshold": 50, "chunks": 30}, gpu_time_util, _GPU_TABLES, _NO_GPU,
        "The following are time regions with an average GPU utilization below {threshold}%%. Addressing the gaps"
        " might improve application performance.\n\n" + _IDLE_HINTS,
        "There were no problems detected with GPU utilization. No time regions have an average GPU utilization"
        " below {threshold}%%.", any_table=True),
]
RULES_BY_NAME: dict[str, RuleSpec] = {**{s.name: s for s in RULES}, **{s.legacy_name: s for s in RULES}}


# ------------------------------------------------------------------------------------ running

@dataclass
class RuleResult:
    """One rule run: the rows nsys would print (``frame``; sizes in bytes, ``(B)``), or why it was
    skipped (``skipped``, nsys' own message).  ``name`` is the rule's name in ``style``."""

    spec: RuleSpec = field(repr=False)
    name: str
    title: str
    args: tuple[str, ...]
    values: dict[str, Any]
    style: str
    advice: str
    noresult: str
    frame: pd.DataFrame | None = None
    skipped: str | None = None

    @property
    def file_tag(self) -> str:
        """``gpu_gaps_gap=100`` for ``gpu_gaps:gap=100``: nsys' output file name after its base."""
        return "_".join([self.name, *self.args])

    @property
    def row_limit(self) -> int:
        return int(self.values["rows"])

    def limit_note(self) -> str:
        """nsys' line under a table cut by ``rows``, or ''.  nsys 2022.4 also prints it with
        ``rows=-1`` (no limit); nsys 2025.3.1 does not (seen on the synthetic exports)."""
        rows = 0 if self.frame is None else len(self.frame)
        if self.row_limit == 0 or rows < self.row_limit or (self.row_limit < 0 and self.style == STYLE_2025):
            return ""
        if self.row_limit == 1:
            return "Only the top result is displayed. More data may be available."
        return f"Only the top {rows} results are displayed. More data may be available."


def _missing(spec: RuleSpec, p: Profile, facts: ExportFacts | None, style: str) -> str | None:
    """nsys' reason to skip a rule on this export (the first table or column it lacks, in nsys'
    order), or None.  Without the export's table list (a Profile from elsewhere), a table is there
    when it has rows."""
    table_of = {"CUPTI_ACTIVITY_KIND_RUNTIME": "api", "CUPTI_ACTIVITY_KIND_KERNEL": "kernels",
                "CUPTI_ACTIVITY_KIND_MEMCPY": "memcpy", "CUPTI_ACTIVITY_KIND_MEMSET": "memset"}
    tables = facts.tables if facts is not None and facts.tables is not None else None

    def has(t: str) -> bool:  # (rows counted, not read: a skipped rule reads no table)
        return t in tables if tables is not None else p.count(table_of[t]) > 0

    if spec.any_table:
        return None if any(has(t) for t in spec.tables) else spec.skip_message
    checks_2025 = style == STYLE_2025 and facts is not None and tables is not None  # 2022.4 checks less
    if checks_2025 and tables is not None and "StringIds" not in tables:
        return "{DBFILE} file does not contain StringIds table."
    for t in spec.tables:
        if not has(t):
            return _NO_CUDA.replace("{WHAT}", _WHAT_API[t])
    if not checks_2025 or facts is None or tables is None:
        return None
    columns = {"CUPTI_ACTIVITY_KIND_MEMCPY": facts.memcpy_columns, "CUPTI_ACTIVITY_KIND_MEMSET": facts.memset_columns}
    if any(t in columns for t in spec.tables):
        if "ENUM_CUDA_MEM_KIND" not in tables:
            return "{DBFILE} does not contain ENUM_CUDA_MEM_KIND table."
        if any("greenContextId" not in columns[t] for t in spec.tables if t in columns):
            return _NO_GREEN
    return None


def run_rule(p: Profile, request: RuleRequest, facts: ExportFacts | None = None, style: str = STYLE_2025,
             dbfile: str = "") -> RuleResult:
    """Run one rule over a Profile (``facts`` from :func:`read_export_facts` when it came from an
    nsys export; ``dbfile`` is the name nsys' skip messages use)."""
    spec, values = request.spec, request.values
    legacy = style == STYLE_2022
    fmt = {k: v for k, v in values.items() if isinstance(v, int)}
    result = RuleResult(spec, spec.display_name(style), spec.legacy_title if legacy else spec.title, request.args,
                        values, style,
                        (spec.legacy_advice if legacy and spec.legacy_advice else spec.advice).format(**fmt),
                        (spec.legacy_noresult if legacy and spec.legacy_noresult else spec.noresult).format(**fmt))
    reason = _missing(spec, p, facts, style)
    window, why = time_window(p, values) if reason is None else (None, None)
    if reason is not None or why is not None:
        db = dbfile or (facts.path if facts else "") or str(p.meta.get("source", "the export"))
        result.skipped = (reason or why or "").replace("{IN_DBFILE}", "" if legacy else f" in {db}") \
            .replace("{DBFILE}", db)
        return result
    frame = spec.compute(rule_input(p, facts, window, legacy), values)
    if legacy and "Green Context ID" in frame.columns:
        frame = frame.drop(columns="Green Context ID")
    result.frame = frame
    return result


def run_rules(source: Profile | str | Path, requests: list[RuleRequest] | str | None = None,
              facts: ExportFacts | None = None, style: str = STYLE_2025, dbfile: str = "") -> list[RuleResult]:
    """Run rules (requests, or nsys' ``-r`` text such as ``"gpu_gaps:gap=100,cuda_api_sync"``;
    None: all six) in the order asked, over a Profile or an nsys SQLite export (read with its
    :class:`ExportFacts`; ``dbfile`` defaults to the path as given, which nsys' skip messages name)."""
    reqs = requests if isinstance(requests, list) else parse_rules(requests, style)  # bad names fail before loading
    if isinstance(source, Profile):
        p = source
    else:
        p = load_nsys_sqlite(source)
        facts = read_export_facts(source) if facts is None else facts
        dbfile = dbfile or str(source)
    read_ahead(p, [r.spec.name for r in reqs if _missing(r.spec, p, facts, style) is None])
    return [run_rule(p, r, facts, style, dbfile) for r in reqs]


# ------------------------------------------------------------------------------------ findings

_FIX = {
    "cuda_memcpy_async": "allocate the host buffers pinned (cudaMallocHost / cudaHostAlloc, tensor.pin_memory())"
                         " so that cudaMemcpyAsync really is asynchronous",
    "cuda_memcpy_sync": "use cudaMemcpyAsync on a stream (with pinned host memory) and synchronize once, later",
    "cuda_memset_sync": "use cudaMemsetAsync on a stream instead of cudaMemset",
    "cuda_api_sync": "synchronize less often: wait on events (cudaStreamWaitEvent) instead of blocking the host,"
                     " and synchronize once per step rather than after every launch",
    "gpu_gaps": "find what the host does in the gaps (CPU sampling, OS runtime traces, NVTX ranges around host"
                " work) and overlap it with GPU work",
    "gpu_time_util": "find what keeps the GPU idle in these regions (CPU sampling, NVTX ranges) and give it more"
                     " work or overlap host work with it",
}


_WHAT = {"cuda_memcpy_async": ("async copy", "async copies", " touching pageable memory"),
         "cuda_memcpy_sync": ("synchronous copy", "synchronous copies", ""),
         "cuda_memset_sync": ("synchronous memset", "synchronous memsets", "")}


def _evidence(r: RuleResult, name: str) -> tuple[str, str, int]:
    """(title, evidence, weight in ns) of one rule's rows; ``N+`` when nsys' row limit cut them."""
    f = r.frame
    assert f is not None
    shown = f"{len(f)}{'+' if 0 < r.row_limit <= len(f) else ''}"  # nsys' row limit cut the list
    total = exact_total(f["Duration (ns)"])
    top = f.iloc[0]
    longest = fmt_ns(int(top["Duration (ns)"]))
    if name in _WHAT:
        one, many, where = _WHAT[name]
        what = (one if len(f) == 1 else many) + where
        kind = f"{top['Src Kind']} to {top['Dst Kind']}" if "Src Kind" in f else f"{top['Memory Kind']} memory"
        return (f"{many[0].upper()}{many[1:]}{where} (nsys {name})",
                f"{shown} {what} moved {fmt_bytes(int(f['Bytes (B)'].sum()))} in {fmt_ns(total)} of GPU time; the "
                f"longest, {top['API Name']} ({kind}, {fmt_bytes(int(top['Bytes (B)']))}), took {longest}", total)
    if name == "cuda_api_sync":
        calls = f["API Name"].astype(str).str.replace(r"_v\d+$", "", regex=True).value_counts()
        listed = ", ".join(f"{c} {api}" for api, c in calls.items())
        return (f"The host blocks in CUDA synchronization calls (nsys {name})",
                f"{shown} calls ({listed}) blocked the host for {fmt_ns(total)}; the longest {longest}", total)
    if name == "gpu_gaps":
        return (f"A GPU sits idle for more than {r.values['gap']} ms at a time (nsys {name})",
                f"{shown} gap(s) totalling {fmt_ns(total)}; the longest {longest}, device {f['Device ID'].iloc[0]} of "
                f"process {f['PID'].iloc[0]}", total)
    used = f["In-Use (%)"].to_numpy(dtype="float64")
    idle = int((f["Duration (ns)"].to_numpy(dtype="float64") * (1 - used / 100)).sum())
    i = int(f["Duration (ns)"].to_numpy().argmax())
    return (f"Long regions with GPU utilization below {r.values['threshold']}% (nsys {name})",
            f"{shown} region(s) totalling {fmt_ns(total)}; the longest, {fmt_ns(int(f['Duration (ns)'].iloc[i]))} on "
            f"device {f['Device ID'].iloc[i]}, was {used[i]:.1f}% in use", idle)


def as_findings(results: list[RuleResult]) -> list[Finding]:
    """nsys' findings as nsighttk :class:`Finding` objects (rule ``nsys:<rule>``), for ``analyze``
    and the HTML report; rules that found nothing or were skipped give none."""
    out = []
    for r in results:
        if r.frame is None or r.frame.empty:
            continue
        title, evidence, weight = _evidence(r, r.spec.name)
        out.append(Finding(f"nsys:{r.spec.name}", title, evidence, _FIX[r.spec.name], weight))
    return out
