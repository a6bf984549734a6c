"""``python -m tests.hostile [-k SUBSTRING] [-v] [--keep DIR]``: run the hostile corpus and print a
summary (cases, passed, tracebacks, hangs, other failures, known failures).  Exit 0 when every
case passes or fails only as a known failure does."""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: fuzz.bases, as under pytest

from .cases import all_cases
from .runner import outside, run_case


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.hostile", description=__doc__)
    ap.add_argument("-k", default="", help="only cases whose id contains this")
    ap.add_argument("-v", action="store_true", help="print every case")
    ap.add_argument("--keep", type=Path, default=None, help="keep the scratch folders here")
    args = ap.parse_args()
    cases = [c for c in all_cases() if args.k in c.id]
    base = Path(tempfile.mkdtemp(prefix="nsighttk-hostile-")) if args.keep is None else args.keep
    base.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    around = outside(full=True)
    counts: collections.Counter[str] = collections.Counter()
    slowest = []
    per_group: collections.Counter[str] = collections.Counter()
    try:
        for case in cases:
            o = run_case(case, base)
            slowest.append((o.seconds, case.id))
            per_group[case.group] += o.seconds
            counts["cases"] += 1
            counts["tracebacks"] += o.traceback
            counts["hangs"] += o.hang
            if o.ok:
                counts["unexpectedly passing" if case.xfail else "passed"] += 1
            elif case.xfail:
                counts["known failures"] += 1
            else:
                counts["failed"] += 1
            if args.v or (not o.ok and not case.xfail) or (o.ok and case.xfail):
                state = "ok" if o.ok else ("known failure" if case.xfail else "FAIL")
                print(f"{state:13s} {o.seconds:6.2f}s rc={o.rc} {case.id!r}")
                for p in o.problems:
                    print(f"              {p}")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    if outside(full=True) != around:
        print("FAIL: a file of the checkout or its fixtures changed during the run")
        counts["failed"] += 1
    wall = time.monotonic() - t0
    print(f"\nhostile corpus: {counts['cases']} cases in {wall:.0f} s: {counts['passed']} passed, "
          f"{counts['failed']} failed, {counts['known failures']} known failures (xfail), "
          f"{counts['unexpectedly passing']} known failures now passing; "
          f"{counts['tracebacks']} tracebacks, {counts['hangs']} hangs")
    by_group = collections.Counter(c.group for c in cases)
    print("groups (cases, seconds in nsighttk): " + ", ".join(f"{g} {n} {per_group[g]:.0f}s"
                                                           for g, n in sorted(by_group.items())))
    print("slowest: " + ", ".join(f"{i} {s:.1f}s" for s, i in sorted(slowest, reverse=True)[:5]))
    return 0 if counts["failed"] == 0 and counts["unexpectedly passing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
