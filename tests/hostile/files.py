"""Makers of hostile files.  Each maker is ``make(d: Path) -> None`` and writes into the case's own
scratch folder ``d``, derived from the real captures under ``tests/fixtures`` where a real format is
mutated.  Random bytes and bit flips follow each maker's seed mixed with this run's fuzz seed
(:data:`fuzz.bases.SEED`: fresh per run, printed, fixed by ``NSIGHTTK_FUZZ_SEED``)."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

Maker = Callable[[Path], None]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NSYS = FIXTURES / "h200-nsys2025.3" / "add.sqlite"
NSYS_NVTX = FIXTURES / "h200-nsys2025.3" / "streams_demo.sqlite"
NCU_REP = FIXTURES / "h200-ncu2025.3" / "add_grid_b256.ncu-rep"
NCU_CSV = FIXTURES / "h200-ncu2025.3" / "add_grid_b256.details.csv"
NCU_RAW = FIXTURES / "h200-ncu2025.3" / "add_grid_b256.raw.csv"
KINETO = FIXTURES / "h100-torch2.11" / "square" / "trace.json"
KINETO_GZ = FIXTURES / "h100-torch2.11" / "bert_bs1_seq128.trace.json.gz"

#: names every scratch folder gets (the good inputs cases compare against)
GOOD_NSYS = "good.sqlite"
GOOD_KINETO = "good.json"


def _random(seed: int) -> random.Random:
    from fuzz.bases import SEED

    return random.Random(f"{SEED}:{seed}")


def nothing(d: Path) -> None:
    """No input beyond the good ones."""


def good_inputs(d: Path) -> None:
    shutil.copyfile(NSYS, d / GOOD_NSYS)
    shutil.copyfile(KINETO, d / GOOD_KINETO)


def data(name: str, content: bytes | str) -> Maker:
    def make(d: Path) -> None:
        (d / name).write_bytes(content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content)
    return make


def copy(name: str, src: Path) -> Maker:
    def make(d: Path) -> None:
        shutil.copyfile(src, d / name)
    return make


def head(name: str, src: Path, n: int) -> Maker:
    """The first ``n`` bytes of ``src`` (negative: all but the last ``-n``)."""
    def make(d: Path) -> None:
        raw = src.read_bytes()
        (d / name).write_bytes(raw[:n])
    return make


def flipped(name: str, src: Path, offsets: tuple[int, ...], seed: int = 0) -> Maker:
    """``src`` with bytes at ``offsets`` (fractions of the size when < 1) XOR-ed with random bits."""
    def make(d: Path) -> None:
        raw = bytearray(src.read_bytes())
        rnd = _random(seed)
        for off in offsets:
            i = int(off * len(raw)) if off < 1 else int(off)
            raw[i % len(raw)] ^= rnd.randrange(1, 256)
        (d / name).write_bytes(bytes(raw))
    return make


def randbytes(name: str, n: int, seed: int = 1, prefix: bytes = b"") -> Maker:
    def make(d: Path) -> None:
        (d / name).write_bytes(prefix + _random(seed).randbytes(n))
    return make


def fifo(name: str) -> Maker:
    def make(d: Path) -> None:
        os.mkfifo(d / name)
    return make


def folder(name: str) -> Maker:
    def make(d: Path) -> None:
        (d / name).mkdir(parents=True)
    return make


def symlink(name: str, target: str) -> Maker:
    def make(d: Path) -> None:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, d / name)
    return make


def symlink_loop(name: str) -> Maker:
    def make(d: Path) -> None:
        os.symlink(f"{name}.loop", d / name)
        os.symlink(name, d / f"{name}.loop")
    return make


def unreadable(name: str, src: Path) -> Maker:
    def make(d: Path) -> None:
        shutil.copyfile(src, d / name)
        os.chmod(d / name, 0)
    return make


def sparse(name: str, size: int = 64 * 2**30) -> Maker:
    """A huge file that takes no disk: 64 GiB of holes."""
    def make(d: Path) -> None:
        with open(d / name, "wb") as fh:
            fh.truncate(size)
    return make


def gz(name: str, content: bytes) -> Maker:
    def make(d: Path) -> None:
        (d / name).write_bytes(gzip.compress(content, compresslevel=9, mtime=0))
    return make


def gz_zeros(name: str, n: int) -> Maker:
    """A gzip bomb: ``n`` bytes of spaces inside a JSON string, compressed a thousandfold."""
    def make(d: Path) -> None:
        with gzip.open(d / name, "wb", compresslevel=9) as fh:
            fh.write(b'{"traceEvents": [], "x": "')
            chunk = b" " * 2**20
            for _ in range(n // len(chunk)):
                fh.write(chunk)
            fh.write(b'"}')
    return make


def both(*makers: Maker) -> Maker:
    def make(d: Path) -> None:
        for m in makers:
            m(d)
    return make


# ------------------------------------------------------------------------ nsys SQLite mutations

def nsys_sql(name: str, *statements: str, src: Path = NSYS) -> Maker:
    """A copy of a real nsys export changed by SQL (a table dropped, a column's values replaced)."""
    change = plain_sqlite(name, *statements)

    def make(d: Path) -> None:
        shutil.copyfile(src, d / name)
        change(d)
    return make


#: the start of an executable: bytes that are not text in any encoding
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + bytes(range(256)) * 16


def append(name: str, content: bytes) -> Maker:
    def make(d: Path) -> None:
        with (d / name).open("ab") as fh:
            fh.write(content)
    return make


def schema_not_utf8(name: str) -> Maker:
    """An entry in the SQLite file's schema whose name and SQL are not UTF-8: SQLite's own error
    message quotes them (and Python's sqlite3 cannot decode it)."""
    def make(d: Path) -> None:
        conn = sqlite3.connect(d / name)
        try:
            conn.execute("PRAGMA writable_schema = ON")
            conn.execute("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES "
                         "('table', CAST(X'78FF79' AS TEXT), 'x', 0, CAST(X'435245415445205441424C4520FF28' AS TEXT))")
            conn.commit()
        finally:
            conn.close()
    return make


def huge_names(name: str, src: Path, size: int) -> Maker:
    """A copy of the export ``src`` whose kernel and CUDA API names are each ``size`` characters
    (C++-like, with commas and blanks; distinct by their last characters)."""
    def make(d: Path) -> None:
        shutil.copyfile(src, d / name)
        conn = sqlite3.connect(d / name)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            ids: set[int] = set()
            for table, cols in (("CUPTI_ACTIVITY_KIND_KERNEL", ("shortName", "demangledName")),
                                ("CUPTI_ACTIVITY_KIND_RUNTIME", ("nameId",))):
                if table in tables:
                    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
                    for c in (c for c in cols if c in have):
                        ids |= {r[0] for r in conn.execute(f"SELECT DISTINCT {c} FROM {table}")
                                if isinstance(r[0], int)}
            unit = "void k<float, T>, "
            body = unit * (size // len(unit))
            for i, sid in enumerate(sorted(ids)[:40]):  # (the rest keep theirs: a file of at most 40 MiB)
                conn.execute("UPDATE StringIds SET value = ? WHERE id = ?", (body + str(i), sid))
            conn.commit()
        finally:
            conn.close()
    return make


def plain_sqlite(name: str, *statements: str) -> Maker:
    def make(d: Path) -> None:
        conn = sqlite3.connect(d / name)
        try:
            for s in statements:
                conn.execute(s)
            conn.commit()
        finally:
            conn.close()
    return make


# --------------------------------------------------------------------------------- Kineto JSON

def kineto_events(events: list[object], extra: dict[str, object] | None = None) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": events, **(extra or {})}).encode()


def kineto_with(fname: str, **changes: object) -> Maker:
    """The real square trace with every event's fields in ``changes`` replaced."""
    def make(d: Path) -> None:
        doc = json.loads(KINETO.read_bytes())
        for ev in doc["traceEvents"]:
            if isinstance(ev, dict):
                ev.update(changes)
        (d / fname).write_text(json.dumps(doc))
    return make


# ----------------------------------------------------------------------------- run directories

def run_json(name: str = "x", **fields: object) -> dict[str, object]:
    rec: dict[str, object] = {"nsighttk_version": "0.1", "tool": "nsys", "workload": "add", "target": "add",
                              "started_utc": "2026-11-22T10:00:00+00:00", "finished_utc": "2026-11-22T10:00:01+00:00",
                              "status": "ok", "wall_s": 1.0, "run_dir": name, "timings_s": {}}
    rec.update(fields)
    return rec


def run_dir(rel: str, manifest: bytes | dict[str, object] | None, capture: Maker | None = None) -> Maker:
    """A run directory ``rel`` (may be nested in a reports folder) with ``run.json`` (bytes as
    given, a dict as JSON, None for none) and ``raw/`` holding ``capture`` (default: add.sqlite)."""
    def make(d: Path) -> None:
        rd = d / rel
        (rd / "raw").mkdir(parents=True)
        if manifest is not None:
            body = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
            (rd / "run.json").write_bytes(body)
        (capture or copy("x.sqlite", NSYS))(rd / "raw")
    return make


def runs_db(name: str, rows: list[dict[str, object]] | None = None) -> Maker:
    """A real runs database made by nsighttk itself, with ``rows`` recorded."""
    def make(d: Path) -> None:
        from nsighttk.runs.db import RunsDB

        db = RunsDB(d / name)
        for r in rows or [run_json("20261122T100000Z-nsys-add", run_dir=str(d / "runs" / "20261122T100000Z-nsys-add"))]:
            db.record(r)
        db.db.conn.close()
    return make
