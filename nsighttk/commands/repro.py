"""``nsighttk repro CAPTURE``: the hot ops of a profile as runnable workloads.

The capture's ops with their recorded arguments (:mod:`nsighttk.analysis.torch_shapes`) are
matched against PyTorch's schemas (:func:`nsighttk.workload.replay.resolve`) and written as
workload files plus ``index.md`` (:mod:`nsighttk.report.repro`) into one folder, all of them or
none (:func:`nsighttk.safeio.atomic_files`).  A file already there is replaced only when repro
wrote it, or with ``force``.  Inductor kernels (``triton_*``) get the Inductor output code that
defines them, where it can be found (the folders given, ``$TORCHINDUCTOR_CACHE_DIR``, Inductor's
default cache, and the output code ``nsighttk inspect`` keeps), else the reason.
"""

from __future__ import annotations

import contextlib
import getpass
import importlib.util
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import safeio, toolchain
from nsighttk.analysis.torch_shapes import HOW_TO_RECORD, NoShapes, hot_ops
from nsighttk.commands.analyze import load_capture
from nsighttk.errors import InputFileError, UsageError
from nsighttk.escape import term
from nsighttk.report.repro import INDEX, MARK, Repro, file_name, index_markdown, workload_source
from nsighttk.settings import Settings, current
from nsighttk.workload.replay import ReplayError, resolve

#: at most this many Python files are read when looking for Inductor output code
MAX_CODE_FILES = 20_000


@dataclass
class Options:
    capture: Path
    top: int = 5
    op: str | None = None
    output: Path | None = None  # default: <reports root>/repro-<capture name>
    force: bool = False
    inductor_code: list[Path] = field(default_factory=list)


@dataclass
class Result:
    capture: Path
    output: Path
    repros: list[Repro]
    total_device_ns: int

    def as_dict(self) -> dict[str, Any]:
        return {"capture": str(self.capture), "output": str(self.output), "total_device_ns": self.total_device_ns,
                "index": str(self.output / INDEX), "ops": [r.as_dict() for r in self.repros]}


