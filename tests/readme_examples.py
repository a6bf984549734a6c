"""The README's examples: every ``console`` block is a list of ``$ command`` lines, each followed by
what it printed.  The comment line before a block says where it runs:

* ``<!-- example -->``: here and in CI (tests/cli/test_readme.py), output compared exactly after the
  volatile parts are masked (run directory time stamps, our own step durations, temporary paths);
* ``<!-- example: numbers vary -->``: here too, compared with every number masked (timings);
* ``<!-- example: gpu -->``: on the GPU machine by tests/gpu/readme_commands.sh, numbers masked.

    python tests/readme_examples.py update [--gpu OUTPUTS.json] [--only TEXT]   # rewrite the outputs in README.md
    python tests/readme_examples.py run --gpu --out OUTPUTS.json   # run the GPU examples, save outputs

Commands run from the repository root with ``python -m nsighttk`` for ``nsighttk``, a scratch
reports folder and home, no progress lines, and the width the block asks for (``COLUMNS=100``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
WIDTH = 100
_BLOCK = re.compile(r"<!-- example(?:: (?P<kind>[a-z ]+))? -->\n```console\n(?P<body>.*?)```", re.S)


@dataclass
class Example:
    kind: str  # "exact", "numbers vary", "gpu"
    commands: list[tuple[str, str]]  # (command, shown output)
    start: int  # offsets of the block body in the README
    end: int


def examples(text: str | None = None) -> list[Example]:
    text = README.read_text() if text is None else text
    out = []
    for m in _BLOCK.finditer(text):
        pairs: list[tuple[str, list[str]]] = []
        for line in m.group("body").splitlines():
            if line.startswith("$ "):
                pairs.append((line[2:], []))
            elif pairs:
                pairs[-1][1].append(line)
        out.append(Example(m.group("kind") or "exact", [(c, "\n".join(o)) for c, o in pairs],
                           m.start("body"), m.end("body")))
    return out


def mask(text: str, scratch: str, numbers: bool = False) -> str:
    text = (text.replace(scratch, "<SCRATCH>") if scratch else text).replace(str(ROOT) + "/", "")
    text = re.sub(r"\.tmp-[\w.-]+", ".tmp-<RUN>", text)  # a run directory being written: a random suffix
    text = re.sub(r"\d{8}T\d{6}Z", "<STAMP>", text)
    text = re.sub(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\+00:00)?", "<TIME>", text)
    text = re.sub(r"done in \d+\.\d s", "done in <S> s", text)
    text = re.sub(r"/tmp/[\w.-]+", "<TMP>", text)
    # where the checkout and its interpreter live differs between machines (a batch script names both)
    text = re.sub(r"--chdir=\S+", "--chdir=<ROOT>", text)
    text = re.sub(r"exec \S*python[\w.]* -m ", "exec <PYTHON> -m ", text)
    if numbers:  # a number with its unit, or a cache mark where a percentage stood
        unit = r"(?: ?(?:ns|us|ms|s|[kMGT]B?(?:/s)?|[kMGT]|%|x)(?![A-Za-z]))?"
        text = re.sub(r"\d[\d,._]*(?:e[+-]?\d+)?" + unit, "<N>", text)
        text = re.sub(r"\bcache\b", "<N>", text)
        text = re.sub(r" +", " ", text)
    text = "\n".join(line.rstrip() for line in text.splitlines())
    return re.sub(r"(─|━)+", "──", text).strip()


def run(command: str, scratch: str) -> str:
    """What ``command`` (a bash line; ``nsighttk`` is this checkout's) prints, stdout then stderr,
    from the repository root."""
    shim = Path(scratch) / "bin" / "nsighttk"
    if not shim.exists():
        shim.parent.mkdir(parents=True, exist_ok=True)
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m nsighttk "$@"\n')
        shim.chmod(0o755)
    env = {**os.environ, "NSIGHTTK_QUIET": "1", "COLUMNS": str(WIDTH), "NSIGHTTK_REPORTS": f"{scratch}/reports",
           "NSIGHTTK_HOME": f"{scratch}/home", "PYTHONPATH": str(ROOT), "PATH": f"{shim.parent}:{os.environ['PATH']}"}
    for var in ("NSIGHTTK_DB", "NSIGHTTK_ARCH"):
        env.pop(var, None)
    r = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return (r.stdout + r.stderr).rstrip("\n")


def run_all(kinds: tuple[str, ...]) -> dict[str, str]:
    outputs: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for ex in examples():
            if ex.kind not in kinds:
                continue
            for command, _ in ex.commands:
                outputs[command] = run(command, scratch)
    return outputs


def update(gpu_outputs: dict[str, str] | None = None, only: str | None = None) -> None:
    """Rewrite the README's example outputs: CPU examples run now (those whose first command
    contains ``only``, when given), GPU ones from a GPU run's file."""
    text = README.read_text()
    with tempfile.TemporaryDirectory() as scratch:
        for ex in reversed(examples(text)):
            body = []
            for command, shown in ex.commands:
                if ex.kind == "gpu" or (only is not None and only not in ex.commands[0][0]):
                    got = (gpu_outputs or {}).get(command) if ex.kind == "gpu" else None
                    got = shown if got is None else got
                else:
                    got = run(command, scratch).replace(scratch, "/tmp/scratch")
                got = got.replace(str(ROOT) + "/", "")
                body.append(f"$ {command}\n{got}".rstrip())
            text = text[:ex.start] + "\n".join(body) + "\n" + text[ex.end:]
    README.write_text(text)


def main(argv: list[str]) -> int:
    if argv[:1] == ["update"]:
        gpu = json.loads(Path(argv[argv.index("--gpu") + 1]).read_text()) if "--gpu" in argv else None
        update(gpu, argv[argv.index("--only") + 1] if "--only" in argv else None)
        return 0
    if argv[:1] == ["run"] and "--gpu" in argv:
        out = Path(argv[argv.index("--out") + 1])
        results = run_all(("gpu",))
        out.write_text(json.dumps(results, indent=1))
        shown = {c: s for ex in examples() if ex.kind == "gpu" for c, s in ex.commands}
        bad = [c for c, got in results.items() if mask(got, "", True) != mask(shown.get(c, ""), "", True)]
        for c in bad:
            print(f"README example differs (numbers masked): {c}")
        print(f"{len(results) - len(bad)} of {len(results)} GPU examples print what the README shows")
        return 1 if bad else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
