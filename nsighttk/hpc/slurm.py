"""Slurm: nsighttk work as batch jobs, the way HPC users already work.

``submit`` writes a job directory ``<reports>/<UTC time>-slurm-<command>-<target>/``::

    job.sbatch        the batch script (sbatch options, setup lines, one case per array task)
    job.json          what was submitted: command per task, options, job id
    logs/<job>_<task>.out   Slurm's output of each task
    runs/task-<N>/    the run directories task N wrote (NSIGHTTK_REPORTS points there)
    tasks/<N>.json    written by the task when its command ended (exit code, times)

Tasks never write the runs database (SQLite on a cluster file system is not safe to share
between nodes): ``sync`` reads the job's state on the login node (``scontrol``, then ``sacct``,
then the task files), and once every task has ended it imports the task's run directories.  A
task that failed or was cancelled is recorded as such; a run it left unfinished (a ``.tmp-``
directory) is renamed and kept with what it wrote, and a task that left nothing gets a run
directory with its Slurm log, so every task is in the database.

Sweeps: ``--sweep NAME=V1,V2`` (several multiply) give one array task per combination; each value
replaces ``{NAME}`` in the command, or is appended as ``--NAME V``.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nsighttk import __version__, safeio
from nsighttk.errors import InputFileError, ProfilerFailed, ToolNotFound, UsageError
from nsighttk.runs.layout import RUN_JSON, RunDir
from nsighttk.safeio import read_json_or_none, safe_filename
from nsighttk.settings import current

#: nsighttk commands a job may run
SUBMITTABLE = ("nsys", "ncu", "bench", "torch", "model", "inspect", "analyze", "stats", "report", "ranks", "build")
#: states after which a job (task) does not change any more
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE", "REVOKED", "SPECIAL_EXIT"}
# Every value that reaches the batch script is checked with re.fullmatch (``$`` would also match
# before a trailing newline, which is how '10\n' once became a line of the script).
_TIME = re.compile(r"(\d+-)?\d+(:\d{1,2}){0,2}")
_ARRAY = re.compile(r"(\d+(-\d+)?(:\d+)?)(,\d+(-\d+)?(:\d+)?)*(%\d+)?")
_NAME = re.compile(r"[\w.,+@-]{1,200}")  # partition lists, accounts
_JOB_NAME = re.compile(r"[\w.,+@:=-]{1,200}")
_MEM = re.compile(r"\d+[KMGT]?B?", re.IGNORECASE)
_MODULE = re.compile(r"[\w./+@:-]{1,200}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")  # C0, DEL, C1, Unicode line breaks
#: a task list larger than this is not a list of commands
MAX_TASKS_BYTES = 1024 * 1024
#: one value of a job (a word of a command, a name, a sweep): longer is not a value a person typed
MAX_TEXT_CHARS = 4096


def check_text(value: str, what: str) -> str:
    """Refuse control characters (a newline would add a line to the batch script) and values
    longer than :data:`MAX_TEXT_CHARS` (shown shortened: the error stays one short line)."""
    if len(value) > MAX_TEXT_CHARS:
        raise UsageError(f"{what} {value[:40]!r}...: {len(value):,} characters, more than {MAX_TEXT_CHARS:,}",
                         "give a shorter value")
    if _CONTROL.search(value):
        raise UsageError(f"{what} {value!r}: contains a control character (newline, tab, escape ...)",
                         "give it on one line, without control characters")
    return value


def _check(pattern: re.Pattern[str], value: str | None, what: str, hint: str) -> None:
    if value is not None and not pattern.fullmatch(check_text(value, what)):
        raise UsageError(f"{what} {value!r}: {hint.split(';')[0]}", hint.split(";", 1)[-1].strip())


def sbatch_quote(word: str) -> str:
    """One word of an ``#SBATCH`` line as sbatch reads it: sbatch splits on blanks, honours double
    quotes and backslashes and starts a comment at ``#`` (single quotes are literal to it, so
    shlex.quote is wrong here).  Control characters are refused before this."""
    if re.fullmatch(r"[\w@%+=:,./-]+", word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class JobSpec:
    """One submission: the nsighttk command (without ``nsighttk``) and the sbatch options."""

    command: list[str]
    partition: str | None = None
    gpus: int | None = None
    time: str | None = None
    account: str | None = None
    cpus: int | None = None
    mem: str | None = None
    name: str | None = None
    array: str | None = None
    sweeps: list[tuple[str, list[str]]] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    sbatch_args: list[str] = field(default_factory=list)
    #: one command per array task (``--tasks FILE``), instead of ``command`` and sweeps
    task_list: list[list[str]] = field(default_factory=list)

    def check(self) -> None:
        """Refuse what sbatch would refuse later, before anything is written."""
        if self.task_list:
            self.task_list = [_nsighttk_args(c) for c in self.task_list]
            if self.sweeps or (self.command and _nsighttk_args(self.command) != self.task_list[0]):
                raise UsageError("--tasks gives every task's command", "drop the command after -- and --sweep")
            self.command = self.task_list[0]
        self.command = _nsighttk_args(self.command)
        for cmd in [self.command, *self.task_list]:
            for word in cmd:
                check_text(word, "the job's command word")
        _check(_TIME, self.time, "--time", "not a Slurm time; use MINUTES, HH:MM:SS or D-HH:MM:SS")
        if self.gpus is not None and self.gpus < 1:
            raise UsageError(f"--gpus {self.gpus}: must be 1 or more", "omit --gpus for CPU-only work")
        if self.cpus is not None and self.cpus < 1:
            raise UsageError(f"--cpus {self.cpus}: must be 1 or more", "omit --cpus for Slurm's default")
        if self.array is not None and not (_ARRAY.fullmatch(check_text(self.array, "--array"))
                                           or re.fullmatch(r"%\d+", self.array)):
            raise UsageError(f"--array {self.array!r}: not a Slurm array", "e.g. 0-3, 0-7%2 or 1,3,5")
        _check(_NAME, self.partition, "-p/--partition", "not a partition name; letters, digits, . _ - + , @")
        _check(_NAME, self.account, "-A/--account", "not an account name; letters, digits, . _ - + , @")
        _check(_JOB_NAME, self.name, "-J/--job-name", "not a job name; letters, digits, . _ - + , @ : =")
        _check(_MEM, self.mem, "--mem", "not a memory size; e.g. 16G or 4000M")
        for arg in self.sbatch_args:
            check_text(arg, "--sbatch-arg")
            if not arg.startswith("-"):
                raise UsageError(f"--sbatch-arg {arg!r}: not an sbatch option", "e.g. --sbatch-arg=--exclusive")
        for line in self.setup:
            check_text(line, "--setup/--module")
        listed = bool(self.sweeps or self.task_list)
        if self.array and listed and not self.array.startswith("%"):
            raise UsageError(f"--array {self.array}: --sweep/--tasks already make one task per value or line",
                             "give --array only a limit on tasks running at once, e.g. --array %2")
        if self.array and not listed and self.array.startswith("%"):
            raise UsageError(f"--array {self.array}: a limit, but no tasks to limit",
                             "give the tasks (--array 0-3%2), or use it with --sweep/--tasks")
        for name, values in self.sweeps:
            for v in values:
                check_text(v, f"--sweep {name}")
            if not re.fullmatch(r"[A-Za-z][\w-]*", name) or not values or any(v == "" for v in values):
                raise UsageError(f"--sweep {name}={','.join(values)}: expected NAME=V1,V2,...",
                                 "e.g. --sweep sizes=4096,65536")


def _nsighttk_args(command: list[str]) -> list[str]:
    cmd = command[1:] if command[:1] == ["nsighttk"] else command
    if not cmd:
        raise UsageError("nothing to submit", "e.g. nsighttk submit -- nsighttk bench add")
    if cmd[0] not in SUBMITTABLE:
        raise UsageError(f"cannot submit {shlex.join(command)!r}: jobs run nsighttk commands",
                         f"use one of: nsighttk {', '.join(SUBMITTABLE)}")
    return cmd


def read_tasks(path: Path) -> list[list[str]]:
    """A task list: one ``nsighttk ...`` command per line (``#`` comments and blank lines skipped)."""
    text = safeio.read_text(path, "--tasks", MAX_TASKS_BYTES, "give a text file with one nsighttk command per line")
    try:
        tasks = [shlex.split(ln, comments=True) for ln in text.splitlines()]
    except ValueError as ex:
        raise InputFileError(f"--tasks {path}: {ex}", "quote as in a shell") from None
    tasks = [t for t in tasks if t]
    for t in tasks:
        for word in t:
            check_text(word, f"--tasks {path}: a word")
    if not tasks:
        raise InputFileError(f"--tasks {path}: no commands in it", "one nsighttk command per line")
    return tasks


def parse_sweep(text: str) -> tuple[str, list[str]]:
    name, sep, values = text.partition("=")
    if not sep:
        raise UsageError(f"--sweep {text!r}: expected NAME=V1,V2,...", "e.g. --sweep sizes=4096,65536")
    check_text(text, "--sweep")
    return name.strip(), [v.strip() for v in values.split(",")]


def task_commands(spec: JobSpec) -> list[list[str]]:
    """The nsighttk command of every array task (one when there is no sweep and no array)."""
    if spec.task_list:
        return [list(t) for t in spec.task_list]
    if not spec.sweeps:
        return [list(spec.command)]
    out = []
    for combo in itertools.product(*(values for _, values in spec.sweeps)):
        cmd = list(spec.command)
        for (name, _), value in zip(spec.sweeps, combo, strict=True):
            placeholder = "{" + name + "}"
            if any(placeholder in a for a in cmd):
                cmd = [a.replace(placeholder, value) for a in cmd]
            else:
                cmd += [f"--{name}", value]
        out.append(cmd)
    return out


def array_spec(spec: JobSpec) -> str | None:
    """The ``--array`` of the job: one task per sweep combination or task line, or the user's own."""
    if spec.sweeps or spec.task_list:
        n = len(task_commands(spec))
        return f"0-{n - 1}" + (spec.array or "")
    return spec.array


def script(spec: JobSpec, job_dir: Path, python: str | None = None, workdir: Path | None = None) -> str:
    """The batch script: #SBATCH options, setup lines, then this task's command under the task
    runner (:mod:`nsighttk.hpc.task`)."""
    python = python or sys.executable
    workdir = workdir or Path.cwd()
    for path, what in ((python, "the Python interpreter's path"), (str(job_dir), "the job directory"),
                       (str(workdir), "the working directory")):
        check_text(path, what)
    arr = array_spec(spec)
    log = job_dir / "logs" / ("%A_%a.out" if arr else "%j.out")
    opts = [f"--job-name={spec.name or default_name(spec)}", f"--output={log}", f"--chdir={workdir}"]
    for flag, value in (("partition", spec.partition), ("gpus", spec.gpus), ("time", spec.time),
                        ("account", spec.account), ("cpus-per-task", spec.cpus), ("mem", spec.mem), ("array", arr)):
        if value is not None:
            opts.append(f"--{flag}={value}")
    lines = ["#!/bin/bash"] + [f"#SBATCH {sbatch_quote(o)}" for o in [*opts, *spec.sbatch_args]]
    lines += [f"# written by nsighttk {__version__} on {socket.gethostname()} at "
              f"{datetime.now(timezone.utc).isoformat(timespec='seconds')}"]
    lines += [f"# nsighttk {shlex.join(c)}" for c in (spec.task_list or [spec.command])]
    lines += ["set -eo pipefail", *spec.setup]
    cmds = task_commands(spec)
    runner = f"{shlex.quote(python)} -m nsighttk.hpc.task {shlex.quote(str(job_dir))} --"
    if len(cmds) == 1:
        lines.append(f"exec {runner} {shlex.join(cmds[0])}")
    else:
        lines.append('case "${SLURM_ARRAY_TASK_ID:-0}" in')
        lines += [f"  {i}) exec {runner} {shlex.join(c)} ;;" for i, c in enumerate(cmds)]
        lines += ['  *) echo "nsighttk: no command for array task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;', "esac"]
    return "\n".join(lines) + "\n"


def default_name(spec: JobSpec) -> str:
    return f"nsighttk-{spec.command[0]}-{safe_filename(_target(spec.command))}"[:60]


def _target(cmd: list[str]) -> str:
    positional = [a for a in cmd[1:] if not a.startswith("-")]
    return Path(positional[0]).name.replace("{", "").replace("}", "") if positional else cmd[0]


def module_lines(modules: list[str] | tuple[str, ...]) -> list[str]:
    """``--module NAME`` -> ``module load NAME`` (a module name, quoted: never a second command)."""
    for m in modules:
        _check(_MODULE, m, "--module", "not a module name; e.g. cuda/13.0")
    return [f"module load {shlex.quote(m)}" for m in modules]


def default_setup() -> list[str]:
    """Lines every job script starts with: ``$NSIGHTTK_HOME/slurm-setup.sh`` (module loads, a
    virtual environment), so a site's set-up is written once."""
    f = current().home / "slurm-setup.sh"
    if not f.is_file():
        return []
    return [ln for ln in safeio.read_head(f, 1 << 20).decode(errors="replace").splitlines() if ln.strip()]


# ------------------------------------------------------------------------------------ submit


@dataclass
class Job:
    job_id: str | None
    job_dir: Path
    tasks: int
    script: Path


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise ToolNotFound(f"{tool} not found: nsighttk submit needs Slurm",
                           "run it on the cluster's login node (module load slurm), or pass --dry-run to only "
                           "write the batch script")
    return path


def submit(spec: JobSpec, root: Path, dry_run: bool = False) -> Job:
    """Write the job directory and its script, then ``sbatch`` it (not with ``dry_run``)."""
    spec.check()
    sbatch = None if dry_run else _require("sbatch")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stamp}-slurm-{spec.command[0]}-{safe_filename(_target(spec.command))}"
    job_dir, n = root / base, 1
    while job_dir.exists():
        n += 1
        job_dir = root / f"{base}-{n}"
    try:
        for sub in ("logs", "runs", "tasks"):
            (job_dir / sub).mkdir(parents=True)
    except OSError as ex:
        raise UsageError(f"cannot create the job directory under {root}: {ex.strerror}",
                         "pass --reports-dir or set NSIGHTTK_REPORTS to a writable folder on a shared file system") \
            from None
    job_dir = job_dir.resolve()
    path = job_dir / "job.sbatch"
    safeio.write_text(path, script(spec, job_dir))
    cmds = task_commands(spec)
    record: dict[str, Any] = {"nsighttk_version": __version__, "spec": asdict(spec), "tasks": cmds,
                              "array": array_spec(spec), "job_dir": str(job_dir), "host": socket.gethostname(),
                              "submitted_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                              "job_id": None}
    if sbatch:
        r = subprocess.run([sbatch, "--parsable", str(path)], capture_output=True, text=True, errors="replace")
        if r.returncode != 0:
            msg = (r.stderr.strip().splitlines() or ["no output"])[-1]
            record["error"] = msg
            safeio.write_json(job_dir / "job.json", record)
            raise ProfilerFailed(f"sbatch refused the job: {msg}", f"the script is kept: {path}")
        record["job_id"] = r.stdout.strip().split(";")[0]
    safeio.write_json(job_dir / "job.json", record)
    return Job(record["job_id"], job_dir, len(expand_array(record["array"])) if record["array"] else 1, path)


def expand_array(spec: str) -> list[int]:
    """Task ids of a Slurm ``--array`` (``0-3``, ``1,3,5``, ``0-9:2``, with or without ``%N``)."""
    out: list[int] = []
    for part in spec.split("%")[0].split(","):
        rng, _, step = part.partition(":")
        lo, _, hi = rng.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1, int(step or 1)))
    return out


