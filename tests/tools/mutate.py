#!/usr/bin/env python3
"""A small mutation check: do the tests notice when the code is wrong?

For each module given, every mutation point is found in its syntax tree (a comparison flipped, ``+``/``-``
and ``*``/``/`` swapped, ``and``/``or`` swapped, ``not`` dropped, a number or a boolean constant changed,
a statement dropped, a ``return x`` made ``return None``).  Each mutant, one at a time, is written into a
copy of the package (the checkout itself is never modified) and a selected subset of fast tests runs
against it (``pytest -x``, with a timeout).  A mutant is *killed* when a test fails (or the run times
out), *survives* when they all pass.  Survivors are printed with their line: each one is a test to
write or a change that does not matter (docs/MUTATION.md records which).

    python tests/tools/mutate.py nsighttk/analysis/iterations/find.py [MODULE...]
        [--tests tests/unit/test_iterations.py ...] [--sample N] [--seed S] [--budget SECONDS]
        [--timeout-factor F] [--lines L1,L2] [--survivors FILE] [--list] [--json FILE]

Without ``--tests``, a module's tests are the test files that import it (by dotted name, or by
``from nsighttk.<package> import <module>``), less the slow ones (README, wheel, Slurm, browser).
``--sample N`` tries N mutants chosen at random (``--seed``) per module; ``--budget`` stops starting
new mutants once that many seconds have passed; ``--lines`` keeps the mutants of those lines only (to
check that a new test kills the survivors it was written for); ``--survivors FILE`` (the ``--json`` of an
earlier run) tries again exactly the mutants that survived it.  Needs no GPU; run from the repository root.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SLOW_TESTS = {"test_readme.py", "test_install.py", "test_slurm.py", "test_docs.py", "test_html.py",
              "test_architecture.py", "test_fuzz.py", "test_hostile.py"}

FLIP_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}
SWAP_BINOP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
}


@dataclass
class Mutant:
    module: str
    line: int
    kind: str
    before: str
    after: str
    start: tuple[int, int]  # (line, utf-8 column) of the replaced source
    end: tuple[int, int]
    outcome: str = "not run"  # killed, survived, timeout, not run
    seconds: float = 0.0

    def label(self) -> str:
        return f"{self.module}:{self.line} {self.kind}: {self.before!r} -> {self.after!r}"


def _text(src_lines: list[bytes], start: tuple[int, int], end: tuple[int, int]) -> str:
    (l0, c0), (l1, c1) = start, end
    if l0 == l1:
        return src_lines[l0 - 1][c0:c1].decode()
    parts = [src_lines[l0 - 1][c0:], *src_lines[l0:l1 - 1], src_lines[l1 - 1][:c1]]
    return b"".join(parts).decode()


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                ids.add(id(first))
    return ids


def _in_function(tree: ast.AST) -> set[int]:
    """ids of the statements that are inside a function body (module-level code is not dropped)."""
    ids: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.stmt) and node is not fn:
                    ids.add(id(node))
    return ids


def _other_constant(v: bool | int | float) -> str:
    if isinstance(v, bool):
        return repr(not v)
    if isinstance(v, int):
        return repr(1 if v == 0 else 0 if v == 1 else v + 1)
    return repr(1.0 if v == 0 else v * 2)


def _skipped(tree: ast.AST) -> set[int]:
    """ids of nodes not to mutate: inside type annotations (never executed: mutating them proves
    nothing) and inside f-strings (whose parts carry the whole string's position in Python 3.11)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            ids.update(id(n) for n in ast.walk(node))
        anns = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            anns.append(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            anns.append(node.returns)
        if isinstance(node, ast.AnnAssign):
            anns.append(node.annotation)
        for a in anns:
            ids.update(id(n) for n in ast.walk(a))
    return ids


def mutants(path: Path) -> list[Mutant]:
    source = path.read_text()
    lines = source.encode().splitlines(keepends=True)
    tree = ast.parse(source)
    docs, in_fn, skip = _docstring_nodes(tree), _in_function(tree), _skipped(tree)
    module = str(path.relative_to(ROOT)) if path.is_absolute() else str(path)
    out: list[Mutant] = []

    def add(node: ast.AST, kind: str, new: str) -> None:
        start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        before = _text(lines, start, end)
        if before != new:
            out.append(Mutant(module, node.lineno, kind, before, new, start, end))  # type: ignore[attr-defined]

    def replaced(node: ast.expr, **fields: object) -> str:
        clone = ast.parse(ast.unparse(node), mode="eval").body  # a detached copy
        for k, v in fields.items():
            setattr(clone, k, v)
        return "(" + ast.unparse(clone) + ")"

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in FLIP_COMPARE:
                    ops = [type(o)() for o in node.ops]
                    ops[i] = FLIP_COMPARE[type(op)]()
                    add(node, "compare", replaced(node, ops=ops))
        elif isinstance(node, ast.BinOp) and type(node.op) in SWAP_BINOP:
            if isinstance(node.op, ast.Add) and any(isinstance(s, ast.Constant) and isinstance(s.value, str)
                                                    for s in (node.left, node.right)):
                continue  # string concatenation: - would be a TypeError at once
            add(node, "arith", replaced(node, op=SWAP_BINOP[type(node.op)]()))
        elif isinstance(node, ast.BoolOp):
            add(node, "boolop", replaced(node, op=ast.Or() if isinstance(node.op, ast.And) else ast.And()))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add(node, "not", "(" + ast.unparse(node.operand) + ")")
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            add(node, "constant", _other_constant(node.value))
        elif isinstance(node, ast.Return) and node.value is not None and id(node) in in_fn \
                and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            add(node, "return", "return None")
        if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.If, ast.For, ast.Raise, ast.Delete)) \
                and id(node) in in_fn and id(node) not in docs:
            add(node, "drop", "pass")
    out.sort(key=lambda m: (m.line, m.start, m.kind))
    return out


