"""Information commands: doctor, arch, explain, build."""

from __future__ import annotations

from pathlib import Path

import click

from nsighttk.cli._base import (
    arch_option,
    cli,
    echo_json,
    json_option,
    out,
)

# ------------------------------------------------------------------------------- information

@cli.command()
@json_option
def doctor(as_json: bool) -> None:
    """What nsighttk can find: tools, versions, GPU, nvcc targets, and what is missing."""
    from nsighttk.commands import doctor as cmd
    from nsighttk.report import toolchain_text

    d = cmd.run()
    if as_json:
        echo_json(d)
    else:
        toolchain_text.render_doctor(d, out())


@cli.command("arch")
@click.argument("query", required=False)
@json_option
def arch_cmd(query: str | None, as_json: bool) -> None:
    """GPU model -> compute capability -> -arch; per-arch occupancy limits.

    QUERY is a model (H100, "RTX 4090") or an arch (sm_90, 9.0); without it, the whole table."""
    from nsighttk.commands import arch as cmd
    from nsighttk.report import toolchain_text

    data = cmd.run(query)
    if as_json:
        echo_json(data)
    elif query is None:
        toolchain_text.render_arch_table(data, out())
    else:
        toolchain_text.render_arch(query, data, out())


@cli.command("explain")
@click.argument("names", nargs=-1, required=True)
@json_option
def explain_cmd(names: tuple[str, ...], as_json: bool) -> None:
    """Decode kernel names: library, category, arch, tensor cores, types, layout, tiles, the op."""
    from nsighttk.commands import explain as cmd
    from nsighttk.report import torch_text

    infos = cmd.run(list(names))
    if as_json:
        echo_json([i.as_dict() for i in infos])
        return
    console = out()
    for i in infos:
        torch_text.render_explain(i, console)


# ------------------------------------------------------------------------------------- build

@cli.command("build")
@click.argument("target", required=False)
@arch_option(many=True)
@click.option("--out-dir", type=click.Path(path_type=Path), default=None,
              help="Root of the build tree (binaries go to OUT_DIR/<arch>/) [default: $NSIGHTTK_BUILD, else build].")
@click.option("--no-lineinfo", is_flag=True, help="Do not pass -lineinfo.")
@click.option("--force", is_flag=True, help="Rebuild even if the cached binary is up to date.")
@click.option("--list", "list_only", is_flag=True, help="List the bundled samples.")
@click.option("-X", "--nvcc-flag", "extra", multiple=True, help="Extra flag for nvcc (repeatable).")
def build_cmd(target: str | None, archs: tuple[str, ...], out_dir: Path | None, no_lineinfo: bool, force: bool,
              list_only: bool, extra: tuple[str, ...]) -> None:
    """Build a bundled sample (add, gelu, ...) or a .cu file with nvcc."""
    from nsighttk.commands import build as cmd
    from nsighttk.escape import text

    if list_only or target is None:
        for name in cmd.samples():
            click.echo(name)
        return
    res = cmd.run(cmd.Options(target, list(archs), not no_lineinfo, list(extra), out_dir, force))
    console = out()
    console.print(text(f"{res.binary} ({'up to date' if res.cached else 'built'}; {', '.join(res.archs)})"))
    console.print(text("  " + " ".join(res.command), style="dim"))