# ------------------------------------------------------------------------------------- track


def parse_scontrol(text: str) -> dict[str, tuple[str, str]]:
    """``scontrol show job -o`` -> {task id ("0", "1", ... or "-" for a plain job): (state, exit code)}.
    A pending array's remaining tasks come as one record (``ArrayTaskId=2-3``), expanded here."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if "JobState" not in f:
            continue
        state, code = f["JobState"], f.get("ExitCode", "")
        task = f.get("ArrayTaskId")
        if task is None or task == "N/A":
            out["-"] = (state, code)
        else:
            for t in expand_array(task):
                out[str(t)] = (state, code)
    return out


def parse_sacct(text: str, job_id: str) -> dict[str, tuple[str, str]]:
    """``sacct -X -n -P -o JobID,State,ExitCode`` -> the same mapping (``CANCELLED by 0`` -> CANCELLED)."""
    out: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 3 or not parts[0].startswith(job_id):
            continue
        jid, state, code = parts[0], parts[1].split()[0], parts[2]
        task = jid.partition("_")[2]
        if task.startswith("["):
            for t in expand_array(task.strip("[]")):
                out[str(t)] = (state, code)
        else:
            out[task or "-"] = (state, code)
    return out


def task_states(job_id: str) -> tuple[dict[str, tuple[str, str]], str]:
    """The job's tasks as Slurm sees them now, and which command said so: ``scontrol`` or
    ``sacct``; ``gone`` when the controller answers that it no longer knows the job (and there is
    no accounting that does); ``""`` when Slurm cannot be asked (no commands, controller down):
    then nothing may be concluded."""
    gone = False
    scontrol = shutil.which("scontrol")
    if scontrol:
        r = subprocess.run([scontrol, "show", "job", "-o", job_id], capture_output=True, text=True, errors="replace")
        states = parse_scontrol(r.stdout) if r.returncode == 0 else {}
        if states:
            return states, "scontrol"
        gone = "invalid job id" in (r.stderr + r.stdout).lower()
    sacct = shutil.which("sacct")
    if sacct:
        r = subprocess.run([sacct, "-X", "-n", "-P", "-j", job_id, "-o", "JobID,State,ExitCode"],
                           capture_output=True, text=True, errors="replace")
        states = parse_sacct(r.stdout, job_id) if r.returncode == 0 else {}
        if states:
            return states, "sacct"
    return {}, "gone" if gone else ""


def overall(states: dict[str, tuple[str, str]]) -> str:
    names = sorted({s for s, _ in states.values()})
    if not names:
        return "UNKNOWN"
    if len(names) == 1:
        return names[0]
    active = [s for s in names if s not in FINAL]
    if active:
        return active[0] if len(active) == 1 else "RUNNING"
    counts = {s: sum(1 for v, _ in states.values() if v == s) for s in names}
    return "MIXED (" + ", ".join(f"{c} {s}" for s, c in counts.items()) + ")"


def finished(states: dict[str, tuple[str, str]]) -> bool:
    return bool(states) and all(s in FINAL for s, _ in states.values())


def states_from_markers(job: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """When Slurm no longer knows the job: each task's own file says how its command ended; a
    task without one never finished (lost: node failure, killed)."""
    job_dir = Path(job["job_dir"])
    ids = task_ids(job)
    out = {}
    for t in ids:
        m = read_json_or_none(job_dir / "tasks" / f"{'0' if t == '-' else t}.json")  # a plain job's task writes 0.json
        if isinstance(m, dict):
            out[t] = ("COMPLETED" if m.get("exit_code") == 0 else "FAILED", f"{m.get('exit_code')}:0")
        else:
            out[t] = ("FAILED", "lost")
    return out


def task_ids(job: dict[str, Any]) -> list[str]:
    arr = job.get("array")
    return [str(t) for t in expand_array(arr)] if arr else ["-"]


# ------------------------------------------------------------------------------------ import


def collect(job: dict[str, Any], states: dict[str, tuple[str, str]]) -> list[Path]:
    """Every task's run directories, complete: unfinished ones renamed and given a run.json with
    the task's Slurm state, tasks without any given one; each gets its Slurm log under raw/ and
    ``slurm_job_state`` in run.json.  Returns the run directories (for the database)."""
    job_dir, jid = Path(job["job_dir"]), str(job["job_id"])
    out: list[Path] = []
    commands = job.get("tasks") or [[]]
    for i, t in enumerate(task_ids(job)):
        state, code = states.get(t, ("UNKNOWN", ""))
        troot = job_dir / "runs" / ("task-0" if t == "-" else f"task-{t}")
        troot.mkdir(parents=True, exist_ok=True)
        log = job_dir / "logs" / (f"{jid}.out" if t == "-" else f"{jid}_{t}.out")
        dirs = sorted(d for d in troot.iterdir() if d.is_dir() and (d / "run.json").is_file()
                      and not d.name.startswith(".tmp-"))
        for tmp in sorted(troot.glob(".tmp-*")):  # a run the task never finished
            dirs.append(_finish_unfinished(tmp, troot, state, jid, t))
        if not dirs:  # the task left nothing: a run directory that says so, with its log
            cmd = commands[i] if i < len(commands) else commands[0]
            run = RunDir(troot, cmd[0] if cmd else "job", safe_filename(_target(cmd)) if cmd else jid,
                         tag=f"job{jid}" + ("" if t == "-" else f"_{t}"))
            run.record.update({"command": ["nsighttk", *cmd], "target": _target(cmd) if cmd else jid})
            run.record.update(_slurm_ids(jid, t))
            run.record["slurm_job_state"] = state
            dirs.append(run.finish(state.lower() if state != "COMPLETED" else "no_output",
                                   f"Slurm task {jid}{'' if t == '-' else '_' + t} ended {state}"
                                   f" (exit {code or '?'}) without a run directory; its log is in raw/"))
        for d in dirs:
            if log.is_file():
                (d / "raw").mkdir(exist_ok=True)
                shutil.copy2(log, d / "raw" / log.name)
            data = read_json_or_none(d / "run.json") or {}
            data.update(_slurm_ids(jid, t), slurm_job_state=state)
            if state != "COMPLETED" and data.get("status") in ("ok", "running", "interrupted"):
                if data.get("status") == "interrupted":  # the task's SIGTERM: say who sent it
                    data["error"] = (f"Slurm task {jid}{'' if t == '-' else '_' + t} ended {state} before the run "
                                     "finished; what it wrote is kept")
                data["status"] = state.lower()
            safeio.write_json(d / RUN_JSON, data)
            out.append(d)
    return out


def _slurm_ids(jid: str, task: str) -> dict[str, str]:
    """What run.json says of the job (as RunDir.finish records it from Slurm's variables)."""
    return {"slurm_job_id": jid} if task == "-" else {"slurm_array_job_id": jid, "slurm_array_task_id": task}


def _finish_unfinished(tmp: Path, root: Path, state: str, jid: str, task: str) -> Path:
    """``.tmp-<stamp>-<tool>-<workload>-<hex>`` left by a killed task -> ``<stamp>-<tool>-<workload>``
    with a run.json that says how it ended; everything it wrote stays."""
    name = tmp.name.removeprefix(".tmp-").rsplit("-", 1)[0]
    stamp, _, rest = name.partition("-")
    tool, _, workload = re.sub(r"-job\w+$", "", rest).partition("-")
    final, n = root / name, 1
    while final.exists():
        n += 1
        final = root / f"{name}-{n}"
    status = state.lower() if state in FINAL and state != "COMPLETED" else "interrupted"
    rec = {"nsighttk_version": __version__, "tool": tool, "workload": workload, "target": workload,
           "status": status, "run_dir": str(final), "slurm_job_state": state,
           "error": f"Slurm task {jid}{'' if task == '-' else '_' + task} ended {state} before the run finished; "
                    "what it wrote is kept",
           "started_utc": _stamp_iso(stamp), "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    rec.update(_slurm_ids(jid, task))
    safeio.write_json(tmp / RUN_JSON, rec)
    os.replace(tmp, final)
    return final


def _stamp_iso(stamp: str) -> str | None:
    try:
        return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc).isoformat(timespec="seconds")
    except ValueError:
        return None


def wait(job_id: str, timeout_s: float | None = None, poll_s: float = 1.0,
         on_state: Any = None) -> dict[str, tuple[str, str]]:
    """Poll until every task has ended (or ``timeout_s``); ``on_state(states)`` after each poll."""
    t0 = time.monotonic()
    while True:
        states, source = task_states(job_id)
        if on_state:
            on_state(states)
        if finished(states) or source == "gone":  # gone: the tasks' own files tell (see sync)
            return states
        if timeout_s is not None and time.monotonic() - t0 > timeout_s:
            raise InputFileError(f"job {job_id} still {overall(states)} after {timeout_s:.0f} s",
                                 "nsighttk runs jobs shows it later; it is imported once it ends")
        time.sleep(poll_s)
