"""Many ranks, one small summary each: what one rank's capture reduces to (:func:`summarize`, run
where the capture is, e.g. on a Dask worker), and the merge of those summaries into the figures of
the whole run (:class:`Merger`), fed one summary at a time so that the process that merges holds no
rank's tables, only its few numbers.

The figures are those of :mod:`nsighttk.analysis.comm.ranks` (its module doc defines the waiting time in
collectives and the slowest rank) and, merged, equal them: :func:`merge` of the summaries of some
Profiles gives the same per-rank table as :func:`nsighttk.analysis.comm.ranks.rank_skew` of the Profiles.
On top of those, for many ranks:

* **distribution** of each per-rank figure over the ranks: min, median, p95 (linear interpolation,
  numpy's default), max, mean;
* **outliers**: ranks whose figure lies more than ``max(3 x 1.4826 x MAD, 5% x median)`` from the
  median over ranks (``MAD``: median absolute deviation), above (``slow``) or below (``fast``);
* **per iteration and per rank** (ranks whose iterations were found, matched by name when every rank
  names its iterations uniquely, else by position): the iteration's wall time, GPU idle time in it
  (``idle_ns``: no kernel, copy or memset running), compute (non-collective kernels that *start* in
  it: from its start to the next iteration's start, the last one open-ended), collectives (collective
  kernels that start in it) and waiting (their time beyond the shortest rank's, per launch, as in
  :mod:`nsighttk.analysis.comm.ranks`).  An iteration is start-up when any rank marks it warm-up; the skew
  of the steady state (every other iteration) is kept apart from the start-up's;
* **the late rank's delay**: the rank the others wait for (the slowest), over the steady iterations,
  against the median rank of each iteration: the others' waiting for it (the median rank's waiting
  minus its own), split into *host side* (its GPU sat idle longer: work launched late), *longer
  kernels* (its compute took longer) and *waiting on an earlier collective* (it waited longer itself
  in collectives earlier in the iteration, so it came late to the next).  Each part is the positive
  excess over the median rank; they need not add up to the delay (a rank may be late on one count
  and early on another).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis.comm.ranks import RankSkew, iteration_skew
from nsighttk.analysis.comm.sizes import ELEMENT_BYTES
from nsighttk.analysis.iterations.intervals import gpu_busy_ns
from nsighttk.analysis.kernels.names import is_collective, short_label
from nsighttk.analysis.nsys.gpu import _kernel_names
from nsighttk.profile import Profile

#: Per-rank figures whose distribution over the ranks is given, in this order.
FIGURES = ["kernel_time_ns", "compute_ns", "comm_ns", "comm_wait_ns", "gpu_busy_ns", "gpu_span_ns",
           "iteration_mean_ns"]
#: The outlier threshold's floor, as a fraction of the median.
OUTLIER_FLOOR = 0.05


@dataclass
class RankSummary:
    """What one rank's capture reduces to: a few numbers, a few small arrays (kilobytes)."""

    capture: str  # the file's name (its label among the ranks)
    path: str
    tool: str
    meta: dict[str, Any]
    row: dict[str, Any]  # kernels, kernel_time_ns, gpu_busy_ns, ... (rank_summary's columns)
    #: non-collective kernel time per short kernel label
    work_by_label: dict[str, int]
    #: collective kernel launches in start order: name, n-th launch of that name, duration, iteration (-1: none)
    coll_name: list[str]
    coll_nth: np.ndarray
    coll_dur: np.ndarray
    coll_iter: np.ndarray
    #: the rank's iterations (name, duration_ns, warmup, idle_ns, compute_ns, comm_ns), None when none found
    iterations: pd.DataFrame | None
    #: NVTX ranges per name: count and total time; collective bytes per collective when known
    nvtx: dict[str, tuple[int, int]] = field(default_factory=dict)
    coll_bytes: dict[str, int] = field(default_factory=dict)
    fingerprint: str = ""


