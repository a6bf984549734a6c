"""One summary across the ranks of a multi-process run (nsys per rank, e.g. ``-o rank%q{RANK}``
under torchrun, ``%q{SLURM_PROCID}`` under srun, ``%q{OMPI_COMM_WORLD_RANK}`` under mpirun; or one
torch.profiler trace per rank): per rank its kernel time, GPU busy time and span, top kernel, time
in collectives and time spent waiting in them; the slowest rank and what it spent longer on.

Waiting in collectives.  A collective kernel starts on each rank when that rank gets to it and ends
on all ranks at about the same time, once the last rank has arrived; so on the ranks that arrived
early it lasts longer, by the time they waited.  Matching the n-th launch of the same collective
kernel across ranks (NCCL requires every rank to issue a communicator's collectives in the same
order), ``wait = duration - the shortest duration of that collective on any rank``.  This needs no
common clock across ranks (nodes' clocks differ); it is an estimate: a rank whose link is slower
also runs longer collectives.  The rank that waits least is the one the others wait for: the
slowest.  Its non-communication kernels, per kernel, against the other ranks' mean, say what it
spent longer on; when its kernels were not longer, the delay is on the host side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis.iterations.intervals import gpu_busy_ns
from nsighttk.analysis.kernels.names import is_collective, short_label
from nsighttk.profile import Profile


def rank_of(label: str, fallback: int) -> int:
    """The rank in a per-rank file name (``rank3.sqlite``, ``prof.3.sqlite``), else ``fallback``."""
    m = re.search(r"(\d+)(?!.*\d)", label)
    return int(m.group(1)) if m else fallback


def _is_comm(k: pd.DataFrame) -> np.ndarray:
    names = pd.Series(k["name"].unique(), dtype=object)
    comm = set(names[names.map(is_collective)])
    return k["name"].isin(comm).to_numpy()


def rank_summary(profiles: dict[str, Profile]) -> pd.DataFrame:
    """``profiles``: file label -> Profile.  One row per rank, sorted by rank: rank, capture, kernels,
    kernel_time_ns, gpu_busy_ns, gpu_span_ns, memcpy_bytes, top_kernel, top_kernel_ns, comm_ns (time
    in collective kernels), compute_ns (the other kernels), comm_wait_ns (see the module doc),
    vs_mean_pct (compute time against the mean), slowest (the rank the others wait for when the
    ranks wait in collectives, else the one with the most compute time)."""
    rows = []
    for i, (label, p) in enumerate(profiles.items()):
        k = p.kernels
        ivs = [(t["start_ns"].to_numpy(dtype="int64"), t["end_ns"].to_numpy(dtype="int64"))
               for t in (p.kernels, p.memcpy, p.memset) if len(t)]
        span = int(max(e.max() for _, e in ivs) - min(s.min() for s, _ in ivs)) if ivs else 0
        top = k.groupby("name")["duration_ns"].sum().sort_values(ascending=False) if len(k) else pd.Series(dtype=float)
        comm = k["duration_ns"][_is_comm(k)].sum() if len(k) else 0
        rows.append({"rank": rank_of(label, i), "capture": label, "kernels": len(k),
                     "kernel_time_ns": int(k["duration_ns"].sum()), "gpu_busy_ns": gpu_busy_ns(p),
                     "gpu_span_ns": span, "memcpy_bytes": int(p.memcpy["bytes"].sum()),
                     "top_kernel": str(top.index[0]) if len(top) else "",
                     "top_kernel_ns": int(top.iloc[0]) if len(top) else 0, "comm_ns": int(comm),
                     "compute_ns": int(k["duration_ns"].sum() - comm)})
    df = pd.DataFrame(rows).sort_values("rank", kind="mergesort").reset_index(drop=True)
    waits = collective_waits(profiles)
    df["comm_wait_ns"] = df["rank"].map(waits.set_index("rank")["wait_ns"]).fillna(0).astype("int64") \
        if len(waits) else 0
    mean = df["compute_ns"].mean()
    df["vs_mean_pct"] = (df["compute_ns"] / mean - 1) * 100 if mean else 0.0
    if len(waits) and df["comm_wait_ns"].max() > 0:
        df["slowest"] = df["comm_wait_ns"] == df["comm_wait_ns"].min()
    else:
        df["slowest"] = df["compute_ns"] == df["compute_ns"].max()
    if df["slowest"].sum() > 1:  # a tie: name the first
        first = df.index[df["slowest"]][0]
        df["slowest"] = df.index == first
    return df


def collective_waits(profiles: dict[str, Profile]) -> pd.DataFrame:
    """Per rank: comm_kernels, matched (collective launches found on every rank), comm_ns (their
    summed duration), wait_ns (summed duration beyond the shortest rank's; see the module doc).
    Empty when no collective is found on every rank."""
    per_rank: dict[int, pd.DataFrame] = {}
    for i, (label, p) in enumerate(profiles.items()):
        k = p.kernels
        if not len(k):
            continue
        c = k[_is_comm(k)].sort_values("start_ns", kind="mergesort")
        c = c.assign(nth=c.groupby("name").cumcount())[["name", "nth", "duration_ns"]]
        per_rank[rank_of(label, i)] = c
    if len(per_rank) < 2 or any(not len(c) for c in per_rank.values()):
        return pd.DataFrame(columns=["rank", "comm_kernels", "matched", "comm_ns", "wait_ns"])
    keys = None
    for c in per_rank.values():
        ks = set(zip(c["name"], c["nth"], strict=True))
        keys = ks if keys is None else keys & ks
    rows = []
    frames = {r: c.set_index(["name", "nth"])["duration_ns"] for r, c in per_rank.items()}
    matched = sorted(keys or [])
    durs = pd.DataFrame({r: f.reindex(matched).to_numpy() for r, f in frames.items()})
    shortest = durs.min(axis=1) if len(durs) else pd.Series(dtype="int64")
    for r, c in sorted(per_rank.items()):
        d = durs[r] if len(durs) else pd.Series(dtype="int64")
        rows.append({"rank": r, "comm_kernels": len(c), "matched": len(matched), "comm_ns": int(d.sum()),
                     "wait_ns": int((d - shortest).sum())})
    return pd.DataFrame(rows)


def iteration_skew(tables: dict[int, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Iteration time across ranks.  ``tables``: rank -> that rank's iterations, one row per iteration
    with at least ``name``, ``duration_ns`` and ``warmup`` (the table of
    :func:`nsighttk.analysis.iterations.find.iterations`).  Iterations are matched by name when every rank
    names its iterations uniquely (``step 3``, ``ProfilerStep#3``), else by position; an iteration that
    is warm-up on any rank is left out.

    Returns ``(per_rank, per_iteration)``: per rank: rank, iterations, mean_ns, median_ns, max_ns,
    vs_mean_pct (its mean against the mean over ranks); per iteration: name, min_ns, max_ns, spread_ns
    (max - min over ranks), slowest_rank."""
    empty = (pd.DataFrame(columns=["rank", "iterations", "mean_ns", "median_ns", "max_ns", "vs_mean_pct"]),
             pd.DataFrame(columns=["name", "min_ns", "max_ns", "spread_ns", "slowest_rank"]))
    usable = {r: t for r, t in tables.items() if t is not None and len(t)}
    if len(usable) < 2:
        return empty
    by_name = all(t["name"].is_unique for t in usable.values())
    cols = {}
    warm = set()
    for r, t in usable.items():
        keys = t["name"].astype(str) if by_name else pd.Series(range(len(t)), index=t.index).astype(str)
        cols[r] = pd.Series(t["duration_ns"].to_numpy(dtype="int64"), index=keys.to_numpy())
        warm |= set(keys[t["warmup"].to_numpy(dtype=bool)])
    wide = pd.DataFrame(cols).dropna()
    wide = wide[~wide.index.isin(warm)].astype("int64")
    if wide.empty:
        return empty
    per_it = pd.DataFrame({"name": wide.index, "min_ns": wide.min(axis=1).to_numpy(),
                           "max_ns": wide.max(axis=1).to_numpy(), "slowest_rank": wide.idxmax(axis=1).to_numpy()})
    per_it.insert(3, "spread_ns", per_it["max_ns"] - per_it["min_ns"])
    mean_all = float(wide.to_numpy().mean())
    per_rank = pd.DataFrame({"rank": list(wide.columns), "iterations": len(wide),
                             "mean_ns": wide.mean().round().astype("int64").to_numpy(),
                             "median_ns": wide.median().round().astype("int64").to_numpy(),
                             "max_ns": wide.max().to_numpy()})
    per_rank["vs_mean_pct"] = (wide.mean().to_numpy() / mean_all - 1) * 100 if mean_all else 0.0
    return per_rank.sort_values("rank", ignore_index=True), per_it


@dataclass
class RankSkew:
    """Who the other ranks wait for, and why."""

    table: pd.DataFrame  # rank_summary's rows
    slowest_rank: int | None
    #: per kernel label: the slowest rank's time, the other ranks' mean, the difference (ns); largest first
    longer: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: iteration_skew()'s two tables when the ranks' iterations were given
    iterations: pd.DataFrame | None = None
    iteration_spread: pd.DataFrame | None = None

    def verdict(self) -> str:
        """One line naming the slowest rank and what it spent longer on."""
        t = self.table
        if self.slowest_rank is None or t.empty:
            return "no rank stands out"
        row = t[t["rank"] == self.slowest_rank].iloc[0]
        others = t[t["rank"] != self.slowest_rank]
        waited = int(others["comm_wait_ns"].mean() - row["comm_wait_ns"]) if len(others) else 0
        head = f"rank {self.slowest_rank} is the slowest"
        if waited > 0:
            head += f": the other ranks wait {waited / 1e6:.3f} ms more for it in collectives"
        it = self.iterations
        if it is not None and len(it) and self.slowest_rank in set(it["rank"]):
            mine = it[it["rank"] == self.slowest_rank].iloc[0]
            head += (f"; its steady-state iterations take {mine['mean_ns'] / 1e6:.3f} ms on average "
                     f"({mine['vs_mean_pct']:+.1f}% vs all ranks, {int(mine['iterations'])} iterations)")
        if self.longer:
            top = ", ".join(f"{x['label']} (+{x['extra_ns'] / 1e6:.3f} ms)" for x in self.longer[:3])
            return f"{head}; its kernels took longer: {top}"
        extra = row["compute_ns"] - (others["compute_ns"].mean() if len(others) else 0)
        return (f"{head}; its kernels took no longer than the others' ({extra / 1e6:+.3f} ms): the delay is before "
                "its GPU work (host side: data loading, Python, launch)")

    def as_dict(self) -> dict[str, Any]:
        its = None if self.iterations is None else {
            "per_rank": self.iterations.to_dict("records"),
            "per_iteration": None if self.iteration_spread is None else self.iteration_spread.to_dict("records")}
        return {"slowest_rank": self.slowest_rank, "verdict": self.verdict(), "longer": self.longer,
                "notes": self.notes, "iterations": its,
                "ranks": [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in r.items()}
                          for r in self.table.to_dict("records")]}


