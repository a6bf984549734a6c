"""Run Nsight Compute (``ncu``): the command line as a list, the log kept, common failures
explained in one line.  Parsing the report is :mod:`nsighttk.load.ncu`'s job."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from nsighttk.collect import run_logged
from nsighttk.errors import ProfilerFailed


@dataclass
class NcuOptions:
    section_set: str = "full"
    kernel: str | None = None  # -k, passed as given ("regex:add" or a plain name)
    nvtx_include: list[str] = field(default_factory=list)
    count: int | None = None  # -c
    clock_control: str = "base"
    extra: list[str] = field(default_factory=list)
    timeout_s: float | None = None


@dataclass
class NcuCapture:
    command: list[str]
    ncu_rc: int
    target_rc: int | None
    rep: Path
    log: Path


_NO_KERNELS = re.compile(r"No kernels were profiled", re.I)
_PERM = re.compile(r"ERR_NVGPUCTRPERM", re.I)
_APP_RC = re.compile(r"application returned an error code \((-?\d+)\)", re.I)


def ncu_command(ncu: str, output_base: Path, target: list[str], options: NcuOptions) -> list[str]:
    """``ncu`` as a list; filters are passed through exactly as given."""
    cmd = [ncu, "--set", options.section_set, "--clock-control", options.clock_control]
    if options.kernel:
        cmd += ["-k", options.kernel]
    if options.nvtx_include:
        cmd.append("--nvtx")
        for expr in options.nvtx_include:
            cmd += ["--nvtx-include", expr]
    if options.count is not None:
        cmd += ["-c", str(options.count)]
    cmd += [*options.extra, "-f", "-o", str(output_base), *target]
    return cmd


def details_csv_command(ncu: str, rep: Path) -> list[str]:
    return [ncu, "-i", str(rep), "--csv", "--page", "details"]


def profile(ncu: str, raw: Path, target: list[str], options: NcuOptions, echo: bool = True) -> NcuCapture:
    """Run ncu into ``raw/profile.ncu-rep``; explain the failures users hit most."""
    base = raw / "profile"
    cmd = ncu_command(ncu, base, target, options)
    log = raw / "ncu.log"
    rc, out = run_logged(cmd, log, options.timeout_s, echo)
    rep = base.with_suffix(".ncu-rep")
    m = _APP_RC.search(out)
    target_rc = int(m.group(1)) if m else (0 if rc == 0 else None)
    if _PERM.search(out):
        raise ProfilerFailed("ncu has no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM)",
                             "run as root, or have an administrator allow it: "
                             "https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    if not rep.is_file():
        if _NO_KERNELS.search(out):
            what = " ".join(x for x in (f"-k {options.kernel}" if options.kernel else "",
                                        " ".join(f"--nvtx-include {e}" for e in options.nvtx_include)) if x)
            why = f"the filter {what} matched nothing" if what else "the program launched none"
            raise ProfilerFailed(f"ncu profiled no kernels: {why}",
                                 "check the kernel name (ncu matches the function name; use regex:...) "
                                 "or the NVTX range (push/pop ranges end with '/')")
        if target_rc not in (0, None):
            raise ProfilerFailed(f"the profiled program failed (exit code {target_rc}) before any kernel was profiled",
                                 f"see {log}")
        last = [ln for ln in out.strip().splitlines() if ln.strip()][-1:] or ["no output"]
        raise ProfilerFailed(f"ncu failed (exit {rc}): {last[0].strip()}", f"see {log}")
    return NcuCapture(cmd, rc, target_rc, rep, log)


def export_details_csv(ncu: str, rep: Path, out_dir: Path) -> Path:
    """``ncu -i REP --csv --page details`` into the run directory (for machines without ncu_report)."""
    csv_path = out_dir / (rep.stem + ".details.csv")
    rc, _ = run_logged(details_csv_command(ncu, rep), csv_path, None, echo=False)
    if rc != 0:
        raise ProfilerFailed(f"ncu could not export {rep.name} to CSV (exit {rc})", f"see {csv_path}")
    return csv_path
