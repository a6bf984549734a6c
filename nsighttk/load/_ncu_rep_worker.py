"""Read a .ncu-rep with NVIDIA's ncu_report and print its metrics and rule results as JSON lines.

Runs in its own process and imports nothing but the standard library and ncu_report: the
ncu_report shipped with Nsight Compute 2025.3.1 crashes (SIGSEGV in IMetric.unit) when numpy
is loaded in the same process (seen on an H200 machine), so nsighttk never loads it beside pandas.

    python -m nsighttk.load._ncu_rep_worker REPORT [DIR_WITH_NCU_REPORT]
"""

import json
import sys


def _nvtx(action) -> str:
    """The NVTX push/pop stack (and start/end ranges) around a kernel: "demo/step 0/compute"."""
    try:
        state = action.nvtx_state()
    except Exception:
        return ""
    if state is None:
        return ""
    parts = []
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        name = dom.name() or ""
        prefix = "" if name in ("", "<default domain>") else f"{name}:"
        stack = [str(r) for r in dom.push_pop_ranges()]
        if stack:
            parts.append(prefix + "/".join(stack))
        parts += [prefix + str(r) for r in dom.start_end_ranges()]
    return "; ".join(parts)


def main() -> int:
    path = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2]:
        sys.path.insert(0, sys.argv[2])
    import ncu_report

    ctx = ncu_report.load_report(path)
    out = sys.stdout
    kid = 0
    for ri in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(ri)
        for ai in range(rng.num_actions()):
            a = rng.action_by_idx(ai)
            name = a.name(ncu_report.IAction.NameBase_DEMANGLED) or ""  # None in a damaged report
            for m in a.metric_names():
                metric = a.metric_by_name(m)
                try:
                    value = metric.value()
                except Exception:
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                    continue
                out.write(json.dumps({"k": kid, "n": name, "m": m, "u": metric.unit() or "",
                                      "v": value if not isinstance(value, str) else None,
                                      "t": value if isinstance(value, str) else None}) + "\n")
            nvtx = _nvtx(a)
            if nvtx:
                out.write(json.dumps({"k": kid, "n": name, "m": "nvtx__range", "u": "", "v": None, "t": nvtx}) + "\n")
            for r in a.rule_results_as_dicts():
                out.write(json.dumps({"k": kid, "n": name, "rule": r}, default=str) + "\n")
            kid += 1
    out.write(json.dumps({"actions": kid}) + "\n")  # how many kernels the report lists
    return 0


if __name__ == "__main__":
    sys.exit(main())