def rank_skew(profiles: dict[str, Profile], top: int = 5,
              iterations: dict[int, pd.DataFrame] | None = None) -> RankSkew:
    """:func:`rank_summary`, the slowest rank, and the kernels it spent longer on than the mean of
    the other ranks (communication kernels left out: their time is waiting, not work).  With
    ``iterations`` (rank -> its iterations table), also the iteration-time skew (:func:`iteration_skew`)."""
    table = rank_summary(profiles)
    if len(table) < 2:
        return RankSkew(table, None, notes=["one rank only: nothing to compare"])
    slowest = int(table.loc[table["slowest"], "rank"].iloc[0])
    notes = []
    waits = collective_waits(profiles)
    if len(waits) and (waits["comm_kernels"] != waits["matched"]).any():
        notes.append("collective launches differ between ranks (captures of different windows?): waits are from the "
                     f"{int(waits['matched'].iloc[0])} launches found on every rank")
    per_label: dict[int, pd.Series] = {}
    for i, (label, p) in enumerate(profiles.items()):
        k = p.kernels
        if not len(k):
            continue
        work = k[~_is_comm(k)]
        per_label[rank_of(label, i)] = work.groupby(work["name"].map(short_label))["duration_ns"].sum()
    longer: list[dict[str, Any]] = []
    if slowest in per_label and len(per_label) > 1:
        mine = per_label[slowest]
        others = pd.concat([s for r, s in per_label.items() if r != slowest], axis=1).fillna(0).mean(axis=1)
        both = pd.concat([mine.rename("rank_ns"), others.rename("others_mean_ns")], axis=1).fillna(0)
        both["extra_ns"] = both["rank_ns"] - both["others_mean_ns"]
        both = both[both["extra_ns"] > 0].sort_values("extra_ns", ascending=False).head(top)
        longer = [{"label": lab, "rank_ns": int(r.rank_ns), "others_mean_ns": int(r.others_mean_ns),
                   "extra_ns": int(r.extra_ns)} for lab, r in both.iterrows()]
        total_extra = table.loc[table["rank"] == slowest, "compute_ns"].iloc[0] - \
            table.loc[table["rank"] != slowest, "compute_ns"].mean()
        if total_extra <= 0:
            longer = []  # kernel-level noise, not a reason: its kernels were not longer overall
    skew = RankSkew(table, slowest, longer, notes)
    if iterations:
        skew.iterations, skew.iteration_spread = iteration_skew(iterations)
    return skew
