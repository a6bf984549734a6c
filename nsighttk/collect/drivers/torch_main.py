"""Run a workload or a script under torch.profiler (``nsighttk torch`` starts this in a subprocess,
so a user's script that crashes cannot take nsighttk with it).

    python -m nsighttk.collect.drivers.torch_main --out DIR [--device cuda|cpu] [--schedule W,WU,A,R] [--record-shapes]
        [--with-stack] [--tensorboard DIR] [--iters N] [--sort-by KEY] TARGET [ARGS...]

TARGET is a workload (a ``kernels/`` name or a ``.py`` defining ``WORKLOAD``; each variant is
called inside ``record_function("<workload>/<variant>")``, one profiler step per round of
variants) or any Python script (run as ``__main__``; with ``--schedule``, each optimizer step is a
profiler step).  Writes into DIR: ``trace.json`` (Chrome trace: Perfetto, chrome://tracing; with a
schedule, ``trace_step<N>.json`` per active cycle; copies for TensorBoard's plugin with
``--tensorboard``), ``key_averages.txt`` (PyTorch's own table),
``key_averages.json`` and ``driver.json`` (what ran, steps, errors).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import shutil
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any

EXIT_SCRIPT_FAILED = 3


def _key_averages_rows(prof: Any, group_by_shape: bool) -> list[dict[str, Any]]:
    rows = []
    for e in prof.key_averages(group_by_input_shape=group_by_shape):
        dev_total = getattr(e, "device_time_total", None)
        if dev_total is None:
            dev_total = getattr(e, "cuda_time_total", 0)
        dev_self = getattr(e, "self_device_time_total", None)
        if dev_self is None:
            dev_self = getattr(e, "self_cuda_time_total", 0)
        rows.append({"key": e.key, "count": e.count, "cpu_time_total_us": e.cpu_time_total,
                     "self_cpu_time_total_us": e.self_cpu_time_total, "device_time_total_us": dev_total,
                     "self_device_time_total_us": dev_self,
                     "input_shapes": str(e.input_shapes) if group_by_shape else None})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nsighttk-torch", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--schedule", default=None, help="wait,warmup,active,repeat")
    ap.add_argument("--record-shapes", action="store_true")
    ap.add_argument("--with-stack", action="store_true")
    ap.add_argument("--tensorboard", type=Path, default=None)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--variants", default=None)
    ap.add_argument("--sort-by", default=None)
    ap.add_argument("--arch", default=None, help="build the CUDA-extension variants for this arch (sm_XX)")
    ap.add_argument("--row-limit", type=int, default=30)
    ap.add_argument("target")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    out: Path = a.out
    out.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = {"target": a.target, "device": a.device, "steps": 0, "status": "ok"}
    activities = [ProfilerActivity.CPU]
    if a.device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    sched = None
    traces: list[str] = []
    if a.schedule:
        wait, warmup, active, repeat = (int(x) for x in a.schedule.split(","))
        sched = schedule(wait=wait, warmup=warmup, active=active, repeat=repeat)

    def on_ready(p: Any) -> None:
        """Once per active cycle (without a schedule: once, at the end).  Kineto saves a trace only
        once, so the TensorBoard copy is the same file under the name its plugin looks for."""
        path = out / (f"trace_step{p.step_num}.json" if sched is not None else "trace.json")
        p.export_chrome_trace(str(path))
        traces.append(path.name)
        if a.tensorboard:
            a.tensorboard.mkdir(parents=True, exist_ok=True)
            tb_name = f"{socket.gethostname()}_{os.getpid()}.{time.time_ns()}.pt.trace.json"
            shutil.copyfile(path, a.tensorboard / tb_name)

    prof = profile(activities=activities, schedule=sched, on_trace_ready=on_ready,
                   record_shapes=a.record_shapes, with_stack=a.with_stack)

    target = Path(a.target)
    is_workload = a.target.startswith("workload:") or (
        target.suffix == ".py" and target.is_file() and "WORKLOAD" in target.read_text(errors="replace")) or (
        target.suffix != ".py")
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    rc = 0
    stack = contextlib.ExitStack()
    if is_workload:
        from nsighttk.bench import _torch_dtype
        from nsighttk.errors import NsightTKError
        from nsighttk.workload import cuda_ext, load_workload, missing_requirements, select_variants

        stack.enter_context(cuda_ext.arch_scope(a.arch))
        try:
            wl = load_workload(a.target.removeprefix("workload:"))
            names = select_variants(wl, a.variants.split(",") if a.variants else None)
            size = a.size or min(wl.sizes)
            inputs = wl.make_inputs(size, _torch_dtype(a.dtype), a.device)
        except NsightTKError as ex:
            print(f"nsighttk: error: {ex}", file=sys.stderr)
            return 2
        runnable = []
        for n in names:
            why = missing_requirements(wl.variants[n], a.device)
            if why:
                print(f"{wl.name}/{n}: skipped ({'; '.join(why)})", file=sys.stderr)
            else:
                wl.variants[n].fn(*inputs)  # compile / autotune / load outside the profile
                runnable.append(n)
        sync()
        info.update({"workload": wl.name, "variants": runnable, "size": size, "dtype": a.dtype})
        steps = a.iters
        if sched is not None:
            steps = (wait + warmup + active) * max(1, repeat)
        with prof:
            for _ in range(steps):
                for n in runnable:
                    with record_function(f"{wl.name}/{n}"):
                        wl.variants[n].fn(*inputs)
                sync()
                if sched is not None:
                    prof.step()
                info["steps"] += 1
    else:
        sys.argv = [str(target), *a.args]
        hook = None
        if sched is not None:
            from torch.optim.optimizer import register_optimizer_step_post_hook

            def stepped(*_: Any) -> None:
                prof.step()
                info["steps"] += 1

            hook = register_optimizer_step_post_hook(stepped)
        try:
            with prof:
                runpy.run_path(str(target), run_name="__main__")
                sync()
        except SystemExit as ex:
            code = ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 1)
            if code:
                info.update({"status": "script_failed", "error": f"exited with code {code}"})
                rc = EXIT_SCRIPT_FAILED
        except BaseException as ex:  # the user's script: keep the profile, report one line
            tb_last = traceback.extract_tb(ex.__traceback__)[-1]
            info.update({"status": "script_failed",
                         "error": f"{type(ex).__name__}: {ex} ({tb_last.filename}:{tb_last.lineno})"})
            rc = EXIT_SCRIPT_FAILED
        finally:
            if hook is not None:
                hook.remove()
    info["traces"] = traces
    sort_by = a.sort_by or ("self_cuda_time_total" if a.device == "cuda" else "self_cpu_time_total")
    try:
        table = prof.key_averages(group_by_input_shape=a.record_shapes).table(sort_by=sort_by, row_limit=a.row_limit)
    except (AssertionError, AttributeError, KeyError, RuntimeError) as ex:  # nothing recorded, or a bad key
        table = f"(no key_averages table: {ex})"
    stack.close()
    (out / "key_averages.txt").write_text(table + "\n")
    try:
        rows = _key_averages_rows(prof, a.record_shapes)
    except (AssertionError, RuntimeError):
        rows = []
    (out / "key_averages.json").write_text(json.dumps(rows, indent=1))
    (out / "driver.json").write_text(json.dumps(info, indent=1))  # its "error" is what the parent reports
    return rc


if __name__ == "__main__":
    sys.exit(main())