def code_places(extra: list[Path], settings: Settings) -> list[tuple[Path, str]]:
    """Where Inductor output code may be, each with the glob of its modules: the folders given,
    ``$TORCHINDUCTOR_CACHE_DIR``, Inductor's default cache (``<tmp>/torchinductor_<user>``), and
    the ``output_code`` folders of ``nsighttk inspect`` runs."""
    places = [(d, "**/*.py") for d in extra]
    env = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if env:
        places.append((Path(env), "**/*.py"))
    with contextlib.suppress(KeyError, OSError):  # getuser() fails without a user name
        places.append((Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}", "**/*.py"))
    places.append((settings.reports_root, "*/*/output_code/*.py"))
    return [(d, g) for d, g in dict.fromkeys(places) if safeio.is_dir(d)]


def find_inductor_code(kernel: str, places: list[tuple[Path, str]]) -> dict[str, Any]:
    """The Inductor output code module defining ``kernel``: its path, the kernel's Triton source,
    the lines launching it and the compiled graph's inputs; or ``{"why_not": ...}``."""
    needle = f"async_compile.triton('{kernel}'"
    seen = 0
    for d, pattern in places:
        for path in sorted(d.glob(pattern)):
            seen += 1
            if seen > MAX_CODE_FILES:
                break
            try:
                if path.stat().st_size > 16 << 20:
                    continue
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if needle not in text:
                continue
            start = text.index(needle)
            body_start = text.find("'''", start)
            body_end = text.find("'''", body_start + 3)
            source = text[body_start + 3:body_end] if body_start >= 0 and body_end > body_start else ""
            launches = [ln.strip() for ln in text.splitlines() if f"{kernel}.run(" in ln]
            inputs = [ln.strip() for ln in text.splitlines() if "rand_strided(" in ln and "=" in ln]
            return {"path": str(path), "source": source.strip("\n"), "launch": launches, "inputs": inputs}
    where = ", ".join(str(d) for d, _ in places) or "no Inductor cache folder here"
    return {"why_not": f"an Inductor kernel, and no Inductor output code defining it was found (looked in {where}); "
                       "run the program again with TORCHINDUCTOR_CACHE_DIR=DIR and pass --inductor-code DIR"}


def _check_outputs(folder: Path, names: list[str], force: bool) -> None:
    for name in names:
        p = folder / name
        if not os.path.lexists(p):
            continue
        safeio.check_output(p, "-o")
        if not force and MARK.encode() not in safeio.read_head(p, 512):
            raise UsageError(f"{p} exists and was not written by nsighttk repro", "choose another -o, or pass --force")


def run(opts: Options, settings: Settings | None = None) -> Result:
    settings = settings or current()
    if opts.top < 1:
        raise UsageError(f"--top {opts.top}: at least one op", "e.g. --top 5")
    capture, p = load_capture(opts.capture)
    try:
        hot = hot_ops(p, opts.top, opts.op)
    except NoShapes:
        raise InputFileError(f"{capture.name}: the trace has no op shapes", HOW_TO_RECORD) from None
    if not hot:
        what = f"no op named {opts.op!r} with device or CPU time" if opts.op else "no op with device or CPU time"
        raise UsageError(f"{capture.name}: {what}", "nsighttk analyze CAPTURE lists the ops")
    if importlib.util.find_spec("torch") is None:
        raise toolchain.ToolNotFound("repro matches ops against PyTorch's schemas, and PyTorch is not installed",
                                     "pip install 'nsighttk[torch]'")
    output = opts.output or settings.reports_root / f"repro-{safeio.safe_filename(capture.name, 60)}"
    total = int(sum(int(t["duration_ns"].sum()) for t in (p.kernels, p.memcpy, p.memset) if len(t)))
    repros: list[Repro] = []
    places: list[tuple[Path, str]] | None = None
    for rank, h in enumerate(hot, 1):
        r = Repro(rank, h)
        repros.append(r)
        if h.inductor:
            places = code_places(opts.inductor_code, settings) if places is None else places
            kernel = h.op if h.op.startswith("triton_") else h.kernels[0]
            r.inductor = find_inductor_code(kernel, places)
            if "path" in r.inductor:
                r.inductor["file"] = _inductor_name(r)
                r.why_not = f"an Inductor kernel: its Triton source and launch are in {r.inductor['file']}"
            else:
                r.why_not = r.inductor["why_not"]
            continue
        if h.problems:
            r.why_not = "; ".join(h.problems)
            continue
        try:
            r.call = resolve(h.op, [a.as_dict() for a in h.args])
        except ReplayError as ex:
            r.why_not = str(ex)
            continue
        r.file = file_name(rank, h.op)
    safeio.check_output(output / INDEX, "-o")
    folder = safeio.make_dirs(output, "-o")
    names = [r.file for r in repros if r.file] + [INDEX]
    names += [_inductor_name(r) for r in repros if "source" in r.inductor]
    _check_outputs(folder, names, opts.force)
    with safeio.atomic_files() as files:
        for r in repros:
            if r.file:
                files.write_text(folder / r.file, workload_source(r, capture.name))
            if "source" in r.inductor:
                files.write_text(folder / _inductor_name(r), _inductor_text(r))
        files.write_text(folder / INDEX, index_markdown(capture.name, repros, total, str(output)))
    return Result(capture, output, repros, total)


def _inductor_name(r: Repro) -> str:
    return file_name(r.rank, r.hot.op).removesuffix(".py") + ".triton.txt"


def _inductor_text(r: Repro) -> str:
    i = r.inductor
    return "\n".join([f"# {MARK}: the Inductor kernel {term(r.hot.op)} as found in {term(i['path'])}",
                      "# launched there as:", *[f"#   {term(ln)}" for ln in i["launch"]],
                      "# with the compiled graph's inputs:", *[f"#   {term(ln)}" for ln in i["inputs"]],
                      f"# (the whole module runs and times the compiled graph: python {term(i['path'])})", "",
                      i["source"], ""])
