"""Run ``nsys profile`` and ``nsys export``: command lines, logs and artifact paths; no parsing
of the capture itself (that is :mod:`nsighttk.load.nsys_sqlite`).

Defaults keep captures small and need no extra privileges: ``--trace cuda,nvtx,osrt
--sample none --cpuctxsw none``.  Options the user passes through replace our defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from nsighttk.collect import run_logged as _stream
from nsighttk.errors import ProfilerFailed, UsageError
from nsighttk.toolchain import check_importer

DEFAULT_TRACE = "cuda,nvtx,osrt"

_IMPORTER_FAILED = re.compile(r"Importer error status|skipping importation of the QDSTRM file", re.I)
_TARGET_RC = re.compile(r"returned non-zero exit code[:\s]+(-?\d+)", re.I)


@dataclass
class NsysOptions:
    trace: str = DEFAULT_TRACE
    sample: str = "none"
    cpuctxsw: str = "none"
    extra: list[str] = field(default_factory=list)  # passed through to `nsys profile` as given
    timeout_s: float | None = None
    pytorch: str | None = None  # nsys --pytorch: automatic NVTX ranges for PyTorch ops (see PYTORCH_MODES)
    export_sqlite: bool = True  # --export sqlite in the same `nsys profile`


#: nsys' ``--pytorch`` modes (nsys 2025.3's help): NVTX ranges for every autograd op (nsys calls
#: ``torch.autograd.profiler.emit_nvtx`` when torch is imported; "shapes" adds input shapes), or
#: Python function ranges for torch functions, or both; no annotation of the user's script needed.
PYTORCH_MODES = ("autograd-nvtx", "autograd-shapes-nvtx", "functions-trace", "autograd-nvtx,functions-trace",
                 "autograd-shapes-nvtx,functions-trace")


@dataclass
class NsysCapture:
    command: list[str]
    nsys_rc: int
    target_rc: int | None
    rep: Path | None
    qdstrm: Path | None
    log: Path
    sqlite: Path | None = None  # exported by the same `nsys profile` (--export sqlite)


def _user_sets(extra: list[str], *names: str) -> bool:
    return any(a == n or a.startswith(n + "=") for a in extra for n in names)


def profile_command(nsys: str, output_base: Path, target: list[str], options: NsysOptions) -> list[str]:
    """``nsys profile`` as a list; user flags in ``options.extra`` win over our defaults."""
    cmd = [nsys, "profile"]
    if not _user_sets(options.extra, "-t", "--trace"):
        cmd += ["--trace", options.trace]
    if not _user_sets(options.extra, "-s", "--sample"):
        cmd += ["--sample", options.sample]
    if not _user_sets(options.extra, "--cpuctxsw"):
        cmd += ["--cpuctxsw", options.cpuctxsw]
    if options.pytorch and not _user_sets(options.extra, "--pytorch"):
        cmd.append(f"--pytorch={options.pytorch}")
    if options.export_sqlite and not _user_sets(options.extra, "--export"):
        cmd += ["--export", "sqlite"]  # one nsys run profiles and exports (no second start of nsys)
    cmd += [*options.extra, "--output", str(output_base), "--force-overwrite", "true", *target]
    return cmd


def export_command(nsys: str, rep: Path, sqlite: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(sqlite), str(rep)]


def profile(nsys: str, raw: Path, target: list[str], options: NsysOptions, echo: bool = True) -> NsysCapture:
    """Run ``nsys profile`` into ``raw/profile.nsys-rep``; keep its log; explain importer failures."""
    base = raw / "profile"
    cmd = profile_command(nsys, base, target, options)
    log = raw / "nsys-profile.log"
    rc, out = _stream(cmd, log, options.timeout_s, echo)
    rep = base.with_suffix(".nsys-rep")
    qdstrms = sorted(raw.glob("*.qdstrm"))
    # nsys 2025 returns the profiled program's exit code (and writes the report anyway); some
    # versions print "returned non-zero exit code N" instead.
    m = _TARGET_RC.search(out)
    target_rc = int(m.group(1)) if m else (rc if rep.is_file() else None)
    sqlite = base.with_suffix(".sqlite")
    capture = NsysCapture(cmd, rc, target_rc, rep if rep.is_file() else None, qdstrms[0] if qdstrms else None, log,
                          sqlite if sqlite.is_file() else None)
    if capture.rep is None:
        if _IMPORTER_FAILED.search(out) or capture.qdstrm is not None:
            check = check_importer(nsys)
            why = (f"QdstrmImporter cannot load {', '.join(check.missing)}" if check.missing
                   else "nsys's importer failed")
            kept = f"; the raw capture is kept at {capture.qdstrm}" if capture.qdstrm else ""
            raise ProfilerFailed(f"nsys could not turn the capture into a report: {why}{kept}",
                                 check.hint or f"see {log}")
        last = [ln for ln in out.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        raise ProfilerFailed(f"nsys profile failed (exit {rc}): {last[0].strip()}", f"see {log}")
    return capture


def export_sqlite(nsys: str, rep: Path, out_dir: Path) -> Path:
    """``nsys export --type sqlite`` next to the report (in our own directory)."""
    sqlite = out_dir / (rep.stem + ".sqlite")
    log = out_dir / "nsys-export.log"
    rc, out = _stream(export_command(nsys, rep, sqlite), log, None, echo=False)
    if rc != 0 or not sqlite.is_file():
        last = [ln for ln in out.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        raise ProfilerFailed(f"nsys export failed on {rep.name} (exit {rc}): {last[0].strip()}", f"see {log}")
    return sqlite


# ------------------------------------------------------------------------------ one capture per rank

#: the environment variable holding a process's rank, per launcher (nsys expands ``%q{VAR}``)
RANK_VARS = {"srun": "SLURM_PROCID", "torchrun": "RANK", "torch.distributed.run": "RANK",
             "mpirun": "OMPI_COMM_WORLD_RANK", "mpiexec": "OMPI_COMM_WORLD_RANK", "jsrun": "OMPI_COMM_WORLD_RANK"}


def rank_var(launcher: list[str], mpi_flavour: str | None = None) -> str | None:
    """Which variable numbers the ranks under ``launcher`` (None: unknown, ask for --rank-var).
    ``mpi_flavour``: the first line of ``mpirun --version`` (MPICH / Intel MPI use ``PMI_RANK``)."""
    for tok in launcher:
        name = Path(tok).name
        if name in RANK_VARS or tok in RANK_VARS:
            var = RANK_VARS.get(name) or RANK_VARS[tok]
            if var == "OMPI_COMM_WORLD_RANK" and mpi_flavour and "open mpi" not in mpi_flavour.lower():
                return "PMI_RANK"
            return var
    return None


def rank_wrapper(out_dir: Path, var: str) -> list[str]:
    """``sh -c SCRIPT OUT``: what each rank runs under nsys in front of its command, so that the
    command's output goes to ``OUT/rank$VAR.log`` and its exit status to ``OUT/rank$VAR.status``
    (nsys' own messages stay in the launcher's output).  The shell waits for the command and exits
    with its status; nsys profiles the process tree, the command's processes included."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
        raise UsageError(f"--rank-var {var!r}: not an environment variable name", "e.g. --rank-var RANK")
    rank = f"$0/rank${{{var}}}"
    return ["sh", "-c", f'"$@" >"{rank}.log" 2>&1; s=$?; echo "$s" >"{rank}.status"; exit "$s"', str(out_dir)]