def apply(source: bytes, m: Mutant) -> bytes:
    lines = source.splitlines(keepends=True)
    (l0, c0), (l1, c1) = m.start, m.end
    new = lines[l0 - 1][:c0] + m.after.encode() + lines[l1 - 1][c1:]
    return b"".join([*lines[:l0 - 1], new, *lines[l1:]])


def tests_for(module: str) -> list[str]:
    """The test files that import the module (dotted name or ``from package import module``)."""
    dotted = module.removesuffix(".py").replace("/", ".")
    package, _, name = dotted.rpartition(".")
    if name == "__init__":
        dotted, (package, _, name) = package, package.rpartition(".")
    pattern = re.compile(rf"\b{re.escape(dotted)}\b|from {re.escape(package)} import [^\n]*\b{re.escape(name)}\b")
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("*/test_*.py")
                  if p.name not in SLOW_TESTS and pattern.search(p.read_text()))


class Sandbox:
    """A copy of the package beside links to everything else of the checkout: mutants go there."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="nsighttk-mutate-"))
        for entry in ROOT.iterdir():
            if entry.name == "nsighttk":
                shutil.copytree(entry, self.dir / "nsighttk", ignore=shutil.ignore_patterns("__pycache__"))
            elif entry.name not in (".git", ".venv", "build", "reports") and not entry.name.startswith(".tmp"):
                (self.dir / entry.name).symlink_to(entry)
        where = subprocess.run([sys.executable, "-c", "import nsighttk; print(nsighttk.__file__)"], cwd=self.dir,
                               env=self.env(), capture_output=True, text=True).stdout.strip()
        if not where.startswith(str(self.dir)):
            raise SystemExit(f"mutate: the sandbox's copy of nsighttk is not the one imported ({where})")

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.dir), "PYTHONDONTWRITEBYTECODE": "1"}

    def pytest(self, tests: list[str], timeout: float) -> tuple[str, float]:
        env = self.env()
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "--no-header", "-p", "no:cacheprovider", "-o", "addopts=",
               *tests]
        t = time.monotonic()
        try:
            rc = subprocess.run(cmd, cwd=self.dir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return "timeout", time.monotonic() - t
        return ("survived" if rc == 0 else "killed"), time.monotonic() - t

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def run(modules: list[str], tests: list[str] | None, sample: int | None, seed: int, budget: float,
        factor: float, lines: set[int] | None = None, only: set[tuple] | None = None) -> Iterator[Mutant]:
    started = time.monotonic()
    box = Sandbox()
    try:
        for module in modules:
            chosen = tests or tests_for(module)
            found = [m for m in mutants(ROOT / module) if (lines is None or m.line in lines)
                     and (only is None or (m.module, m.line, m.kind, m.before, m.after) in only)]
            picked = found if sample is None or sample >= len(found) else \
                sorted(random.Random(f"{seed}:{module}").sample(found, sample), key=lambda m: (m.line, m.start))
            if not chosen:
                print(f"{module}: no tests import it; pass --tests", file=sys.stderr)
                continue
            target = box.dir / module
            original = target.read_bytes()
            baseline, seconds = box.pytest(chosen, timeout=max(600.0, budget))
            state = "pass" if baseline == "survived" else baseline
            print(f"{module}: {len(found)} mutants, {len(picked)} tried; tests {' '.join(chosen)} "
                  f"(unmutated: {state}, {seconds:.1f} s)", file=sys.stderr, flush=True)
            if baseline != "survived":
                print(f"{module}: the selected tests fail without a mutant: fix them first", file=sys.stderr)
                continue
            timeout = max(30.0, factor * seconds)
            try:
                for m in picked:
                    if time.monotonic() - started > budget:
                        yield m
                        continue
                    mutated = apply(original, m)
                    try:
                        compile(mutated, module, "exec")
                    except SyntaxError:
                        m.outcome = "not run"
                        yield m
                        continue
                    target.write_bytes(mutated)
                    m.outcome, m.seconds = box.pytest(chosen, timeout)
                    target.write_bytes(original)
                    yield m
            finally:
                target.write_bytes(original)
    finally:
        box.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("modules", nargs="+", help="module files, e.g. nsighttk/analysis/iterations/find.py")
    ap.add_argument("--tests", nargs="+", default=None, help="test files or node ids to run per mutant")
    ap.add_argument("--sample", type=int, default=None, help="try at most N mutants per module (at random)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=float("inf"), help="seconds; no new mutant after that")
    ap.add_argument("--timeout-factor", type=float, default=4.0, help="a mutant's timeout: F x the unmutated run")
    ap.add_argument("--lines", default=None, help="only the mutants of these lines (comma-separated)")
    ap.add_argument("--survivors", type=Path, default=None, help="only the survivors of an earlier --json")
    ap.add_argument("--list", action="store_true", help="only list the mutants (and the tests chosen)")
    ap.add_argument("--json", type=Path, default=None, help="write every mutant and its outcome here")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    if args.list:
        for module in args.modules:
            print(f"# {module}: tests {' '.join(args.tests or tests_for(module)) or '(none)'}")
            for m in mutants(ROOT / module):
                print(m.label())
        return 0
    results: list[Mutant] = []
    lines = {int(x) for x in args.lines.split(",")} if args.lines else None
    only = None
    if args.survivors:
        only = {(m["module"], m["line"], m["kind"], m["before"], m["after"])
                for m in json.loads(args.survivors.read_text()) if m["outcome"] == "survived"}
    for m in run(args.modules, args.tests, args.sample, args.seed, args.budget, args.timeout_factor, lines, only):
        results.append(m)
        if m.outcome != "not run":
            print(f"{m.outcome:9s} {m.seconds:5.1f} s  {m.label()}", flush=True)
    counts = {k: sum(m.outcome == k for m in results) for k in ("killed", "timeout", "survived", "not run")}
    tried = counts["killed"] + counts["timeout"] + counts["survived"]
    print(f"\n{tried} mutants run: {counts['killed']} killed, {counts['timeout']} timed out (killed), "
          f"{counts['survived']} survived; {counts['not run']} not run (budget or not valid Python)")
    for m in results:
        if m.outcome == "survived":
            print(f"SURVIVED {m.label()}")
    if args.json:
        args.json.write_text(json.dumps([asdict(m) for m in results], indent=1))
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    sys.exit(main())
