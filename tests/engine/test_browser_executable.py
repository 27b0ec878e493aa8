"""Which Chromium runs use (README, BROWSER_EXECUTABLE): the configured path, else Playwright's own install, else
/usr/bin/chromium, else `chromium`, `chromium-browser`, `google-chrome` on PATH, in that order.

Each case runs in a fresh process whose PATH holds only temporary directories of fake executables and whose
PLAYWRIGHT_BROWSERS_PATH points at a temporary Playwright install (empty, or with a fake Chromium in it). To see
the PATH fallbacks on a machine that has /usr/bin/chromium, a user and mount namespace hides it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIND = "import sys; from runs.engine.browser import find_executable; print(find_executable(sys.argv[1] or None))"
PLAYWRIGHT_PATH = (
    "from playwright.sync_api import sync_playwright\nwith sync_playwright() as p: print(p.chromium.executable_path)"
)
SYSTEM_CHROMIUM = Path("/usr/bin/chromium")


def fake_executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def python_env(path_dirs: list[Path], browsers: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PATH", "BROWSER_EXECUTABLE")}
    return {**env, "PATH": os.pathsep.join(map(str, path_dirs)), "PLAYWRIGHT_BROWSERS_PATH": str(browsers)}


def run_python(code: str, env: dict[str, str], *args: str, hide_system_chromium: Path | None = None) -> str:
    command = [sys.executable, "-c", code, *args]
    if hide_system_chromium is not None:
        # A non-executable empty file mounted over /usr/bin/chromium, visible only to this process.
        command = [
            "/usr/bin/unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "/bin/sh",
            "-c",
            f'/usr/bin/mount --bind "$0" {SYSTEM_CHROMIUM} && exec "$@"',
            str(hide_system_chromium),
            *command,
        ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def machine(tmp_path):
    """Temporary PATH directories, each able to hold fake browsers, and an empty Playwright install."""
    dirs = [tmp_path / "bin1", tmp_path / "bin2", tmp_path / "bin3"]
    for directory in dirs:
        directory.mkdir()
    browsers = tmp_path / "ms-playwright"
    browsers.mkdir()
    return dirs, browsers


def found(machine, configured: str = "", **kwargs) -> str:
    dirs, browsers = machine
    return run_python(FIND, python_env(dirs, browsers), configured, **kwargs)


def playwright_own(browsers: Path) -> Path:
    """Where Playwright looks for its own Chromium under this PLAYWRIGHT_BROWSERS_PATH (Playwright's answer)."""
    return Path(run_python(PLAYWRIGHT_PATH, python_env([], browsers)))


def test_browser_executable_wins_over_everything(machine, tmp_path):
    dirs, browsers = machine
    fake_executable(playwright_own(browsers))
    fake_executable(dirs[0] / "chromium")
    configured = fake_executable(tmp_path / "my" / "chrome")
    assert found(machine, str(configured)) == str(configured)


def test_playwrights_own_install_comes_before_the_systems(machine):
    dirs, browsers = machine
    own = fake_executable(playwright_own(browsers))
    fake_executable(dirs[0] / "chromium")
    fake_executable(dirs[0] / "google-chrome")
    assert found(machine) == str(own)


@pytest.mark.skipif(not os.access(SYSTEM_CHROMIUM, os.X_OK), reason="no /usr/bin/chromium on this machine")
def test_without_playwrights_install_usr_bin_chromium_comes_before_path(machine):
    dirs, _ = machine
    fake_executable(dirs[0] / "chromium")
    fake_executable(dirs[0] / "google-chrome")
    assert found(machine) == str(SYSTEM_CHROMIUM)


def namespaces_work() -> bool:
    try:
        done = subprocess.run(["/usr/bin/unshare", "--user", "--map-root-user", "--mount", "true"], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and shutil.which("mount", path="/usr/bin") is not None


@pytest.mark.skipif(not namespaces_work(), reason="needs user and mount namespaces to hide /usr/bin/chromium")
def test_on_path_chromium_then_chromium_browser_then_google_chrome(machine, tmp_path):
    dirs, _ = machine
    hidden = tmp_path / "hidden"
    hidden.write_text("")
    # Earlier PATH directories hold the later names: the name's rank decides, not the directory's.
    chrome = fake_executable(dirs[0] / "google-chrome")
    chromium_browser = fake_executable(dirs[1] / "chromium-browser")
    chromium = fake_executable(dirs[2] / "chromium")
    results = []
    for remove in (None, chromium, chromium_browser, chrome):
        if remove is not None:
            remove.unlink()
        results.append(found(machine, hide_system_chromium=hidden))
    assert results == [str(chromium), str(chromium_browser), str(chrome), "None"]
