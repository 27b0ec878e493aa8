"""execute_run, the queue's job, in this process: real Chromium, real local pages, real database rows."""

from __future__ import annotations

import threading
import time

import pytest

from runs import services
from runs.jobs import execute_run
from runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


def submit(url: str, kind: str = "fetch", **extra) -> Run:
    spec = {"kind": kind, "url": url, "options": extra.pop("options", {}), **extra}
    return services.run_submit(spec=spec)


def test_fetch_run_succeeds_with_trace_screenshot_and_events(site, data_dir):
    run = submit(site.url("/static"))
    assert execute_run(str(run.id)) == "succeeded"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.attempts == 1
    assert run.result["title"] == "Flood at the mill"
    assert run.result["markdown"].startswith("# Flood at the mill")
    assert run.usage["browserMs"] > 0
    steps = list(run.steps.order_by("index"))
    assert [s.action for s in steps] == ["navigate", "snapshot"]
    shot = data_dir / "screenshots" / str(run.id) / steps[0].screenshot
    assert shot.read_bytes()[:3] == b"\xff\xd8\xff"
    types = [e.type for e in run.events.order_by("id")]
    assert types == ["run-queued", "run-started", "step", "screenshot", "step", "run-finished"]
    assert execute_run(str(run.id)) == "skipped"  # delivered twice: runs once


@pytest.mark.parametrize(
    ("path", "options", "code"),
    [
        ("/missing", {}, "http_error"),
        ("/file.pdf", {}, "not_html"),
        ("/hang?s=5", {"timeoutMs": 1000}, "timeout"),
    ],
)
def test_failures_end_the_run_failed_with_a_code_not_a_crash(site, path, options, code):
    run = submit(site.url(path), options=options)
    assert execute_run(str(run.id)) == "failed"
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error["code"] == code
    assert run.error["message"]
    assert run.events.order_by("id").last().payload == {"status": "failed", "error": run.error}


def test_dns_failure_fails_the_run():
    run = submit("http://no-such-host.invalid/")
    execute_run(str(run.id))
    run.refresh_from_db()
    assert run.error["code"] == "dns_error"


def test_cancel_stops_a_running_run_within_seconds(site):
    run = submit(site.url("/hang?s=20"), options={"timeoutMs": 60000})
    cancelled_at: list[float] = []

    def cancel_when_running():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            current = Run.objects.get(pk=run.pk)
            if current.status == "running":
                time.sleep(0.3)
                services.run_cancel(run=current)
                cancelled_at.append(time.monotonic())
                return
            time.sleep(0.05)

    canceller = threading.Thread(target=cancel_when_running)
    canceller.start()
    assert execute_run(str(run.id)) == "aborted"
    stopped = time.monotonic()
    canceller.join()
    assert stopped - cancelled_at[0] < 3
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert run.events.order_by("id").last().payload["status"] == "cancelled"
