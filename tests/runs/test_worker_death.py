"""README, Stopping, crashes and timeouts: "A worker that dies (SIGKILL, out of memory) is noticed by its lease: its
run is re-queued … Its Chromium exits with it." A worker of a running `serve` is SIGKILLed while its browser is
up; every process it had started (Playwright's driver, Chromium and Chromium's helpers) goes away, and the event
stream shows the re-queue (README, Events: `run-queued` again before the retry's `run-started`)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from websockets.sync.client import connect

from tests.live import KEY, SHORT_LEASE_SECONDS, LiveService

pytestmark = pytest.mark.live
AUTH = {"Authorization": f"Bearer {KEY}"}
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
    # A short lease (and the reaper interval that goes with it): this test kills a worker and waits for its lease
    # to lapse.
    service = LiveService(tmp_path, lease_seconds=SHORT_LEASE_SECONDS).start()
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

        # README, Events: the reaper's re-queue is a run-queued frame, before the retry's own run-started.
        with connect(f"{service.events_url}?after=0&runId={run['id']}", additional_headers=AUTH) as events:
            frames = [json.loads(events.recv(timeout=30))]
            while frames[-1]["type"] != "run-finished":
                frames.append(json.loads(events.recv(timeout=30)))
        lifecycle = [(frame["type"], frame.get("attempt")) for frame in frames if frame["type"].startswith("run-")]
        assert lifecycle == [
            ("run-queued", None),
            ("run-started", 1),
            ("run-queued", None),
            ("run-started", 2),
            ("run-finished", None),
        ], frames
    finally:
        service.stop()
