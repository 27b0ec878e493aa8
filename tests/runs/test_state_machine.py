"""Run transitions live on the model; the claim, the lease and the reaper follow them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import OrmQ

from runs import archive, resources, services
from runs.engine.spec import PageCopy
from runs.models import IllegalTransition, Run

pytestmark = pytest.mark.django_db(transaction=True)


def queued_run() -> Run:
    return services.run_submit(spec={"kind": "fetch", "url": "https://example.com", "options": {}})


def frames(run: Run) -> list[tuple]:
    return [(e.type, e.payload.get("attempt") or e.payload.get("status")) for e in run.events.order_by("id")]


def test_a_run_can_be_claimed_once(settings):
    run = queued_run()
    first = services.run_claim(run_id=str(run.id), worker="a:1")
    second = services.run_claim(run_id=str(run.id), worker="b:2")
    assert first is not None and second is None
    run.refresh_from_db()
    assert (run.status, run.attempts, run.worker) == ("running", 1, "a:1")
    assert run.lease_expires_at > timezone.now()
    assert frames(run) == [("run-queued", None), ("run-started", 1)]


def test_illegal_transitions_raise():
    run = queued_run()
    with pytest.raises(IllegalTransition):
        run.requeue()
    run.cancel()
    with pytest.raises(IllegalTransition):
        run.finish(result={})
    with pytest.raises(IllegalTransition):
        run.mark_running(worker="w", lease_seconds=5)
    with pytest.raises(IllegalTransition):
        run.cancel()


def test_a_cancelled_run_is_not_overwritten_by_its_worker():
    run = services.run_claim(run_id=str(queued_run().id), worker="w:1")
    services.run_cancel(run=Run.objects.get(pk=run.pk))
    assert run.renew_lease(lease_seconds=5) is False
    assert services.run_finish(run=run, result={"markdown": "late"}) is False
    run.refresh_from_db()
    assert (run.status, run.result) == ("cancelled", None)


def expire(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def test_reaper_requeues_an_expired_lease_and_the_old_attempt_is_fenced_off(settings):
    settings.RUN_MAX_ATTEMPTS = 3
    run = services.run_claim(run_id=str(queued_run().id), worker="w:1")
    OrmQ.objects.all().delete()
    expire(run)
    assert services.run_reap_expired() == {"requeued": 1, "failed": 0}
    assert OrmQ.objects.count() == 1
    retried = services.run_claim(run_id=str(run.id), worker="w:2")
    assert retried.attempts == 2
    # The first attempt wakes up late: it no longer owns the run.
    assert (
        services.run_record_step(
            run=run, index=0, action="navigate", url="", observation="", screenshot=None, duration_ms=0
        )
        is False
    )
    assert services.run_finish(run=run, result={}) is False
    assert frames(retried) == [("run-queued", None), ("run-started", 1), ("run-queued", None), ("run-started", 2)]


def test_a_fenced_off_attempt_cannot_overwrite_the_new_attempts_screenshot_or_leave_its_page(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    run = services.run_claim(run_id=str(queued_run().id), worker="w:1")
    expire(run)
    services.run_reap_expired()
    retried = services.run_claim(run_id=str(run.id), worker="w:2")
    step = {"index": 0, "action": "navigate", "url": "", "observation": "", "duration_ms": 0}
    new_page = PageCopy("http://example.com/", 200, "text/html", "<p>new</p>")
    old_page = PageCopy("http://example.com/", 200, "text/html", "<p>old</p>")
    assert services.run_record_step(run=retried, screenshot=b"new attempt's picture", page=new_page, **step) is True
    assert services.run_record_step(run=run, screenshot=b"old attempt's picture", page=old_page, **step) is False
    folder = resources.screenshot_dir(run.pk)
    assert (folder / "0.jpg").read_bytes() == b"new attempt's picture"
    assert [path.name for path in folder.iterdir()] == ["0.jpg"]  # nothing of the old attempt left behind
    assert [path.name for path in archive.archive_dir(run.pk).iterdir()] == ["2-0.html.gz"]
    assert archive.read_page(retried.steps.get(index=0)).html == "<p>new</p>"


def test_reaper_fails_a_run_after_its_last_attempt(settings):
    settings.RUN_MAX_ATTEMPTS = 2
    run = queued_run()
    for attempt in (1, 2):
        claimed = services.run_claim(run_id=str(run.id), worker=f"w:{attempt}")
        assert claimed.attempts == attempt
        expire(claimed)
        services.run_reap_expired()
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error["code"] == "worker_lost"
    assert "RUN_MAX_ATTEMPTS=2" in run.error["message"]
    assert frames(run)[-1] == ("run-finished", "failed")


def test_reaper_leaves_live_leases_alone():
    services.run_claim(run_id=str(queued_run().id), worker="w:1")
    assert services.run_reap_expired() == {"requeued": 0, "failed": 0}
