"""The environment, read once into a typed object.

Every ``NSIGHTTK_*`` variable (and the Slurm ids a run records) is read here and nowhere else.
The CLI builds one :class:`Settings` (``Settings.from_env()``, then its own options such as
``--db`` applied with :meth:`Settings.replace`) and hands it to the command it runs; library code
below the commands that needs a setting without being handed one asks :func:`current`.

=========================== ==========================================================================
``NSIGHTTK_REPORTS``        root of run directories (default ``./reports``)
``NSIGHTTK_DB``             the runs database (default ``<reports root>/nsighttk.db``)
``NSIGHTTK_HOME``           user state: ``slurm-setup.sh`` (default ``~/.config/nsighttk``)
``NSIGHTTK_ARCH``           default ``--arch`` when none is given (else the local GPU's, else sm_75)
``NSIGHTTK_BUILD``          build tree root (default ``./build``)
``NSIGHTTK_QUIET``          no progress lines (``1``)
``NSIGHTTK_THREADS``        loader and analysis threads (default: the CPUs available, at most 8)
``NSIGHTTK_MEMORY_MB``      the analytical engine's (DuckDB's) memory limit; what does not fit goes to
                            temporary files under TMPDIR (default 1024, at least 16)
``NSIGHTTK_CACHE``          where a large capture's columns are kept for the next look (default
                            ``$XDG_CACHE_HOME/nsighttk``, else ``~/.cache/nsighttk``)
``NSIGHTTK_CACHE_MB``       the most that folder holds, oldest files removed first (default 4096; ``0``: no
                            cache)
``NSIGHTTK_NO_DB``          runs are not recorded (``1``; Slurm tasks: the login node imports them)
``NSIGHTTK_RUN_TAG``        appended to run directory names (Slurm tasks: ``job<ID>_<task>``)
``NSIGHTTK_SAMPLES``        the CUDA samples folder (default: the installed ``cuda_samples``)
``NSIGHTTK_KERNELS``        the workloads folder (default: the installed ``kernels``)
``NSIGHTTK_<TOOL>``         a tool's path: NVCC, NSYS, NCU, NVIDIA_SMI, COMPUTE_SANITIZER, CUOBJDUMP
``NSIGHTTK_REQUIRE_*``      test-suite switches (CI): BROWSER, SLURM
=========================== ==========================================================================
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: tools whose path may be forced with NSIGHTTK_<TOOL>
TOOL_VARS = {"nvcc": "NSIGHTTK_NVCC", "nsys": "NSIGHTTK_NSYS", "ncu": "NSIGHTTK_NCU",
             "nvidia-smi": "NSIGHTTK_NVIDIA_SMI", "compute-sanitizer": "NSIGHTTK_COMPUTE_SANITIZER",
             "cuobjdump": "NSIGHTTK_CUOBJDUMP"}
#: the Slurm variables a run records (run.json key -> variable)
SLURM_VARS = {"slurm_job_id": "SLURM_JOB_ID", "slurm_array_job_id": "SLURM_ARRAY_JOB_ID",
              "slurm_array_task_id": "SLURM_ARRAY_TASK_ID"}


def _flag(value: str | None) -> bool:
    return (value or "") not in ("", "0")


def _int(value: str | None) -> int | None:
    try:
        n = int(value or "")
    except ValueError:
        return None
    return n if n > 0 else None


def _cache_dir(env: Mapping[str, str]) -> Path:
    if env.get("NSIGHTTK_CACHE"):
        return Path(env["NSIGHTTK_CACHE"])
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "nsighttk"


@dataclass(frozen=True)
class Settings:
    reports_root: Path = Path("reports")
    db: Path | None = None  # None: <reports_root>/nsighttk.db
    home: Path = field(default_factory=lambda: Path.home() / ".config" / "nsighttk")
    arch: str | None = None
    build_root: Path = Path("build")
    quiet: bool = False
    threads: int | None = None
    memory_mb: int | None = None
    cache_dir: Path = field(default_factory=lambda: _cache_dir(os.environ))
    cache_mb: int = 4096
    no_db: bool = False
    run_tag: str | None = None
    samples_dir: Path | None = None
    kernels_dir: Path | None = None
    tools: Mapping[str, str] = field(default_factory=dict)
    slurm: Mapping[str, str] = field(default_factory=dict)
    width: int | None = None  # the CLI's --width (0: no limit); not read from the environment

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = os.environ if env is None else env
        return cls(
            reports_root=Path(e.get("NSIGHTTK_REPORTS") or "reports"),
            db=Path(e["NSIGHTTK_DB"]) if e.get("NSIGHTTK_DB") else None,
            home=Path(e["NSIGHTTK_HOME"]) if e.get("NSIGHTTK_HOME") else Path.home() / ".config" / "nsighttk",
            arch=e.get("NSIGHTTK_ARCH") or None,
            build_root=Path(e.get("NSIGHTTK_BUILD") or "build"),
            quiet=_flag(e.get("NSIGHTTK_QUIET")),
            threads=_int(e.get("NSIGHTTK_THREADS")),
            memory_mb=_int(e.get("NSIGHTTK_MEMORY_MB")),
            cache_dir=_cache_dir(e),
            cache_mb=0 if e.get("NSIGHTTK_CACHE_MB", "").strip() == "0" else _int(e.get("NSIGHTTK_CACHE_MB")) or 4096,
            no_db=e.get("NSIGHTTK_NO_DB") == "1",
            run_tag=e.get("NSIGHTTK_RUN_TAG") or None,
            samples_dir=Path(e["NSIGHTTK_SAMPLES"]) if e.get("NSIGHTTK_SAMPLES") else None,
            kernels_dir=Path(e["NSIGHTTK_KERNELS"]) if e.get("NSIGHTTK_KERNELS") else None,
            tools={t: e[v] for t, v in TOOL_VARS.items() if e.get(v)},
            slurm={k: e[v] for k, v in SLURM_VARS.items() if e.get(v)},
        )

    @property
    def db_path(self) -> Path:
        return self.db if self.db is not None else self.reports_root / "nsighttk.db"

    def replace(self, **changes: object) -> Settings:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


_current: Settings | None = None


def current() -> Settings:
    """The process's settings: the ones installed by :func:`use`, else read from the environment
    once (and kept)."""
    global _current
    if _current is None:
        _current = Settings.from_env()
    return _current


def use(settings: Settings | None) -> None:
    """Install ``settings`` for this process (the CLI does, after applying its options); None
    forgets them, so the next :func:`current` reads the environment again (tests)."""
    global _current
    _current = settings


# ------------------------------------------------------------------------------ BLAS threads
#: numpy's OpenBLAS starts one busy-waiting thread per core when it loads (2.1 CPU s for `import
#: numpy` alone on a 16-core H100 host, 0.5 s with one thread); nsighttk's analyses do no BLAS work,
#: so its own process asks for one.  The programs it profiles or runs get the user's environment.
_OWN_BLAS_MARK = "NSIGHTTK_OWN_BLAS_THREADS"


def limit_own_blas_threads() -> None:
    """One OpenBLAS thread for this process, unless the user chose a number (call before numpy loads)."""
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.environ[_OWN_BLAS_MARK] = "1"


#: glibc's mallopt(3) parameters
_M_TRIM_THRESHOLD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -4, -8


def reuse_freed_memory() -> None:
    """Let this process reuse the memory of its freed arrays (glibc; elsewhere nothing changes).

    glibc maps every allocation above 32 MB on its own and unmaps it when freed, so each large
    temporary of an analysis is faulted in again, page by page: on the 2-core VM, 26 s of a 10M-kernel
    ``analyze``'s 91 s of CPU was the kernel zeroing such pages.  With no separate mappings and a
    high trim threshold, freed arrays stay in the heap for the next ones (9.7 s of system time);
    :func:`nsighttk.profile.release_free_memory` still gives memory back where an analysis asks.
    One arena for every thread: the reader's worker threads would otherwise each allocate chunks
    in an arena of their own, which the main thread frees into but never allocates from (a
    10M-kernel ``analyze`` peaked 0.9 GB higher for it).
    For the CLI's own process only: a library must not change its host's allocator."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_MAX, 0)
        libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
        libc.mallopt(_M_ARENA_MAX, 1)


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a program the user asked to run: this process's, without what
    :func:`limit_own_blas_threads` added, plus ``extra``."""
    env = dict(os.environ)
    if env.pop(_OWN_BLAS_MARK, None) is not None:
        env.pop("OPENBLAS_NUM_THREADS", None)
    env.update(extra or {})
    return env
