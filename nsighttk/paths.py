"""Where the project's bundled folders are: an environment override, the checkout, or ./NAME."""

from __future__ import annotations

import os
from pathlib import Path


def bundled_dir(folder: str, env_var: str) -> Path:
    """``$ENV_VAR``, else ``<checkout>/<folder>`` when nsighttk runs from a checkout, else ``./<folder>``."""
    env = os.environ.get(env_var)
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent / folder
    return here if here.is_dir() else Path(folder)
