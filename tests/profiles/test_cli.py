"""The `profile` and `fetch` commands as users type them."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest
from django.core.management import CommandError, call_command
from playwright.sync_api import sync_playwright

from tests.live import ROOT, free_port
from tests.site import LOGIN_PASSWORD, LOGIN_USER, real_login_state

pytestmark = pytest.mark.django_db(transaction=True)

STATE = {
    "cookies": [{"name": "sid", "value": "canary-cli-cookie", "domain": "127.0.0.1", "path": "/", "expires": -1}],
    "origins": [],
}


def run_command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_import_list_check_delete(tmp_path, data_dir):
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(STATE))
    out, _ = run_command("profile", "import", "shop", str(state_file))
    assert out.startswith("shop") and "session-only" in out and "canary-cli-cookie" not in out
    listed = json.loads(run_command("profile", "list", "--json")[0])
    assert [(p["name"], p["cookies"]["status"]) for p in listed] == [("shop", "session-only")]
    assert "canary-cli-cookie" not in json.dumps(listed)
    out, _ = run_command("profile", "check", "shop")
    assert "session-only" in out
    with pytest.raises(CommandError) as exists:
        run_command("profile", "import", "shop", str(state_file))
    assert "--overwrite" in str(exists.value)
    run_command("profile", "delete", "shop")
    assert not (data_dir / "profiles" / "shop.json").exists()
    with pytest.raises(CommandError) as bad_name:
        run_command("profile", "import", "../shop", str(state_file))
    assert bad_name.value.returncode == 2


def test_check_with_url_tells_logged_in_from_logged_out(tmp_path, site, browser):
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(real_login_state(browser, site)))
    run_command("profile", "import", "members", str(state_file))
    report = json.loads(run_command("profile", "check", "members", "--url", site.url("/members"), "--json")[0])
    assert report["login"]["loggedOut"] is False
    run_command("profile", "import", "empty", str(tmp_path / "state.json"))
    (tmp_path / "none.json").write_text(json.dumps({"cookies": [], "origins": []}))
    run_command("profile", "import", "nobody", str(tmp_path / "none.json"))
    with pytest.raises(CommandError) as logged_out:
        run_command("profile", "check", "nobody", "--url", site.url("/members"))
    # README: "profile check shop --url https://shop.example/account   # logged out? exit 1"
    assert (str(logged_out.value), logged_out.value.returncode) == (
        f"nobody looks logged out at {site.url('/members')}.",
        1,
    )


def test_fetch_command_prints_markdown_and_refuses_both_state_options(site, data_dir):
    out, _ = run_command("fetch", site.url("/static"))
    assert out.startswith("# Flood at the mill")
    with pytest.raises(CommandError) as both:
        run_command("fetch", site.url("/static"), "--profile", "a", "--storage-state", "b.json")
    assert both.value.returncode == 2
    with pytest.raises(CommandError) as failed:
        run_command("fetch", site.url("/missing"))
    assert failed.value.returncode == 1 and "http_error" in str(failed.value)
    with pytest.raises(CommandError) as bad_url:
        run_command("fetch", "file:///etc/passwd")
    assert bad_url.value.returncode == 2


def command_env(data_dir) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL", "DJANGO_ALLOW"))}
    return {**env, "SERVICE_DATA_DIR": str(data_dir), "ALLOW_PRIVATE_NETWORKS": "true"}


def test_login_without_a_display_says_how_to_fix_it(data_dir):
    env = command_env(data_dir)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "profile", "login", "shop", "--url", "http://x.test/"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2  # README: exit 2 for "no display for `profile login`"
    assert result.stderr.startswith("error: ") and "No display" in result.stderr and "xvfb-run" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs Debian's xvfb (make test installs it)")
def test_login_by_hand_under_xvfb_stores_the_session(site, data_dir):
    """A person logs in in the visible window (here: a second Playwright attached over CDP) and presses Enter."""
    port = free_port()
    env = {**command_env(data_dir), "BROWSER_ARGS": f"--remote-debugging-port={port}"}
    command = subprocess.Popen(
        ["xvfb-run", "-a", sys.executable, "manage.py", "profile", "login", "members", "--url", site.url("/login")],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    prompt = command.stdout.readline()
    assert "press Enter" in prompt

    def log_in_by_hand() -> None:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
            page = chromium.contexts[0].pages[0]
            page.fill("#username", LOGIN_USER)
            page.fill("#password", LOGIN_PASSWORD)
            page.click("#submit")
            page.wait_for_url("**/members")

    person = threading.Thread(target=log_in_by_hand)  # its own thread: one sync Playwright per thread
    person.start()
    person.join(timeout=60)
    out, err = command.communicate("\n", timeout=60)
    assert command.returncode == 0, err
    assert "members" in out and "fresh" in out
    stored = json.loads((data_dir / "profiles" / "members.json").read_text())
    assert any(c["name"] == "sid" and c["value"].startswith("canary-session-") for c in stored["cookies"])
    assert not any(c["value"] in out + err for c in stored["cookies"] if c["name"] == "sid")
