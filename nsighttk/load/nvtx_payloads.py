"""NCCL's NVTX payloads in an nsys export: each collective call's message size, and the rank count
of its communicator.

NCCL (2.19 and later) annotates its calls with NVTX ranges (``ncclAllReduce``, ``ncclBroadcast``,
...) that carry an extended payload.  The export describes each payload's layout in
``NVTX_PAYLOAD_SCHEMA_ENTRIES`` (per domain and schema: each field's name, type and offset) and
keeps its bytes in ``NVTX_EVENTS.binaryData`` only when exported with
``nsys export --include-blobs=true`` (a plain export leaves the column empty).  A blob is a
little-endian u64 count of payloads, then per payload its schema id, size and offset (u64 each,
the offset from the blob's start), then the data.

The fields read: ``Message size [bytes]`` and ``NCCL communicator ID`` of each call, and
``No. of ranks`` of the communicator's own ranges (``ncclCommInitRankConfig``), joined by the
communicator's id.  A blob that does not parse (short, an offset outside it, a schema the export
does not describe) is passed by: its range has no size.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

#: NVTX payload entry types read, by their number in nvToolsExtPayload.h: struct format (little-endian).
_FORMATS = {5: "<i", 6: "<I", 9: "<q", 10: "<Q", 15: "<i", 16: "<I", 17: "<q", 18: "<Q", 22: "<Q"}
#: The payload fields read, by the name NCCL gives them.
MESSAGE, COMM, RANKS = "Message size [bytes]", "NCCL communicator ID", "No. of ranks"

Query = Callable[[str], list[tuple[Any, ...]]]


def nccl_sizes(query: Query, tables: set[str], event_columns: list[str]) -> dict[int, tuple[int, int | None]]:
    """Per NVTX_EVENTS rowid of a range whose payload gives a message size: the size in bytes and
    its communicator's rank count (None where no range of the communicator gives it).  Empty where
    the export describes no such field or kept no blobs."""
    if "NVTX_PAYLOAD_SCHEMA_ENTRIES" not in tables or "binaryData" not in event_columns:
        return {}
    fields: dict[tuple[int, int], dict[str, tuple[str, int]]] = {}
    for domain, schema, name, kind, offset in query(
            "SELECT domainId, schemaId, name, type, offset FROM NVTX_PAYLOAD_SCHEMA_ENTRIES "
            f"WHERE name IN ('{MESSAGE}', '{COMM}', '{RANKS}')"):
        fmt = _FORMATS.get(kind) if isinstance(kind, int) else None
        if fmt is not None and isinstance(schema, int) and isinstance(domain, int):
            fields.setdefault((domain, schema), {})[str(name)] = (fmt, int(offset or 0))
    if not any(MESSAGE in f for f in fields.values()):
        return {}
    calls: dict[int, tuple[int, int | None]] = {}  # rowid: (bytes, communicator)
    ranks: dict[int, int] = {}
    domain_col = '"domainId"' if "domainId" in event_columns else "0"
    for rowid, domain, blob in query(f'SELECT rowid, {domain_col}, "binaryData" FROM NVTX_EVENTS '
                                     'WHERE "binaryData" IS NOT NULL'):
        if not isinstance(blob, bytes):
            continue
        for values in _payloads(blob, fields, domain if isinstance(domain, int) else 0):
            if MESSAGE in values:
                calls[int(rowid)] = (values[MESSAGE], values.get(COMM))
            elif RANKS in values and COMM in values:
                ranks[values[COMM]] = values[RANKS]
    return {r: (size, ranks.get(comm) if comm is not None else None) for r, (size, comm) in calls.items()}


def _payloads(blob: bytes, fields: dict[tuple[int, int], dict[str, tuple[str, int]]],
              domain: int) -> list[dict[str, int]]:
    """The fields read of each payload in ``blob`` (none where it does not parse)."""
    out = []
    try:
        (count,) = struct.unpack_from("<Q", blob, 0)
        if count > 64:  # (no NCCL range carries more: a damaged blob)
            return []
        for i in range(count):
            schema, size, offset = struct.unpack_from("<QQQ", blob, 8 + 24 * i)
            layout = fields.get((domain, schema))
            if layout is None or offset + size > len(blob):
                continue
            values = {}
            for name, (fmt, at) in layout.items():
                if at + struct.calcsize(fmt) <= size:
                    (values[name],) = struct.unpack_from(fmt, blob, offset + at)
            out.append(values)
    except struct.error:
        return []
    return out
