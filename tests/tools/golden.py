#!/usr/bin/env python3
"""Golden outputs for refactors: run every reading command on the shipped fixtures and save what it
printed (stdout, stderr, exit code); later compare a new tree's outputs with the saved ones.

    python tests/tools/golden.py save DIR        # before the change
    python tests/tools/golden.py check DIR       # after: prints each difference, exits 1 on any

Commands run as subprocesses (`python -m nsighttk`) with a fixed width and no progress lines, in a
scratch folder (run directories and the runs DB land there).  Volatile text (temporary paths,
timestamps, durations of our own steps) is masked before comparing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
F = ROOT / "tests" / "fixtures"
NSYS = [F / "h200-nsys2025.3" / f"{n}.sqlite" for n in ("add", "add_grid_stride", "streams_demo")]
RANKS = [F / "h100-ranks" / "rank0.sqlite", F / "h100-ranks" / "rank1.sqlite"]
NCU = [F / "h200-ncu2025.3" / f"{n}.ncu-rep" for n in ("add_grid_b256", "matmul_tiled")]
NCU_CSV = [F / "h200-ncu2025.3" / "streams_demo.raw.csv", F / "h200-ncu2025.3" / "add_grid_b256.details.csv"]
KINETO = sorted(F.glob("h100-torch2.11/**/*.json*"))


def commands() -> list[list[str]]:
    cmds: list[list[str]] = []
    for p in [*NSYS, *RANKS, *NCU, *NCU_CSV, *[k for k in KINETO if "trace" in k.name]]:
        cmds += [["analyze", str(p)], ["analyze", str(p), "--json"], ["analyze", str(p), "--markdown"],
                 ["report", str(p), "--json"]]
    for p in [*NSYS, RANKS[0]]:
        cmds += [["stats", str(p)], ["stats", str(p), "-f", "csv"], ["stats", str(p), "-f", "json", "-r", "all"]]
    cmds += [["compare", str(NSYS[0]), str(NSYS[1]), "--force"], ["compare", str(NSYS[0]), str(NSYS[1]), "--json",
                                                                  "--force"],
             ["ranks", *map(str, RANKS)], ["ranks", *map(str, RANKS), "--json"],
             ["analyze", str(NSYS[2]), str(F / "h200-ncu2025.3" / "streams_demo.raw.csv")],
             ["analyze", str(NSYS[2]), str(F / "h200-ncu2025.3" / "streams_demo.raw.csv"), "--json"],
             ["arch"], ["arch", "H100"], ["arch", "A100"], ["arch", "sm_90", "--json"], ["build", "--list"],
             ["explain", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                         "std::array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3>)"],
             ["runs", "list"], ["runs", "list", "--json"], ["runs", "show", "nope"],
             ["analyze", "missing.sqlite"], ["stats", str(NSYS[0]), "-r", "nope"], ["analyze", str(ROOT / "README.md")],
             ["--help"], ["analyze", "--help"], ["nsys", "--help"], ["bench", "--help"]]
    return cmds


def mask(text: str, scratch: str) -> str:
    text = text.replace(scratch, "<SCRATCH>").replace(str(ROOT), "<ROOT>")
    text = re.sub(r"\d{8}T\d{6}Z", "<STAMP>", text)
    text = re.sub(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\+00:00)?", "<TIME>", text)
    return re.sub(r"done in \d+\.\d s", "done in <S> s", text)


def run_all() -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        env = {**os.environ, "NSIGHTTK_QUIET": "1", "NSIGHTTK_REPORTS": f"{scratch}/reports",
               "NSIGHTTK_HOME": f"{scratch}/home", "PYTHONPATH": str(ROOT)}
        env.pop("NSIGHTTK_DB", None)
        env.pop("COLUMNS", None)
        for cmd in commands():
            r = subprocess.run([sys.executable, "-m", "nsighttk", *cmd], capture_output=True, text=True, env=env,
                               cwd=scratch)
            key = " ".join(c.replace(str(ROOT) + "/", "") for c in cmd)
            out[key] = {"rc": r.returncode, "stdout": mask(r.stdout, scratch), "stderr": mask(r.stderr, scratch)}
            shutil.rmtree(f"{scratch}/reports", ignore_errors=True)
    return out


def main() -> int:
    mode, folder = sys.argv[1], Path(sys.argv[2])
    got = run_all()
    if mode == "save":
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "golden.json").write_text(json.dumps(got, indent=1))
        print(f"saved {len(got)} outputs to {folder}/golden.json")
        return 0
    want = json.loads((folder / "golden.json").read_text())
    bad = 0
    for key, w in want.items():
        g = got.get(key)
        if g != w:
            bad += 1
            print(f"DIFFERS: {key}")
            for part in ("rc", "stdout", "stderr"):
                if g is None or g[part] != w[part]:
                    import difflib

                    a = str(w[part]).splitlines()
                    b = str(g[part]).splitlines() if g else []
                    diff = difflib.unified_diff(a, b, f"before {part}", f"after {part}", lineterm="")
                    print("\n".join(list(diff)[:40]))
    print(f"{len(want) - bad} of {len(want)} outputs unchanged")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
