"""README, Stopping, crashes and timeouts: "A worker that dies (SIGKILL, out of memory) is noticed by its lease: its
run is re-queued … Its Chromium exits with it." A worker of a running `serve` is SIGKILLed while its browser is
up; every process it had started (Playwright's driver, Chromium and Chromium's helpers) goes away."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.live import LiveService

pytestmark = pytest.mark.live
# The README promises no bound for Chromium's exit: this is only how long the test waits before calling it a
# failure (on a working build the processes are gone within about a second).
GENEROUS_EXIT_SECONDS = 30


def children_of() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    return children


def descendants(pid: int) -> set[int]:
    tree, found, todo = children_of(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Running (a zombie has exited; whoever inherited it reaps it when it likes)."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_sigkilled_workers_chromium_exits_with_it_and_its_run_is_requeued(tmp_path, site):
    # A short lease: this test kills a worker and waits for its lease to lapse.
    service = LiveService(tmp_path, RUN_LEASE_SECONDS="4").start()
    try:
        run = service.submit({"kind": "fetch", "url": site.url("/slow?ms=4000")})
        service.wait(run["id"], statuses=("running",))
        worker = service.worker_pid(run["id"])
        deadline = time.monotonic() + GENEROUS_EXIT_SECONDS
        while not [pid for pid in descendants(worker) if service.marker in command_line(pid)]:
            assert time.monotonic() < deadline, "the worker never started its Chromium"
            time.sleep(0.05)
        os.kill(worker, signal.SIGSTOP)  # hold the tree still while it is listed
        started = descendants(worker)  # Playwright's driver, Chromium and whatever helpers Chromium started
        os.kill(worker, signal.SIGKILL)
        commands = [command_line(pid) for pid in started]
        assert any("run-driver" in command for command in commands), commands
        assert any(service.marker in command for command in commands), commands
        deadline = time.monotonic() + GENEROUS_EXIT_SECONDS
        while left := [pid for pid in started if alive(pid)]:
            assert time.monotonic() < deadline, [command_line(pid) for pid in left]
            time.sleep(0.1)

        finished = service.wait(run["id"], timeout=120)
        assert (finished["status"], finished["attempts"]) == ("succeeded", 2), finished
    finally:
        service.stop()