#: The columns :func:`summarize` reads (and the kernels' names, :func:`~nsighttk.analysis.nsys.gpu._kernel_names`).
COLUMNS = {"kernels": ["start_ns", "end_ns", "duration_ns", "comm_in_nelems", "comm_out_nelems", "comm_dtype"],
           "memcpy": ["start_ns", "end_ns", "bytes"], "memset": ["start_ns", "end_ns"], "nvtx": ["name", "duration_ns"]}


def summarize(p: Profile, capture: str, path: str = "", its: pd.DataFrame | None = None) -> RankSummary:
    """One rank's summary, over the engine (a few rows per kernel name come back to Python, and the
    collective launches).  ``its``: its iterations table
    (:func:`nsighttk.analysis.iterations.find.iterations`), or None."""
    eng, join = _kernel_names(p)
    eng.need(COLUMNS)
    # per kernel name (its code): count, time, and whether it communicates; the names in byte order
    names = eng.rows(f"""SELECT n.code, any_value(n.name), count(*), coalesce(sum(k.duration_ns::HUGEINT), 0)
                         FROM kernels k JOIN kernel_names n ON {join} GROUP BY n.code ORDER BY n.code""")
    comm_codes = [c for c, name, _, _ in names if name and is_collective(name)]
    total = sum(int(t) for *_, t in names)
    comm_ns = sum(int(t) for c, _, _, t in names if c in set(comm_codes))
    named = [(name, int(t)) for _, name, _, t in names if name]  # (a kernel without a name: in no group)
    top = min(named, key=lambda x: (-x[1], x[0]), default=("", 0))
    work_by_label: dict[str, int] = {}
    for c, name, _, t in names:
        if name and c not in set(comm_codes):
            label = short_label(name)
            work_by_label[label] = work_by_label.get(label, 0) + int(t)
    ops = " UNION ALL ".join(f"SELECT start_ns, end_ns FROM {t}" for t in ("kernels", "memcpy", "memset"))
    [(lo, hi)] = eng.rows(f"SELECT min(start_ns), max(end_ns) FROM ({ops})")
    [(copied,)] = eng.rows("SELECT coalesce(sum(bytes::HUGEINT), 0) FROM memcpy")
    [(n_kernels,)] = eng.rows("SELECT count(*) FROM kernels")
    row = {"capture": capture, "kernels": int(n_kernels), "kernel_time_ns": total, "gpu_busy_ns": gpu_busy_ns(p),
           "gpu_span_ns": int(hi - lo) if lo is not None else 0, "memcpy_bytes": int(copied),
           "top_kernel": top[0], "top_kernel_ns": top[1], "comm_ns": comm_ns, "compute_ns": total - comm_ns}
    starts = its["start_ns"].to_numpy(dtype="int64") if its is not None and len(its) else np.zeros(0, dtype="int64")
    eng.con.execute("CREATE OR REPLACE TEMP TABLE _rank_comm AS SELECT unnest(?::BIGINT[]) AS code", [comm_codes])
    # the collective launches in start order, each the n-th of its name
    coll = _columns(eng.sql(f"""
        SELECT n.name, row_number() OVER (PARTITION BY n.code ORDER BY k.start_ns, k.row_index) - 1 AS nth,
               k.duration_ns, k.start_ns
        FROM kernels k JOIN kernel_names n ON {join} SEMI JOIN _rank_comm c ON c.code = n.code
        ORDER BY k.start_ns, k.row_index"""))
    it_table = None
    if its is not None and len(starts):
        # each kernel's time in the iteration it starts in (from one start to the next)
        eng.con.execute("CREATE OR REPLACE TEMP TABLE _rank_its AS SELECT unnest(?::BIGINT[]) AS s, "
                        "unnest(range(?)) AS i", [starts.tolist(), len(starts)])
        comp, collective = np.zeros(len(starts), dtype="int64"), np.zeros(len(starts), dtype="int64")
        for i, is_comm, t in eng.rows(f"""
                SELECT w.i, n.code IN (SELECT code FROM _rank_comm), sum(k.duration_ns::HUGEINT)
                FROM kernels k JOIN kernel_names n ON {join} ASOF JOIN _rank_its w ON k.start_ns >= w.s
                GROUP BY ALL"""):
            (collective if is_comm else comp)[i] = int(t or 0)
        idle = its["idle_ns"].astype("Int64").fillna(0).to_numpy(dtype="int64")
        it_table = pd.DataFrame({"name": its["name"].astype(str).to_numpy(),
                                 "duration_ns": its["duration_ns"].to_numpy(dtype="int64"),
                                 "warmup": its["warmup"].to_numpy(dtype=bool), "idle_ns": idle,
                                 "compute_ns": comp, "comm_ns": collective})
    c_start = coll["start_ns"]
    c_iter = _iteration_of(c_start, starts) if len(starts) else np.full(len(c_start), -1, dtype="int64")
    nvtx = {str(n): (int(c), int(t)) for n, c, t in eng.rows(
        "SELECT coalesce(name, 'None'), count(duration_ns), coalesce(sum(duration_ns::HUGEINT), 0) FROM nvtx "
        "GROUP BY 1 ORDER BY 1")}
    coll_bytes: dict[str, int] = {}
    for name, b in eng.rows(f"""
            SELECT n.name, sum(greatest(coalesce(k.comm_in_nelems, 0), coalesce(k.comm_out_nelems, 0))::HUGEINT
                               * e.size)
            FROM kernels k JOIN kernel_names n ON {join} SEMI JOIN _rank_comm c ON c.code = n.code
            JOIN (SELECT unnest(?::VARCHAR[]) AS dtype, unnest(?::BIGINT[]) AS size) e ON e.dtype = k.comm_dtype
            GROUP BY n.name ORDER BY n.name""", [list(ELEMENT_BYTES), list(ELEMENT_BYTES.values())]):
        label = short_label(name)
        coll_bytes[label] = coll_bytes.get(label, 0) + int(b)
    fp = hashlib.sha1()  # (two captures with the same kernels, in the same order at the same times, look alike)
    got = _columns(eng.sql("SELECT duration_ns, start_ns FROM kernels ORDER BY row_index"))
    fp.update(np.ascontiguousarray(got["duration_ns"]).tobytes())
    fp.update(np.ascontiguousarray(got["start_ns"]).tobytes())
    meta = {key: p.meta.get(key) for key in ("tool", "command", "host", "capture_time_utc")}
    return RankSummary(capture=capture, path=path, tool=str(p.meta.get("tool")), meta=meta, row=row,
                       work_by_label=work_by_label, coll_name=[str(x) for x in coll["name"]], coll_nth=coll["nth"],
                       coll_dur=coll["duration_ns"], coll_iter=c_iter, iterations=it_table, nvtx=nvtx,
                       coll_bytes=coll_bytes, fingerprint=fp.hexdigest())


