"""Chromium's own sandbox (BROWSER_SANDBOX, runs/engine/browser.py sandbox_state): on when the service is not root and
the kernel allows it, with real Chromium started by another user than root; off, and saying why, as root; `on` never
starts a browser without it."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import pytest

from runs.engine.browser import Browser, sandbox_state
from runs.engine.spec import EngineError

ROOT = Path(__file__).resolve().parents[2]

# Run as `nobody`: our Browser with the given BROWSER_SANDBOX loads a page, then every renderer process of that
# Chromium is compared with this process: Chromium's namespace sandbox puts renderers in user and PID namespaces of
# their own, which --no-sandbox does not.
AS_ANOTHER_USER = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, sys.argv[2])
    from runs.engine.browser import Browser, sandbox_state
    browser = Browser("/usr/bin/chromium", sandbox=sys.argv[1])
    context = browser.new_context()
    page = context.new_page()
    page.set_content("<title>probe</title><p>sandboxed?</p>")
    print(json.dumps({"state": sandbox_state(sys.argv[1]), "title": page.title(), "pid": os.getpid()}), flush=True)
    sys.stdin.readline()  # the test looks at the processes meanwhile
    context.close()
    browser.close()
    """
)


def renderers_of(pid: int) -> list[tuple[str, str]]:
    """The (user, PID) namespaces of every Chromium renderer descending from pid. Read as root: a sandboxed
    renderer is not dumpable, so its /proc entries are root's."""

    def parent(of: str) -> str | None:
        try:
            status = Path(f"/proc/{of}/status").read_text()
        except OSError:
            return None
        return next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), None)

    found = []
    for candidate in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{candidate}/cmdline").read_bytes()  # zygote children: one space-joined string
        except OSError:
            continue
        if b"--type=renderer" not in command:
            continue
        ancestor, seen = parent(candidate), 0
        while ancestor not in (None, "0", "1", str(pid)) and seen < 20:
            ancestor, seen = parent(ancestor), seen + 1
        if ancestor == str(pid):
            found.append((os.readlink(f"/proc/{candidate}/ns/user"), os.readlink(f"/proc/{candidate}/ns/pid")))
    return found


def python_for(user: pwd.struct_passwd) -> str | None:
    """This Python, or the system's of the same version when this one is where the user cannot reach it (pyenv's
    under /root); the project's packages come from PYTHONPATH."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        try:
            if subprocess.run([candidate, "-c", "pass"], user=user.pw_uid, group=user.pw_gid).returncode == 0:
                return candidate
        except OSError:
            continue
    return None


def nobody_can_import_the_checkout(python: str, user: pwd.struct_passwd, python_path: str) -> bool:
    """Whether the user reaches this checkout and its packages: not when one of their parent directories is closed
    to others (a clone made under a 0700 directory, as mktemp -d makes)."""
    probe = subprocess.run(
        [python, "-c", "import playwright.sync_api, runs.engine.browser"],
        user=user.pw_uid,
        group=user.pw_gid,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": python_path},
        capture_output=True,
    )
    return probe.returncode == 0


def as_nobody(mode: str) -> dict:
    nobody = pwd.getpwnam("nobody")
    python = python_for(nobody)
    if python is None:
        pytest.skip("no Python of this version that the user nobody can run")
    python_path = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
    if not nobody_can_import_the_checkout(python, nobody, python_path):
        pytest.skip(f"the user nobody cannot read {ROOT} or its packages (a parent directory is closed to others)")
    home = Path(tempfile.mkdtemp(prefix="sandbox-home-"))  # pytest's tmp_path is under a root-only directory
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    child = subprocess.Popen(
        [python, "-c", AS_ANOTHER_USER, mode, str(ROOT)],
        user=nobody.pw_uid,
        group=nobody.pw_gid,
        extra_groups=[],
        env={
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "TMPDIR": str(home),
            "PYTHONPATH": python_path,
        },
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = child.stdout.readline()
        seen = json.loads(line) if line else {}
        if seen:
            seen["own"] = [os.readlink(f"/proc/{child.pid}/ns/user"), os.readlink(f"/proc/{child.pid}/ns/pid")]
            seen["renderers"] = renderers_of(child.pid)
        _, errors = child.communicate("done\n", timeout=60)
    finally:
        child.kill()
        shutil.rmtree(home, ignore_errors=True)
    assert seen, errors[-3000:]
    return seen


def userns_allowed() -> bool:
    nobody = pwd.getpwnam("nobody")
    python = python_for(nobody)
    if python is None:
        pytest.skip("no Python of this version that the user nobody can run")
    probe = "import ctypes, sys; sys.exit(ctypes.CDLL(None, use_errno=True).unshare(0x10000000))"
    return subprocess.run([python, "-c", probe], user=nobody.pw_uid, group=nobody.pw_gid).returncode == 0


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the tests switch to another user, which needs root")


@needs_root
def test_as_another_user_chromium_runs_in_its_sandbox():
    if not userns_allowed():
        pytest.skip("this kernel does not let an unprivileged user create user namespaces")
    seen = as_nobody("auto")
    assert seen["state"] == [True, "on: Chromium's namespace sandbox"]
    assert seen["title"] == "probe"
    assert seen["renderers"], "no renderer process found"
    for user_ns, pid_ns in seen["renderers"]:
        assert (user_ns, pid_ns) != tuple(seen["own"])  # in namespaces of their own: sandboxed
        assert pid_ns != seen["own"][1]


@needs_root
def test_sandbox_off_leaves_the_renderers_in_the_services_namespaces():
    # The control for the test above: the same probe sees the difference.
    seen = as_nobody("off")
    assert seen["state"] == [False, "off: BROWSER_SANDBOX=off"]
    assert seen["renderers"]
    assert all(pid_ns == seen["own"][1] for _, pid_ns in seen["renderers"])


@needs_root
def test_as_root_the_sandbox_is_off_and_says_why():
    assert sandbox_state("auto") == (False, "off: the service runs as root, and Chromium's sandbox cannot run as root")


@needs_root
def test_sandbox_on_never_starts_a_browser_without_it():
    browser = Browser("/usr/bin/chromium", sandbox="on")
    with pytest.raises(EngineError) as refused:
        browser.new_context()
    assert refused.value.code == "browser_sandbox"
    assert "BROWSER_SANDBOX=on" in str(refused.value) and "root" in str(refused.value)
    browser.close()


@needs_root
def test_serve_refuses_to_start_with_sandbox_on_where_it_cannot_run(tmp_path):
    env = {**os.environ, "SERVICE_DATA_DIR": str(tmp_path), "BROWSER_SANDBOX": "on", "SERVICE_PORT": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "serve", "--no-migrate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "BROWSER_SANDBOX=on, but Chromium's sandbox is off: the service runs as root" in done.stderr
    assert "serving on" not in done.stdout
