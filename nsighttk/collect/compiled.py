"""Compile workload variants in a subprocess with Triton's and Inductor's caches inside the run
directory (see :mod:`nsighttk.collect.drivers.inspect_main`); return where everything landed."""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nsighttk.collect import run_logged

_WRITTEN = re.compile(r"Output code written to: (\S+)")


@dataclass
class Compiled:
    variant: str
    dir: Path  # <run>/<variant>/
    rc: int
    log: Path
    output_code: list[Path] = field(default_factory=list)  # Inductor's generated modules, copied

    @property
    def error(self) -> str | None:
        if self.rc == 0:
            return None
        lines = self.log.read_text(errors="replace").strip().splitlines() or ["no output"]
        return lines[-1].removeprefix("nsighttk: error: ")


def compile_variant(run_path: Path, spec: str, variant: str, arch: str, size: int | None, dtype: str,
                    gpu: bool, timeout_s: float | None = 900, echo: bool = False) -> Compiled:
    out = run_path / variant
    out.mkdir(parents=True, exist_ok=True)
    env = {"TRITON_CACHE_DIR": str((out / "triton_cache").resolve()),
           "TORCHINDUCTOR_CACHE_DIR": str((out / "inductor_cache").resolve()),
           "TORCH_LOGS": "output_code", "TRITON_DEFAULT_FP_FUSION": "1"}
    if not gpu:  # also hides a GPU that is there (--aot)
        env.update({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""})
    cmd = [sys.executable, "-m", "nsighttk.collect.drivers.inspect_main", spec, variant, "--arch", arch,
           "--dtype", dtype, "--out", str(out)]
    if size:
        cmd += ["--size", str(size)]
    log = out / "compile.log"
    rc, text = run_logged(cmd, log, timeout_s, echo, env=env)
    result = Compiled(variant, out, rc, log)
    code_dir = out / "output_code"
    for src in dict.fromkeys(_WRITTEN.findall(text)):
        p = Path(src)
        if p.is_file():
            code_dir.mkdir(exist_ok=True)
            dst = code_dir / p.name
            shutil.copyfile(p, dst)
            result.output_code.append(dst)
    return result
