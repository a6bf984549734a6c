"""Per-capture work on Dask (``dask.distributed``): one task per capture, run where a worker is,
each returning a small result that the driver consumes as it arrives (so the driver never holds
more than one result it has not merged).

Where the workers are (:class:`Where`):

* by default a ``LocalCluster`` on this machine: one worker process per core it may use (under
  ``nsighttk submit``, the cores of the job's allocation), one thread each, each
  with a memory limit (``memory_limit``: the worker's memory manager spills, pauses, and the nanny
  restarts a worker past 95% of it; Dask then reruns its task elsewhere);
* ``scheduler``: an existing scheduler (``tcp://HOST:PORT``), or ``scheduler_file`` (the JSON file
  ``dask scheduler --scheduler-file F`` writes, the usual way on a cluster's shared file system);
* ``slurm``: a ``dask_jobqueue.SLURMCluster``: ``jobs`` batch jobs of ``cores`` worker processes
  each, in ``partition`` / ``account`` for ``walltime``, which this process starts and cancels.

A task that fails on a damaged input returns its error (:class:`Failed`) rather than raising: one
bad capture is reported and the others go on.  A task whose worker dies (killed, out of memory) is
rerun up to ``retries`` times on another worker (the scheduler's ``allowed-failures`` where this
process starts the scheduler; an external scheduler keeps its own); after that it is reported as
failed too.

Any cluster this module started (local processes, Slurm jobs) is stopped when the work ends, by an
error or by Ctrl-C (KeyboardInterrupt closes the client and the cluster on the way out).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from nsighttk.errors import NsightTKError, ToolNotFound, UsageError

#: per local worker, at most this much memory (bytes) unless told
DEFAULT_WORKER_MEMORY = 2 * 1024**3


@dataclass
class Where:
    """Where the per-capture tasks run."""

    workers: int | None = None  # local worker processes (None: one per core; 0: none, in this process)
    worker_memory: str | None = None  # per local worker, e.g. "1GiB" (None: min(memory / workers, 2 GiB))
    scheduler: str | None = None  # tcp://HOST:PORT
    scheduler_file: Path | None = None
    slurm: bool = False
    slurm_jobs: int = 1
    slurm_cores: int = 4  # worker processes per job
    slurm_memory: str = "16GB"  # per job
    slurm_partition: str | None = None
    slurm_account: str | None = None
    slurm_walltime: str = "00:30:00"
    retries: int = 2

    @property
    def external(self) -> bool:
        return bool(self.scheduler or self.scheduler_file or self.slurm)


@dataclass
class Failed:
    """A task's error: the capture and one line saying what went wrong."""

    item: str
    reason: str


def _require() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ToolNotFound("dask.distributed is not installed",
                           "pip install 'dask[distributed]' dask-jobqueue (or nsighttk[dask]); "
                           "or run serially with --workers 0") from None


def _quiet() -> None:
    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker",
                 "distributed.core", "distributed.http", "tornado", "dask_jobqueue"):
        logging.getLogger(name).setLevel(logging.ERROR)


def local_workers(where: Where) -> tuple[int, int]:
    """(worker processes, memory limit per worker in bytes) of the default LocalCluster."""
    import psutil

    n = where.workers if where.workers else _cores()
    if where.worker_memory:
        from dask.utils import parse_bytes

        try:
            mem = int(parse_bytes(where.worker_memory))
        except (ValueError, TypeError):
            raise UsageError(f"--worker-memory {where.worker_memory!r}: not a size", "e.g. 1GiB, 800MB") from None
    else:
        mem = min(int(psutil.virtual_memory().total // max(n, 1)), DEFAULT_WORKER_MEMORY)
    return n, mem


def _cores() -> int:
    """The cores this process may run on (a Slurm job's or a cgroup's cpuset, not the whole node's:
    ``nsighttk submit -- nsighttk ranks ...`` gets one worker per core of its allocation)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def slurm_cluster(where: Where) -> Any:
    """A SLURMCluster of ``where``'s jobs (not yet scaled)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ToolNotFound("dask-jobqueue is not installed", "pip install dask-jobqueue") from None
    kw: dict[str, Any] = {"cores": where.slurm_cores, "processes": where.slurm_cores, "memory": where.slurm_memory,
                          "walltime": where.slurm_walltime, "scheduler_options": {"dashboard_address": None}}
    if where.slurm_partition:
        kw["queue"] = where.slurm_partition
    if where.slurm_account:
        kw["account"] = where.slurm_account
    return SLURMCluster(**kw)


@contextmanager
def client(where: Where) -> Iterator[Any]:
    """A Dask client for ``where``; any cluster started here is closed on the way out."""
    _require()
    _quiet()
    from distributed import Client, LocalCluster

    if where.scheduler_file:
        if not Path(where.scheduler_file).is_file():
            raise UsageError(f"--scheduler-file {where.scheduler_file}: no such file",
                             "give the file `dask scheduler --scheduler-file F` wrote")
        with Client(scheduler_file=str(where.scheduler_file), timeout="30s") as c:
            yield c
        return
    if where.scheduler:
        try:
            c = Client(where.scheduler, timeout="30s")
        except OSError as ex:
            raise UsageError(f"--scheduler {where.scheduler}: {ex}", "is `dask scheduler` running there?") from None
        with c:
            yield c
        return
    if where.slurm:
        import dask

        with dask.config.set({"distributed.scheduler.allowed-failures": where.retries}):
            cluster = slurm_cluster(where)
        try:
            cluster.scale(jobs=where.slurm_jobs)
            with Client(cluster) as c:
                yield c
        finally:
            cluster.close()
        return
    n, mem = local_workers(where)
    import dask

    # (a task whose worker dies is rerun `retries` times: the scheduler's allowed failures; one
    # engine thread per worker: the workers already use every core; no progress lines from them; no
    # statistical profiler in the workers: it samples every thread's stack every 10 ms; one thread for
    # OpenMP, BLAS and Arrow's pool too, which would each start one per core in every worker)
    env = {"NSIGHTTK_THREADS": "1", "NSIGHTTK_QUIET": "1", "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with dask.config.set({"distributed.scheduler.allowed-failures": where.retries,
                          "distributed.worker.profile.enabled": False}):
        cluster = None
        try:
            with _sigint_deferred():
                cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, memory_limit=mem,
                                       env=env, dashboard_address=None, silence_logs=logging.ERROR,
                                       preload=["nsighttk.hpc._dask_worker"])
            with Client(cluster) as c:
                yield c
        finally:
            if cluster is not None:
                cluster.close()


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """A Ctrl-C during the block is held back and raised (KeyboardInterrupt) when it ends: a cluster
    half started cannot be stopped, one started can.  (The workers being started get the same Ctrl-C
    from the terminal and die; the cluster's start then fails, which is the Ctrl-C too.)"""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hit: list[int] = []
    old = signal.signal(signal.SIGINT, lambda *_: hit.append(1))
    try:
        yield
    except Exception:
        if hit:
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, old)
    if hit:
        raise KeyboardInterrupt


