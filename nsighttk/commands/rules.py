"""``nsighttk rules``: ``nsys analyze`` without nsys.  The six expert rules of Nsight Systems
(:mod:`nsighttk.analysis.nsys.rules`) with nsys' names, options, rows and bytes, printed as nsys
prints them or written as its ``-o PREFIX`` files (atomically; never over an existing file without
``force_overwrite``).  ``nsys_version="2022.4"`` follows that version's names and output."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import progress, safeio, scratch, toolchain
from nsighttk.analysis.advice import Finding
from nsighttk.analysis.nsys.rules import STYLE_2025, RuleResult, as_findings, parse_rules, run_rules
from nsighttk.collect import nsys as collect_nsys
from nsighttk.errors import UsageError
from nsighttk.load import kind_of
from nsighttk.report import rules_format
from nsighttk.runs.layout import find_capture

FORMATS = rules_format.FORMATS


@dataclass
class Options:
    path: Path
    rules: str | None = None  # nsys' -r text: "rule[:opt=value...],..." (either version's names); None: all six
    fmt: str = "column"  # column (nsys' console default), table, csv, json
    output: str | None = None  # PREFIX: write PREFIX_<rule>[_<opt=value>...].<ext>; None or "-": return the text
    force_overwrite: bool = False
    nsys_version: str = STYLE_2025


@dataclass
class Result:
    results: list[RuleResult]
    text: str | None  # what nsys prints, when not written to files
    paths: list[Path] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"rules": [{"rule": r.name, "options": list(r.args), "title": r.title, "skipped": r.skipped,
                           "rows": None if r.frame is None else len(r.frame)} for r in self.results],
                "files": [str(p) for p in self.paths], "findings": [f.as_dict() for f in self.findings]}


def _targets(opts: Options, tags: list[str]) -> list[Path]:
    """Where each rule goes; every target checked before any work (exists, not a file, ...)."""
    if not opts.output or opts.output == "-":
        return []
    safeio.make_dirs(Path(opts.output).parent, "-o folder")
    targets = []
    for tag in tags:
        out = safeio.check_output(rules_format.output_path(opts.output, tag, opts.fmt), "-o")
        if out.exists() and not opts.force_overwrite:
            raise UsageError(f"{out} already exists", "pass --force-overwrite to replace it, or choose another -o")
        targets.append(out)
    return targets


@contextlib.contextmanager
def _sqlite(capture: Path) -> Iterator[Path]:
    """The SQLite export to read: the file itself, or a ``.nsys-rep`` exported to a temporary folder."""
    kind = kind_of(capture)
    if kind == "nsys-sqlite":
        yield capture
        return
    if kind != "nsys-rep":
        raise UsageError(f"{capture}: not an Nsight Systems capture; the expert rules read nsys exports",
                         "give the .sqlite (or .nsys-rep) nsys wrote")
    nsys = toolchain.find_tool("nsys")
    if not nsys.path:
        raise toolchain.ToolNotFound(f"{capture}: reading .nsys-rep files needs nsys, which is not installed here",
                                     "export it where nsys is (nsys export --type sqlite), then give the .sqlite")
    with scratch.Folder("export-") as tmp:
        with progress.step(f"exporting {capture.name} to SQLite"):
            sqlite = collect_nsys.export_sqlite(nsys.path, capture, tmp.path)
        yield sqlite


def run(opts: Options) -> Result:
    requests = parse_rules(opts.rules, opts.nsys_version)  # a bad rule or option fails before any reading
    if opts.fmt not in FORMATS:
        raise UsageError(f"unknown format {opts.fmt!r}", f"use one of {', '.join(FORMATS)}")
    targets = _targets(opts, [r.file_tag(opts.nsys_version) for r in requests])
    capture = find_capture(opts.path)
    with _sqlite(capture) as sqlite:
        dbfile = str(sqlite if sqlite == capture else capture.with_suffix(".sqlite"))  # the name nsys would use
        results = run_rules(sqlite, requests, style=opts.nsys_version, dbfile=dbfile)
    if not targets:
        return Result(results, rules_format.render_console(results, opts.fmt, dbfile), findings=as_findings(results))
    with safeio.atomic_files() as files:  # all of them or none: never some new and some old
        for r, path in zip(results, targets, strict=True):
            files.write_text(path, rules_format.render(r, opts.fmt))
    return Result(results, None, targets, as_findings(results))
