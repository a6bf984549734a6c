"""The task runner of a Slurm job (``python -m nsighttk.hpc.task JOB_DIR -- ARGS``): runs
``nsighttk ARGS`` with its run directories under ``JOB_DIR/runs/task-<N>/`` and the runs database
left alone (the login node imports them), echoes its output to the Slurm log, and writes
``JOB_DIR/tasks/<N>.json`` when the command ends.  A command that writes no run directory of its
own (``analyze``, ``stats``, ``report``...) gets one, holding its output, so every task is a run.
A SIGTERM (scancel, time limit) is passed on to the command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from nsighttk import safeio
from nsighttk.runs.layout import RunDir
from nsighttk.settings import Settings


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m nsighttk.hpc.task JOB_DIR -- NSIGHTTK_ARGS...", file=sys.stderr)
        return 2
    job_dir, args = Path(argv[0]), argv[2:]
    slurm = Settings.from_env().slurm
    task = slurm.get("slurm_array_task_id") or "0"
    root = job_dir / "runs" / f"task-{task}"
    root.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in root.iterdir()}
    job = slurm.get("slurm_array_job_id") or slurm.get("slurm_job_id") or "local"
    tag = f"job{job}" + (f"_{task}" if slurm.get("slurm_array_task_id") else "")
    # the command's settings: its run directories here, no database, the tag keeps names of one array apart
    env = {**os.environ, "NSIGHTTK_REPORTS": str(root), "NSIGHTTK_NO_DB": "1", "NSIGHTTK_RUN_TAG": tag}
    started, t0 = datetime.now(timezone.utc), time.monotonic()
    print(f"nsighttk task {task} on {os.uname().nodename}: nsighttk {' '.join(args)}", flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "nsighttk", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    output = bytearray()
    assert proc.stdout is not None
    stream = proc.stdout
    for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        output += chunk
    rc = proc.wait()
    made = sorted(p for p in root.iterdir() if p.name not in before)
    if not made:
        made = [_own_run(root, args, rc, bytes(output), started, time.monotonic() - t0, Settings.from_env(env))]
    (job_dir / "tasks").mkdir(exist_ok=True)
    safeio.write_json(job_dir / "tasks" / f"{task}.json", {
        "task": task, "exit_code": rc, "command": ["nsighttk", *args], "run_dirs": [str(p) for p in made],
        "started_utc": started.isoformat(timespec="seconds"),
        "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": os.uname().nodename})
    return rc


def _own_run(root: Path, args: list[str], rc: int, output: bytes, started: datetime, seconds: float,
             settings: Settings) -> Path:
    positional = [a for a in args[1:] if not a.startswith("-")]
    target = Path(positional[0]).name if positional else args[0]
    run = RunDir(root, args[0], target, settings=settings, started=started)
    safeio.write_bytes(run.path / "output.txt", output)
    run.record.update({"command": ["nsighttk", *args], "target": target, "target_exit_code": rc})
    run.timing("command", seconds)
    lines = output.decode(errors="replace").strip().splitlines()
    return run.finish("ok" if rc == 0 else "failed",
                      None if rc == 0 else f"exit {rc}: {lines[-1] if lines else 'no output'}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
