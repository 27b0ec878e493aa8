"""The run commands' progress (README, CLI): a line per step and a spinner on standard error when it is a terminal,
nothing when it is not. The commands run as separate processes, their standard error on a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading

import pytest

from tests.live import ROOT
from tests.runs.test_crawl import CrawlSite

# A spinner frame: carriage return, a bar, the run's status and the seconds waited, on one rewritten line; a clear
# (carriage return, erase to the end of the line) before the next printed line.
SPINNER_FRAME = re.compile(r"\r[|/\-\\] (queued|running) +\d+\.\d s")
CLEAR = "\r\x1b[K"


def environment(data_dir) -> dict[str, str]:
    # No LOG_LEVEL: the commands' own default decides what reaches standard error.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SERVICE_", "DATABASE_URL", "DJANGO_ALLOW", "LOG_LEVEL"))
    }
    return {
        **env,
        "SERVICE_DATA_DIR": str(data_dir),
        "ALLOW_PRIVATE_NETWORKS": "true",
        "BROWSER_ARGS": "'--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'",
    }


def manage(data_dir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(data_dir),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def on_terminal(data_dir, *args: str) -> tuple[int, str, str]:
    """Run a command with standard error on a pseudo-terminal (standard output stays a pipe, as in `> page.md`).
    Returns the exit code, standard output and everything the terminal received."""
    controller, terminal = os.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=environment(data_dir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
        )
    finally:
        os.close(terminal)
    received: list[bytes] = []

    def read_terminal() -> None:
        while True:
            try:
                data = os.read(controller, 4096)
            except OSError:  # EIO: every process holding the terminal closed it
                return
            if not data:
                return
            received.append(data)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        out, _ = process.communicate(timeout=120)
    finally:
        reader.join(timeout=10)
        os.close(controller)
    # The terminal turns each "\n" into "\r\n" (onlcr).
    return process.returncode, out, b"".join(received).decode().replace("\r\n", "\n")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("terminal")
    assert manage(directory, "migrate", "--no-input").returncode == 0
    return directory


def test_a_line_per_step_and_a_spinner_on_a_terminal(data_dir, site):
    url = site.url("/slow?ms=1500")  # the page takes 1.5 s: the spinner turns meanwhile
    code, out, terminal = on_terminal(data_dir, "fetch", url)
    assert code == 0, terminal
    assert out.startswith("# Flood at the mill\n")
    frames = SPINNER_FRAME.findall(terminal)
    assert "running" in frames, terminal
    lines = SPINNER_FRAME.sub("", terminal).replace(CLEAR, "").splitlines()
    run_id = lines[0].split()[1].rstrip(":")
    run = json.loads(manage(data_dir, "runs", "show", run_id, "--json").stdout)
    assert run["status"] == "succeeded" and run["steps"]
    assert lines[:2] == [f"run {run_id}: fetch {url}", f"run {run_id} started, attempt 1"]
    # Then exactly one line per step of the stored trace, in order, the page's type, and nothing else (no log
    # records).
    assert [line.split()[:3] for line in lines[2:-1]] == [
        [f"#{step['index']}", step["action"], step["url"]] for step in run["steps"]
    ]
    assert lines[-1] == f"page type: {run['result']['pageType']}" == "page type: article"


# A crawl's progress bar: pages done of those found, the rate, the failures, the seconds.
CRAWL_FRAME = re.compile(r"\r[|/\-\\] \[([#-]{24})\] (\d+)/(\d+) pages  \d+\.\d pages/s  (\d+) failed  \d+ s\x1b\[K")


def test_a_crawl_shows_a_progress_bar_of_pages_done_and_found(data_dir):
    with CrawlSite() as crawl_site:
        code, out, terminal = on_terminal(
            data_dir, "crawl", crawl_site.base + "/slow", "--sitemap", "off", "--per-host-concurrency", "1"
        )
    assert code == 0, terminal
    assert "5 pages {'succeeded': 5}" in out
    frames = [(bar, int(done), int(found), int(failed)) for bar, done, found, failed in CRAWL_FRAME.findall(terminal)]
    assert frames, terminal
    # Found grows to the start page and its 4 links; done counts up to them, and the bar fills as it does.
    assert max(found for _, _, found, _ in frames) == 5
    partly = [frame for frame in frames if 0 < frame[1] < frame[2]]
    assert partly, frames
    bar, done, found, failed = partly[-1]
    assert bar.count("#") == round(24 * done / found) and failed == 0
    # Each page's step line is still printed, between the bar's frames.
    assert terminal.count("page succeeded: run") == 5


def test_nothing_on_standard_error_when_it_is_not_a_terminal(data_dir, site):
    done = manage(data_dir, "fetch", site.url("/static"))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("# Flood at the mill\n")
    listed = json.loads(manage(data_dir, "runs", "list", "--limit", "1", "--json").stdout)
    assert (listed[0]["url"], listed[0]["status"]) == (site.url("/static"), "succeeded")


def test_json_shows_no_progress_but_a_failure_still_reaches_the_terminal(data_dir, site):
    code, out, terminal = on_terminal(data_dir, "fetch", site.url("/missing"), "--json")
    run = json.loads(out)
    assert (code, run["status"]) == (1, "failed")
    # One line, red on a terminal (Django's ERROR style), and nothing before it.
    assert re.sub(r"\x1b\[[0-9;]*m", "", terminal) == (
        f"error: run {run['id']} failed: http_error: The page answered HTTP 404.\n"
    )


def test_quiet_keeps_the_terminal_silent(data_dir, site):
    code, out, terminal = on_terminal(data_dir, "fetch", site.url("/static"), "--quiet")
    assert (code, terminal) == (0, "")
    assert out.startswith("# Flood at the mill\n")


ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202e"  # retitle the window, clear the screen, a C1 CSI, a bidi override


@pytest.fixture(scope="module")
def hostile_page():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    page = f"<!doctype html><title>Mill</title><h1>Flood {ESCAPES}at the mill</h1><p>Water rose{ESCAPES}.</p>"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_a_pages_escape_sequences_never_reach_the_terminal(data_dir, hostile_page):
    code, out, terminal = on_terminal(data_dir, "fetch", hostile_page, "--full")
    assert code == 0, terminal
    # The progress lines on the terminal show them, harmless; standard output (a pipe: a file) keeps the page's text.
    assert "# Flood ␛]0;owned\ufffd␛[2J\ufffd31m\ufffdat the mill" in terminal
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", SPINNER_FRAME.sub("", terminal).replace(CLEAR, ""))
    assert ESCAPES in out
