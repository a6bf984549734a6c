"""Open an HTML report in headless Chromium (Debian's ``chromium``) and read back what a person
would see: the DOM after the page's scripts ran, Chromium's console log, and a screenshot.

``make setup`` installs chromium (tests/tools/system-packages.sh).  Without it the browser tests
skip, except where ``NSIGHTTK_REQUIRE_BROWSER=1`` (CI sets it): there a missing browser fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ARTIFACTS = Path(os.environ.get("NSIGHTTK_TEST_ARTIFACTS", Path(__file__).parent.parent / "build" / "test-artifacts"))
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
          "--disable-extensions", "--mute-audio", "--enable-logging=stderr", "--v=0"]


def chromium() -> str:
    exe = os.environ.get("NSIGHTTK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        if os.environ.get("NSIGHTTK_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed (make setup installs it: tests/tools/system-packages.sh)")
        pytest.skip("chromium not installed (make setup installs it)")
    return exe


@dataclass
class Rendered:
    dom: str
    console: str  # chromium's stderr: console messages appear as "CONSOLE" lines

    def attr(self, name: str) -> str | None:
        m = re.search(rf'<body[^>]*\s{name}="([^"]*)"', self.dom)
        return m.group(1) if m else None

    def charts(self) -> list[tuple[str, int]]:
        """(kind, marks drawn) of every chart element, in page order."""
        out = []
        for tag in re.findall(r'<div class="chart" data-chart="[^"]*"[^>]*>', self.dom):
            kind = re.search(r'data-chart="([^"]*)"', tag)
            drawn = re.search(r'data-drawn="(\d+)"', tag)
            out.append((kind.group(1) if kind else "?", int(drawn.group(1)) if drawn else -1))
        return out

    def errors(self) -> list[str]:
        box = re.search(r'<div id="nsighttk-errors"[^>]*>(.*?)</div>', self.dom, re.S)
        listed = re.findall(r"<li>(.*?)</li>", box.group(1)) if box else []
        console = [ln for ln in self.console.splitlines()
                   if "CONSOLE" in ln and re.search(r"Uncaught|Error|error", ln)]
        return listed + console


def render(page: Path, timeout: float = 90) -> Rendered:
    """The page's DOM once its scripts have run (and chromium's log)."""
    with tempfile.TemporaryDirectory(prefix="nsighttk-chromium-") as profile:
        cmd = [chromium(), *_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom",
               page.resolve().as_uri()]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    assert r.returncode == 0, f"chromium failed ({r.returncode}): {r.stderr[-2000:]}"
    return Rendered(r.stdout, r.stderr)


def screenshot(page: Path, name: str, width: int = 1400, height: int = 2000, timeout: float = 90) -> Path:
    """A PNG of the page, kept under build/test-artifacts/ (CI keeps it as an artifact)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / name
    with tempfile.TemporaryDirectory(prefix="nsighttk-chromium-") as profile:
        cmd = [chromium(), *_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
               "--virtual-time-budget=5000", f"--screenshot={out}", page.resolve().as_uri()]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    assert r.returncode == 0 and out.is_file(), f"chromium screenshot failed: {r.stderr[-2000:]}"
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("HOME", tempfile.gettempdir())
    return env