def per_rank_command(nsys: str, launcher: list[str], out_dir: Path, target: list[str], var: str,
                     options: NsysOptions, logs: bool = False) -> list[str]:
    """``LAUNCHER nsys profile ... -o OUT/rank%q{VAR} --export sqlite TARGET``: every process the
    launcher starts profiles itself into its own report, named by its rank; with ``logs``, TARGET
    runs under :func:`rank_wrapper`, which keeps each rank's output and exit status in OUT."""
    opts = NsysOptions(options.trace, options.sample, options.cpuctxsw, list(options.extra), options.timeout_s,
                       options.pytorch, export_sqlite=True)
    run = [*rank_wrapper(out_dir, var), *target] if logs else target
    return [*launcher, *profile_command(nsys, out_dir / f"rank%q{{{var}}}", run, opts)]


@dataclass
class RankRun:
    """What ``profile_ranks`` left: the launcher's command and exit code, the ranks' exports, and per
    rank (``rank0``, ``rank1`` ...) its output and exit status as :func:`rank_wrapper` kept them."""

    command: list[str]
    rc: int
    sqlites: list[Path]
    log: Path  # the launcher's own output (nsys' messages included)
    rank_logs: dict[str, Path] = field(default_factory=dict)
    rank_status: dict[str, int | None] = field(default_factory=dict)  # None: the rank wrote no status
    missing: list[str] = field(default_factory=list)  # why a rank's report could not be exported

    def failed(self) -> dict[str, int | None]:
        """The ranks that exited non-zero or left no status, in rank order."""
        return {r: s for r, s in self.rank_status.items() if s != 0}


def _rank_key(name: str) -> tuple[int, str]:
    digits = name.removeprefix("rank")
    return (int(digits), "") if digits.isdigit() else (1 << 62, name)


def tail(path: Path, lines: int = 10, max_bytes: int = 1 << 16) -> list[str]:
    """The last ``lines`` non-empty lines of a text file, reading at most its last ``max_bytes`` (a line
    cut there is left out)."""
    try:
        with path.open("rb") as fh:
            start = max(0, fh.seek(0, 2) - max_bytes)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return []
    text = (data if start == 0 else data[data.find(b"\n") + 1:]).decode(errors="replace")
    return [ln.rstrip() for ln in text.splitlines() if ln.strip()][-lines:]


def profile_ranks(nsys: str, raw: Path, launcher: list[str], target: list[str], var: str, options: NsysOptions,
                  echo: bool = True) -> RankRun:
    """Run the launcher with nsys and :func:`rank_wrapper` per rank; one .sqlite per rank that left a
    report (exported if nsys did not; a report that cannot be exported is named in ``missing``)."""
    cmd = per_rank_command(nsys, launcher, raw, target, var, options, logs=True)
    log = raw / "nsys-profile.log"
    rc, _ = _stream(cmd, log, options.timeout_s, echo)
    run = RankRun(cmd, rc, [], log)
    for rep in sorted(raw.glob("rank*.nsys-rep"), key=lambda r: _rank_key(r.stem)):
        sq = rep.with_suffix(".sqlite")
        try:
            run.sqlites.append(sq if sq.is_file() else export_sqlite(nsys, rep, raw))
        except ProfilerFailed as ex:
            run.missing.append(ex.message)
    for rank_log in sorted(raw.glob("rank*.log"), key=lambda r: _rank_key(r.stem)):
        run.rank_logs[rank_log.stem] = rank_log
        try:
            text = rank_log.with_suffix(".status").read_text().strip()
        except OSError:
            text = ""
        run.rank_status[rank_log.stem] = int(text) if re.fullmatch(r"-?\d+", text) else None
    return run
