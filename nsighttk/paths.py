"""Where the project's bundled folders (``cuda_samples/``, ``kernels/``) are.

They live at the top of the repository and ship inside the installed package as
``nsighttk/bundled/<folder>`` (pyproject.toml maps them into the wheel).  In order:

1. the settings' override (``$NSIGHTTK_SAMPLES``, ``$NSIGHTTK_KERNELS``: a user's own folder);
2. the installed package's copy, ``<package>/bundled/<folder>`` (a wheel, ``pipx``);
3. the checkout's ``<repository>/<folder>`` when nsighttk runs from a checkout (editable install,
   ``PYTHONPATH``): a folder beside ``pyproject.toml``, so a stray ``site-packages/kernels`` of some
   other distribution is never taken for ours.

Without any of them the package's (missing) path is returned: listings come out empty and a
lookup names where it looked.
"""

from __future__ import annotations

from pathlib import Path

from nsighttk.settings import current

PACKAGE = Path(__file__).resolve().parent
BUNDLED = PACKAGE / "bundled"


def bundled_dir(folder: str) -> Path:
    """``cuda_samples`` or ``kernels``: the settings' override, else the installed package's copy,
    else the checkout's."""
    s = current()
    override = {"cuda_samples": s.samples_dir, "kernels": s.kernels_dir}.get(folder)
    if override:
        return Path(override)
    packaged = BUNDLED / folder
    if packaged.is_dir():
        return packaged
    checkout = PACKAGE.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / folder).is_dir():
        return checkout / folder
    return packaged
