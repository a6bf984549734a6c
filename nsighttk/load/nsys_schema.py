"""What an nsys SQLite export holds and how nsighttk reads it: table and column names, CUPTI's
enums, the NVTX event types and the SQL rules every reader applies (durations, range bounds).

Plain Python (no numpy): the readers (:mod:`nsighttk.load.nsys_sqlite`,
:mod:`nsighttk.load.nsys_nvtx`) follow these definitions.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

SQLITE_MAGIC = b"SQLite format 3\x00"

# CUPTI's memcpy kinds (CUpti_ActivityMemcpyKind): stable across nsys versions.
MEMCPY_KINDS = {
    0: ("Unknown", "Unknown"), 1: ("HtoD", "Host-to-Device"), 2: ("DtoH", "Device-to-Host"),
    3: ("HtoA", "Host-to-Array"), 4: ("AtoH", "Array-to-Host"), 5: ("AtoA", "Array-to-Array"),
    6: ("AtoD", "Array-to-Device"), 7: ("DtoA", "Device-to-Array"), 8: ("DtoD", "Device-to-Device"),
    9: ("HtoH", "Host-to-Host"), 10: ("PtoP", "Peer-to-Peer"),
    11: ("UVM_HtoD", "Unified Host-to-Device"), 12: ("UVM_DtoH", "Unified Device-to-Host"),
    13: ("UVM_DtoD", "Unified Device-to-Device"),
}
MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed",
             5: "Device Static", 6: "Managed Static", 7: "Unknown"}

# NVTX event types in NVTX_EVENTS.eventType
NVTX_PUSHPOP, NVTX_STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND, NVTX_DOMAIN_CREATE = 59, 60, 70, 71, 75
NVTX_RANGE_TYPES = (NVTX_PUSHPOP, NVTX_STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND)
NVTX_PUSHPOP_TYPES = (NVTX_PUSHPOP, NVTXT_PUSHPOP)
NVTX_WHERE = f"eventType IN ({', '.join(map(str, NVTX_RANGE_TYPES))})"
#: The process part of a globalTid (what a domain's name is scoped to).
GLOBAL_PROCESS_BITS = 0x0000FFFFFF000000

#: The last NVTX timestamp of any event, and of ranges: where ranges never closed end, as nsys.  One
#: scan: ``max(CASE WHEN range THEN x END)`` is ``max(x)`` over the ranges (NULLs are ignored by both).
NVTX_BOUNDS_SQL = (f"SELECT max(max(start), max(\"end\")), "
                   f"max(max(CASE WHEN {NVTX_WHERE} THEN start END), max(CASE WHEN {NVTX_WHERE} THEN \"end\" END)) "
                   f"FROM NVTX_EVENTS")

# Tables whose presence marks a file as an Nsight Systems export.
NSYS_MARKERS = ("StringIds", "TARGET_INFO_SESSION_START_TIME", "META_DATA_EXPORT", "TARGET_INFO_GPU",
                "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS")

_IDS = {"device_id": "deviceId", "context_id": "contextId", "green_context_id": "greenContextId",
        "stream_id": "streamId", "correlation_id": "correlationId", "global_pid": "globalPid"}

#: Profile table -> (export table, {Profile column: export column}) for the columns read as they are.
EVENT_TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "kernels": ("CUPTI_ACTIVITY_KIND_KERNEL", {
        "start_ns": "start", "end_ns": "end", "name_id": "demangledName", **_IDS,
        "grid_x": "gridX", "grid_y": "gridY", "grid_z": "gridZ",
        "block_x": "blockX", "block_y": "blockY", "block_z": "blockZ",
        "registers_per_thread": "registersPerThread", "static_smem_bytes": "staticSharedMemory",
        "dynamic_smem_bytes": "dynamicSharedMemory", "_short_id": "shortName", "_mangled_id": "mangledName"}),
    "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", {
        "start_ns": "start", "end_ns": "end", "bytes": "bytes", "_copy_kind": "copyKind",
        "_src": "srcKind", "_dst": "dstKind", **_IDS}),
    "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", {
        "start_ns": "start", "end_ns": "end", "bytes": "bytes", "value": "value", "_mem": "memKind", **_IDS}),
    "api": ("CUPTI_ACTIVITY_KIND_RUNTIME", {
        "start_ns": "start", "end_ns": "end", "name_id": "nameId", "correlation_id": "correlationId",
        "global_tid": "globalTid", "return_value": "returnValue"}),
}

#: Duration expression: NULL unless both ends are numbers and the event does not end before it starts
#: (a text end makes it negative, which is refused too); reading it tells which rows are sound.
DURATION_SQL = '("end" - "start") / ("end" >= "start")'


def decode_text(raw: bytes) -> str:
    """Text as both readers decode SQLite's UTF-8 (invalid bytes replaced: names still load)."""
    return raw.decode("utf-8", "replace")


def readonly_uri(path: Path) -> str:
    """``file:`` URI opening ``path`` read-only and immutable (SQLite never writes or locks it).
    The path's bytes are quoted, so a name the locale could not decode (held as surrogates) opens."""
    return "file:" + urllib.parse.quote(os.fsencode(path.resolve())) + "?mode=ro&immutable=1"


def nvtx_domain_names(query: Callable[[str], list[tuple[Any, ...]]], text_id: bool,
                      has_text: bool) -> dict[tuple[int, int], str]:
    """(domain id, process bits of the thread) -> the name its creation event gave, as nsys
    matches them (the first creation in time); ``query`` runs SQL on the export, ``text_id``:
    NVTX_EVENTS has textId and the export StringIds, ``has_text``: NVTX_EVENTS has text."""
    text = "coalesce((SELECT value FROM StringIds AS s WHERE s.id = ne.textId LIMIT 1), ne.text)" \
        if text_id else "ne.text" if has_text else "NULL"
    rows = query(f"SELECT ne.domainId, ne.globalTid, {text}, ne.start FROM NVTX_EVENTS AS ne "
                 f"WHERE ne.eventType == {NVTX_DOMAIN_CREATE} ORDER BY ne.start, ne.rowid")
    names: dict[tuple[int, int], str] = {}
    for d, g, t, _ in rows:
        if isinstance(d, int) and isinstance(g, int) and isinstance(t, str):
            names.setdefault((d, g & GLOBAL_PROCESS_BITS), t)
    return names
