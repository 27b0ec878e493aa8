"""Steps written into a test's run the way a worker's attempt writes them (services.run_record_step), so the run's
counts and files are what the service would have kept."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from runs import services
from runs.models import Run


def record_steps(run: Run, *steps: dict) -> None:
    """Each step a dict of run_record_step's arguments (action, url, observation; screenshot and duration_ms
    optional), indexed in order. The run is leased to one attempt while they are written, then left as it was."""
    run.refresh_from_db()
    kept = {"status": run.status, "attempts": run.attempts, "lease_expires_at": run.lease_expires_at}
    attempts = max(run.attempts, 1)
    lease = timezone.now() + timedelta(minutes=1)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, attempts=attempts, lease_expires_at=lease)
    run.refresh_from_db()
    for index, step in enumerate(steps):
        assert services.run_record_step(
            run=run, index=index, **{"screenshot": None, "duration_ms": 0, "url": run.url, **step}
        )
    Run.objects.filter(pk=run.pk).update(**kept)
    run.refresh_from_db()