def run_guarded(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """``fn(*args)``, or :class:`Failed` (for ``args[0]``) with one line when it raises (on the worker)."""
    item = str(args[0])
    try:
        return fn(*args)
    except NsightTKError as ex:
        return Failed(item, str(ex).splitlines()[0] if str(ex) else type(ex).__name__)
    except MemoryError:
        return Failed(item, "out of memory reading it")
    except Exception as ex:  # a damaged capture may fail anywhere in a reader
        return Failed(item, f"could not be read ({type(ex).__name__}: {str(ex).splitlines()[0] if str(ex) else ''})")


def map_items(fn: Callable[..., Any], items: list[tuple[Any, ...]], where: Where,
              on_result: Callable[[int, Any], None]) -> None:
    """Run ``fn(*item)`` for every item on the cluster ``where`` tells (in this process when
    ``where.workers == 0``), calling ``on_result(index, result)`` as each result arrives (a
    :class:`Failed` for an item whose task raised or whose workers died ``retries + 1`` times)."""
    if where.workers == 0 and not where.external:
        for i, item in enumerate(items):
            on_result(i, run_guarded(fn, item))
        return
    with client(where) as c:
        from distributed import as_completed

        futures = c.map(partial(run_guarded, fn), items, retries=where.retries, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures):
            i = index[fut.key]
            try:
                res = fut.result()
            except Exception as ex:  # the task's workers died retries + 1 times
                res = Failed(str(items[i][0]), f"its worker died ({type(ex).__name__}: {ex})")
            fut.release()
            on_result(i, res)
        del futures


def reduce_rank(path: str, label: str, iteration: str | None) -> Any:
    """One rank's capture, loaded and reduced to its :class:`~nsighttk.analysis.comm.rank_summary.RankSummary`
    (runs on a worker: only the summary travels back)."""
    from nsighttk import engine
    from nsighttk.analysis.comm import rank_summary
    from nsighttk.analysis.comm.rank_summary import summarize
    from nsighttk.analysis.iterations.find import iterations, reads
    from nsighttk.load import load
    from nsighttk.runs.layout import find_capture

    p = load(find_capture(path))
    if p.meta.get("tool") == "ncu":
        return Failed(path, "not an nsys capture or a torch.profiler trace (give one nsys .sqlite/.nsys-rep or "
                            "Kineto .json per rank)")
    engine.of(p).need(engine.union(reads(p), rank_summary.COLUMNS))  # (one read of each table)
    it = iterations(p, iteration, check=False)  # (the ranges' cross-check is a note no rank summary shows)
    return summarize(p, label, path, it.table if it is not None else None)


def recipe_rank(path: str, recipe: str) -> Any:
    """One capture's mapper result for ``recipe`` (:mod:`nsighttk.analysis.nsys.recipes`): (file stem,
    its tables or None), computed on a worker."""
    from nsighttk.analysis.nsys import recipes
    from nsighttk.load import load

    p = load(path)
    if p.meta.get("tool") != "nsys":
        return Failed(path, "not an nsys capture (.sqlite or .nsys-rep)")
    stats = recipes.nccl_sum_stats(p) if recipe == "nccl_sum" else recipes.kern_sum_stats(p)
    name = Path(path).name
    return name.split(".")[0] if "." in name else name, stats