def _columns(rel: Any) -> dict[str, np.ndarray]:
    """A query's columns as arrays: integers int64 (a NULL as 0), text as objects."""
    out = {}
    for c, v in rel.fetchnumpy().items():
        data = np.ma.getdata(v)
        out[c] = np.ma.filled(v, 0).astype("int64") if data.dtype.kind in "iuf" else np.asarray(data, dtype=object)
    return out


def _iteration_of(t: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The index of the iteration each time falls in (from its start to the next one's), -1 before the first."""
    return np.searchsorted(starts, t, side="right").astype("int64") - 1


def _robust_outliers(x: np.ndarray) -> np.ndarray:
    """'slow' / 'fast' / '' per value: more than max(3 x 1.4826 x MAD, 5% x median) from the median."""
    if len(x) < 3:
        return np.full(len(x), "", dtype=object)
    m = float(np.median(x))
    mad = float(np.median(np.abs(x - m)))
    thr = max(3 * 1.4826 * mad, OUTLIER_FLOOR * abs(m))
    out = np.full(len(x), "", dtype=object)
    out[x > m + thr] = "slow"
    out[x < m - thr] = "fast"
    return out


def distribution(values: np.ndarray) -> dict[str, float | None]:
    """min, median, p95, max, mean of ``values`` (None each when empty)."""
    v = np.asarray(values, dtype="float64")
    v = v[~np.isnan(v)]
    if not len(v):
        return {"min": None, "median": None, "p95": None, "max": None, "mean": None}
    return {"min": float(v.min()), "median": float(np.median(v)), "p95": float(np.percentile(v, 95)),
            "max": float(v.max()), "mean": float(v.mean())}


@dataclass
class Fleet:
    """The merged figures of many ranks."""

    skew: RankSkew
    distribution: dict[str, dict[str, float | None]] = field(default_factory=dict)
    outliers: list[dict[str, Any]] = field(default_factory=list)
    slowest: list[dict[str, Any]] = field(default_factory=list)  # the ranks the others wait for most, with why
    #: per iteration (steady and start-up): duration/compute/collectives/waiting over ranks
    iteration_skew: pd.DataFrame | None = None
    #: ranks x iterations, the heatmaps' data: ranks, iterations, warmup (per iteration), values
    #: (durations, ns) and waits (waiting in collectives, ns; None when nobody waits); rows in rank order
    heatmap: dict[str, Any] | None = None
    delay: dict[str, Any] | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)
    nvtx: list[dict[str, Any]] = field(default_factory=list)

    @property
    def table(self) -> pd.DataFrame:
        return self.skew.table

    def as_dict(self) -> dict[str, Any]:
        its = self.iteration_skew
        return {"ranks_count": len(self.table), "distribution": self.distribution, "outliers": self.outliers,
                "slowest_ranks": self.slowest, "late_rank_delay": self.delay,
                "iteration_skew": None if its is None else its.to_dict("records"),
                "heatmap": self.heatmap, "skipped": self.skipped, "nvtx": self.nvtx}


class Merger:
    """Merges rank summaries as they arrive (:meth:`add`), then :meth:`finish`.  It keeps per rank one
    row of figures and its collective durations and iteration figures (small arrays), never a rank's
    tables."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.labels: list[dict[str, int]] = []
        self.colls: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # key ids, durations, iterations
        self.its: list[pd.DataFrame | None] = []
        self.keys: dict[tuple[str, int], int] = {}
        self.fingerprints: dict[str, list[str]] = {}
        self.nvtx: dict[str, list[int]] = {}
        self.coll_bytes: dict[str, int] = {}
        self.skipped: list[dict[str, str]] = []
        self.notes: list[str] = []
        self.order: list[int] = []
        self._skip_order: list[int] = []
        self.meta: list[dict[str, Any]] = []

    def skip(self, capture: str, why: str, index: int | None = None) -> None:
        """Leave out ``capture`` (its place among those given: ``index``) for the reason ``why``."""
        self._skip_order.append(len(self._skip_order) if index is None else index)
        self.skipped.append({"capture": capture, "reason": why})

    def add(self, s: RankSummary, rank: int, index: int | None = None) -> None:
        """``index``: the capture's place among those given (results may arrive in any order; the
        merge orders them by it)."""
        self.order.append(len(self.order) if index is None else index)
        self.meta.append(s.meta)
        self.rows.append({"rank": rank, **s.row})
        self.labels.append(s.work_by_label)
        ids = np.fromiter((self.keys.setdefault((n, int(t)), len(self.keys)) for n, t in zip(s.coll_name, s.coll_nth,
                                                                                           strict=True)),
                          dtype="int64", count=len(s.coll_name))
        self.colls.append((ids, s.coll_dur, s.coll_iter))
        self.its.append(s.iterations)
        self.fingerprints.setdefault(s.fingerprint, []).append(s.capture)
        for name, (n, t) in s.nvtx.items():
            acc = self.nvtx.setdefault(name, [0, 0])
            acc[0] += n
            acc[1] += t
        for name, b in s.coll_bytes.items():
            self.coll_bytes[name] = self.coll_bytes.get(name, 0) + b

    # -- the per-rank table, as analysis.ranks computes it ------------------------------------------
    def _waits(self) -> tuple[np.ndarray, int, bool, np.ndarray | None]:
        """Per rank (in arrival order) its waiting; the number of matched launches; whether the
        launches differ between ranks; the shortest duration per key (None: no match)."""
        n = len(self.rows)
        has = [len(ids) > 0 for ids, _, _ in self.colls]
        with_kernels = [r["kernels"] > 0 for r in self.rows]
        present = [h for h, wk in zip(has, with_kernels, strict=True) if wk]
        if sum(with_kernels) < 2 or not all(present):
            return np.zeros(n, dtype="int64"), 0, False, None
        nkeys = len(self.keys)
        count = np.zeros(nkeys, dtype="int64")
        shortest = np.full(nkeys, np.iinfo("int64").max, dtype="int64")
        for (ids, d, _), wk in zip(self.colls, with_kernels, strict=True):
            if wk:
                count[ids] += 1
                np.minimum.at(shortest, ids, d)
        matched = count == sum(with_kernels)
        waits = np.zeros(n, dtype="int64")
        differ = False
        for i, ((ids, d, _), wk) in enumerate(zip(self.colls, with_kernels, strict=True)):
            if not wk:
                continue
            m = matched[ids]
            waits[i] = int((d[m] - shortest[ids[m]]).sum())
            differ |= bool(len(ids) != int(matched.sum()))
        return waits, int(matched.sum()), differ, np.where(matched, shortest, -1)

    def _keep(self, keep: list[int]) -> None:
        for name in ("rows", "labels", "colls", "its", "order", "meta"):
            lst = getattr(self, name)
            setattr(self, name, [lst[i] for i in keep])

    def _drop_other_runs(self) -> None:
        """Leave out the captures of another run: another tool than most ranks', or another command
        (ties: the first capture given decides)."""
        if not self.rows:
            return
        first: dict[tuple[Any, Any], int] = {}
        votes: dict[tuple[Any, Any], int] = {}
        for i, m in zip(self.order, self.meta, strict=True):
            key = (m.get("tool"), tuple(m.get("command") or ()))
            votes[key] = votes.get(key, 0) + 1
            first[key] = min(first.get(key, i), i)
        ref = max(votes, key=lambda k: (votes[k], -first[k]))
        ref_label = next(r["capture"] for r, m in zip(self.rows, self.meta, strict=True)  # (rows are in input order)
                         if (m.get("tool"), tuple(m.get("command") or ())) == ref)
        keep = []
        for j, m in enumerate(self.meta):
            if m.get("tool") != ref[0]:
                self.skip(self.rows[j]["capture"],
                          f"a {m.get('tool')} capture, not an {ref[0]} capture like {ref_label}", self.order[j])
            elif tuple(m.get("command") or ()) != ref[1]:
                self.skip(self.rows[j]["capture"], "another run's capture (its command differs from the other ranks': "
                          f"{' '.join(map(str, m.get('command') or ()))[:120]})", self.order[j])
            else:
                keep.append(j)
        self._keep(keep)

    def finish(self, top: int = 5) -> Fleet:
        self._keep(sorted(range(len(self.order)), key=lambda j: self.order[j]))
        self._drop_other_runs()
        self.skipped = [s for _, s in sorted(zip(self._skip_order, self.skipped, strict=True), key=lambda x: x[0])]
        if self.fingerprints:
            same = sorted(sorted(v) for v in self.fingerprints.values() if len(v) > 1)
            if same:
                ex = ", ".join(same[0][:3])
                self.notes.append(f"{sum(len(v) for v in same)} captures look identical to another (same kernels "
                                  f"and timings, e.g. {ex}): copies of one capture? each is counted as one rank")
        if not self.rows:
            table = pd.DataFrame(columns=["rank", "capture", "kernels", "kernel_time_ns", "comm_wait_ns", "slowest"])
            return Fleet(RankSkew(table, None, notes=["no rank could be read", *self.notes]), skipped=self.skipped)
        waits, matched, differ, shortest = self._waits()
        df = pd.DataFrame(self.rows)
        df["comm_wait_ns"] = waits
        order = np.argsort(df["rank"].to_numpy(), kind="mergesort")
        df = df.iloc[order].reset_index(drop=True)
        mean = df["compute_ns"].mean()
        df["vs_mean_pct"] = (df["compute_ns"] / mean - 1) * 100 if mean else 0.0
        if shortest is not None and df["comm_wait_ns"].max() > 0:
            df["slowest"] = df["comm_wait_ns"] == df["comm_wait_ns"].min()
        else:
            df["slowest"] = df["compute_ns"] == df["compute_ns"].max()
        if df["slowest"].sum() > 1:
            first = df.index[df["slowest"]][0]
            df["slowest"] = df.index == first
        cols = ["rank", "capture", "kernels", "kernel_time_ns", "gpu_busy_ns", "gpu_span_ns", "memcpy_bytes",
                "top_kernel", "top_kernel_ns", "comm_ns", "compute_ns", "comm_wait_ns", "vs_mean_pct", "slowest"]
        df = df[cols]
        notes = list(self.notes)
        if len(df) < 2:
            return Fleet(RankSkew(df, None, notes=["one rank only: nothing to compare", *notes]),
                         skipped=self.skipped)
        slowest = int(df.loc[df["slowest"], "rank"].iloc[0])
        if differ:
            notes.append("collective launches differ between ranks (captures of different windows?): waits are "
                         f"from the {matched} launches found on every rank")
        skew = RankSkew(df, slowest, self._longer(slowest, top), notes)
        tables = {int(r["rank"]): t for r, t in zip(self.rows, self.its, strict=True) if t is not None}
        if tables:
            skew.iterations, skew.iteration_spread = iteration_skew(tables)
        fleet = Fleet(skew, skipped=self.skipped)
        self._scale(fleet, df, shortest, top)
        return fleet

    def _longer(self, slowest: int, top: int) -> list[dict[str, Any]]:
        ranks = [int(r["rank"]) for r in self.rows]
        per_label = {r: pd.Series(lab, dtype="int64") for r, lab, row in zip(ranks, self.labels, self.rows,
                                                                             strict=True) if row["kernels"]}
        if slowest not in per_label or len(per_label) < 2:
            return []
        mine = per_label[slowest].groupby(level=0).sum()
        others_l = [s for r, s in per_label.items() if r != slowest]
        total = pd.Series(dtype="float64")
        for s in others_l:
            total = total.add(s.groupby(level=0).sum().astype("float64"), fill_value=0)
        others = total / len(others_l)
        both = pd.concat([mine.rename("rank_ns"), others.rename("others_mean_ns")], axis=1).fillna(0)
        both["extra_ns"] = both["rank_ns"] - both["others_mean_ns"]
        both = both[both["extra_ns"] > 0].sort_values("extra_ns", ascending=False).head(top)
        row = next(r for r in self.rows if int(r["rank"]) == slowest)
        others_compute = np.mean([r["compute_ns"] for r in self.rows if int(r["rank"]) != slowest])
        if row["compute_ns"] - others_compute <= 0:
            return []
        return [{"label": lab, "rank_ns": int(r.rank_ns), "others_mean_ns": int(r.others_mean_ns),
                 "extra_ns": int(r.extra_ns)} for lab, r in both.iterrows()]

    # -- the figures for many ranks -------------------------------------------------------------------
    def _per_iteration(self, shortest: np.ndarray | None) -> pd.DataFrame | None:
        """Long table: rank, iteration key, name, warmup, duration/idle/compute/comm/wait (ns)."""
        usable = [(int(r["rank"]), t, c) for r, t, c in zip(self.rows, self.its, self.colls, strict=True)
                  if t is not None and len(t)]
        if len(usable) < 2:
            return None
        by_name = all(t["name"].is_unique for _, t, _ in usable)
        frames = []
        for rank, t, (ids, d, it) in usable:
            n = len(t)
            wait = np.zeros(n, dtype="int64")
            if shortest is not None and len(ids):
                m = (shortest[ids] >= 0) & (it >= 0)
                wait = np.bincount(it[m], weights=(d[m] - shortest[ids[m]]), minlength=n).astype("int64")[:n]
            key = t["name"].to_numpy() if by_name else np.arange(n).astype(str)
            frames.append(pd.DataFrame({"rank": rank, "iteration": key, "name": t["name"].to_numpy(),
                                        "position": np.arange(n), "warmup": t["warmup"].to_numpy(dtype=bool),
                                        "duration_ns": t["duration_ns"].to_numpy(), "idle_ns": t["idle_ns"].to_numpy(),
                                        "compute_ns": t["compute_ns"].to_numpy(), "comm_ns": t["comm_ns"].to_numpy(),
                                        "wait_ns": wait}))
        long = pd.concat(frames, ignore_index=True)
        nranks = len(usable)
        counts = long.groupby("iteration")["rank"].transform("size")
        long = long[counts == nranks]
        warm = long.groupby("iteration")["warmup"].transform("any")
        return long.assign(warmup=warm.to_numpy(dtype=bool))

    def _scale(self, fleet: Fleet, df: pd.DataFrame, shortest: np.ndarray | None, top: int) -> None:
        long = self._per_iteration(shortest)
        it_mean = pd.Series(dtype="float64")
        if long is not None and len(long):
            steady = long[~long["warmup"]]
            it_mean = steady.groupby("rank")["duration_ns"].mean()
            agg = long.groupby("iteration", sort=False).agg(
                name=("name", "first"), position=("position", "min"), warmup=("warmup", "first"),
                min_ns=("duration_ns", "min"), median_ns=("duration_ns", "median"), max_ns=("duration_ns", "max"),
                compute_median_ns=("compute_ns", "median"), compute_max_ns=("compute_ns", "max"),
                comm_median_ns=("comm_ns", "median"), wait_median_ns=("wait_ns", "median"),
                wait_max_ns=("wait_ns", "max"), idle_median_ns=("idle_ns", "median"), idle_max_ns=("idle_ns", "max"))
            slow_rank = long.loc[long.groupby("iteration", sort=False)["duration_ns"].idxmax(), ["iteration", "rank"]]
            agg["slowest_rank"] = slow_rank.set_index("iteration")["rank"].reindex(agg.index).to_numpy()
            agg["spread_ns"] = agg["max_ns"] - agg["min_ns"]
            agg = agg.sort_values("position", kind="mergesort").reset_index(drop=True)
            fleet.iteration_skew = agg.drop(columns=["position"])
            wide = long.pivot(index="rank", columns="iteration", values="duration_ns")
            order = agg["name"].tolist() if long["iteration"].iloc[0] == long["name"].iloc[0] else None
            cols = list(dict.fromkeys(long.sort_values("position", kind="mergesort")["iteration"]))
            wide = wide[cols].sort_index()
            waits = long.pivot(index="rank", columns="iteration", values="wait_ns")[cols].sort_index()
            fleet.heatmap = {"ranks": [int(r) for r in wide.index], "iterations": order or cols,
                             "warmup": agg["warmup"].tolist(), "metric": "duration_ns",
                             "values": wide.to_numpy(dtype="int64").tolist(),
                             "waits": waits.to_numpy(dtype="int64").tolist() if waits.to_numpy().any() else None}
            fleet.delay = self._delay(long, fleet.skew.slowest_rank)
            steady_spread = agg.loc[~agg["warmup"], "spread_ns"]
            start_spread = agg.loc[agg["warmup"], "spread_ns"]
            fleet.skew.notes.append(
                f"iteration skew (max - min over ranks): steady state median {_ms(steady_spread.median())}, "
                f"start-up {_ms(start_spread.max()) if len(start_spread) else 'none'}")
        table = df.assign(iteration_mean_ns=df["rank"].map(it_mean).astype("float64"))
        fleet.distribution = {f: distribution(table[f].to_numpy(dtype="float64")) for f in FIGURES}
        outliers = []
        for f in ("compute_ns", "comm_wait_ns", "iteration_mean_ns"):
            x = table[f].to_numpy(dtype="float64")
            ok = ~np.isnan(x)
            if ok.sum() < 3:
                continue
            lab = np.full(len(x), "", dtype=object)
            lab[ok] = _robust_outliers(x[ok])
            med = float(np.median(x[ok]))
            for i in np.flatnonzero(lab != ""):
                outliers.append({"rank": int(table["rank"].iloc[i]), "figure": f, "value": float(x[i]),
                                 "median": med, "kind": str(lab[i])})
        fleet.outliers = sorted(outliers, key=lambda o: -abs(float(o["value"]) - float(o["median"])))[:50]
        med_wait = float(table["comm_wait_ns"].median())
        late = table.assign(others_wait_ns=med_wait - table["comm_wait_ns"]).sort_values(
            ["others_wait_ns", "rank"], ascending=[False, True], kind="mergesort").head(top)
        med_compute = float(table["compute_ns"].median())
        fleet.slowest = [{"rank": int(r["rank"]), "capture": r["capture"], "comm_wait_ns": int(r["comm_wait_ns"]),
                          "others_wait_ns": float(r["others_wait_ns"]),
                          "compute_vs_median_ns": float(r["compute_ns"] - med_compute),
                          "iteration_mean_ns": None if np.isnan(r["iteration_mean_ns"])
                          else float(r["iteration_mean_ns"]),
                          "why": _why(float(r["compute_ns"] - med_compute), float(r["others_wait_ns"]))}
                         for _, r in late.iterrows()]
        fleet.nvtx = [{"name": n, "count": c, "total_ns": t}
                      for n, (c, t) in sorted(self.nvtx.items(), key=lambda kv: -kv[1][1])[:20]]
        if self.coll_bytes:
            fleet.skew.notes.append("collective bytes over all ranks: " + ", ".join(
                f"{n} {b}" for n, b in sorted(self.coll_bytes.items())))

    def _delay(self, long: pd.DataFrame, slowest: int | None) -> dict[str, Any] | None:
        steady = long[~long["warmup"]]
        if slowest is None or steady.empty or slowest not in set(steady["rank"]):
            return None
        med = steady.groupby("iteration")[["idle_ns", "compute_ns", "wait_ns"]].median()
        mine = steady[steady["rank"] == slowest].set_index("iteration")[["idle_ns", "compute_ns", "wait_ns"]]
        diff = mine - med.reindex(mine.index)
        others = float((med["wait_ns"].reindex(mine.index) - mine["wait_ns"]).clip(lower=0).sum())
        return {"rank": slowest, "iterations": len(mine), "others_wait_ns": others,
                "host_side_ns": float(diff["idle_ns"].clip(lower=0).sum()),
                "longer_kernels_ns": float(diff["compute_ns"].clip(lower=0).sum()),
                "earlier_collective_wait_ns": float(diff["wait_ns"].clip(lower=0).sum())}


def _ms(ns: float) -> str:
    return "n/a" if ns is None or pd.isna(ns) else f"{ns / 1e6:.3f} ms"


def _why(extra_compute: float, others_wait: float) -> str:
    if others_wait <= 0:
        return "not late"
    if extra_compute > 0:
        return f"longer kernels (+{extra_compute / 1e6:.3f} ms compute vs the median rank)"
    return "host side: its kernels were no longer than the median rank's"


def merge(summaries: list[RankSummary], ranks: list[int] | None = None, top: int = 5) -> Fleet:
    """The merged figures of ``summaries`` (ranks: their rank numbers, default 0, 1, ...)."""
    m = Merger()
    for i, s in enumerate(summaries):
        m.add(s, ranks[i] if ranks else i, i)
    return m.finish(top)
