"""``nsighttk doctor``: what nsighttk can find (tools, versions, GPUs, nvcc targets, the default
``--arch``) and what each missing piece disables."""

from __future__ import annotations

from typing import Any

from nsighttk import toolchain
from nsighttk.build import default_arch


def run() -> dict[str, Any]:
    d = toolchain.doctor()
    d["default_arch"] = default_arch()  # the one default of every --arch ($NSIGHTTK_ARCH, GPU, sm_75)
    return d
