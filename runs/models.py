"""Run, Step, Batch and Event: the persisted record of everything the service did."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta

from django.db import models
from django.db.models import F, Q
from django.utils import timezone


class IllegalTransition(Exception):
    """A run was asked to move to a state it cannot reach from where it is."""


PREVIEW_CHARS = 200


def summarize_result(result: object) -> tuple[str, int | None]:
    """What a run list shows of a result instead of the result: its first words (a page's Markdown, or the JSON)
    with whitespace collapsed, and its size as compact JSON in bytes (None when there is no result)."""
    if result is None:
        return "", None
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    readable = result["markdown"] if isinstance(result, dict) and isinstance(result.get("markdown"), str) else text
    return " ".join(readable.split())[:PREVIEW_CHARS], len(text.encode())


# What a run list reads of each run (RunQuerySet.summaries): not the result, the lease or the worker.
SUMMARY_COLUMNS = (
    "id",
    "kind",
    "status",
    "url",
    "spec",
    "query",
    "batch_id",
    "parent_id",
    "attempts",
    "error",
    "drift",
    "usage",
    "extracted_by",
    "step_count",
    "preview",
    "result_bytes",
    "created_at",
    "started_at",
    "finished_at",
)


class Batch(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return str(self.id)

    def counts_by_status(self) -> dict[str, int]:
        return self.runs.counts_by_status()


class RunQuerySet(models.QuerySet):
    def filter_by(
        self,
        *,
        id: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        query: str | None = None,
        batch: str | None = None,
        parent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> RunQuerySet:
        """Runs matching every given filter; since is inclusive, until exclusive (both on createdAt)."""
        runs = self
        if id:
            runs = runs.filter(pk=id)
        if kind:
            runs = runs.filter(kind=kind)
        if status:
            runs = runs.filter(status=status)
        if query:
            runs = runs.filter(query=query)
        if batch:
            runs = runs.filter(batch_id=batch)
        if parent:
            runs = runs.filter(parent_id=parent)
        if since:
            runs = runs.filter(created_at__gte=since)
        if until:
            runs = runs.filter(created_at__lt=until)
        return runs

    def counts_by_status(self, *statuses: str) -> dict[str, int]:
        """How many of these runs are in each status (every status, or the ones given), zeros included: one grouped
        query."""
        wanted = list(statuses) or list(Run.Status.values)
        counts = dict.fromkeys(wanted, 0)
        rows = self.filter(status__in=wanted) if statuses else self
        for status, n in rows.values_list("status").annotate(n=models.Count("id")).order_by():
            counts[status] = n
        return counts

    def summaries(self) -> RunQuerySet:
        """Rows (dicts) of what a run list shows: every column but the result, no model instances (a list of 20 runs
        is read many times a second by a playground or a poller)."""
        return self.values(*SUMMARY_COLUMNS)

    def renew_lease(self, *, run_id, attempt: int, lease_seconds: int, steps_added: int = 0) -> bool:
        """Extend one attempt's lease (and count the steps it is recording, in the same UPDATE); False when the run
        was cancelled or taken over (another attempt claimed it)."""
        changes: dict = {"lease_expires_at": timezone.now() + timedelta(seconds=lease_seconds)}
        if steps_added:
            changes["step_count"] = F("step_count") + steps_added
        return bool(self.filter(pk=run_id, status=Run.Status.RUNNING, attempts=attempt).update(**changes))

    def lease_expired(self) -> RunQuerySet:
        return self.filter(status=Run.Status.RUNNING, lease_expires_at__lt=timezone.now())


class Run(models.Model):
    """One job. State machine:

        queued -> running -> succeeded | failed | cancelled
        queued -> cancelled | failed
        running -> queued            (lease expired: the worker died; the reaper re-queues it)

    State changes are conditional UPDATEs guarded by the status (and, for a running run, by the attempt
    number, which works as a fencing token): a worker whose lease was taken over, or whose run was
    cancelled, cannot overwrite the newer state.
    """

    class Kind(models.TextChoices):
        FETCH = "fetch"
        EXTRACT = "extract"
        AGENT = "agent"
        CRAWL = "crawl"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
    TRANSITIONS: dict[str, tuple[str, ...]] = {
        Status.QUEUED: (Status.RUNNING, Status.CANCELLED, Status.FAILED),
        Status.RUNNING: (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.QUEUED),
        Status.SUCCEEDED: (),
        Status.FAILED: (),
        Status.CANCELLED: (),
    }

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    spec = models.JSONField()
    url = models.TextField()
    query = models.CharField(max_length=64, null=True, blank=True)
    # A replay's query was created then: replays of an earlier query of the same name are not compared with it.
    query_since = models.DateTimeField(null=True, blank=True)
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    # A crawl's pages: each a run of its own (fetch), made by the crawl run.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="pages")
    attempts = models.PositiveIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=128, blank=True, default="")
    result = models.JSONField(null=True, blank=True)
    # What run lists show instead of the result (summarize_result), kept when the result is.
    preview = models.CharField(max_length=PREVIEW_CHARS, blank=True, default="")
    result_bytes = models.PositiveIntegerField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    # Saved-query replays: what changed since the previous successful replay (runs/drift.py).
    drift = models.JSONField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    # Extract runs: who filled the result: "rules", "model", or "mixed" (a saved query's compiled rules and the model).
    extracted_by = models.CharField(max_length=8, blank=True, default="")
    # Steps of the current attempt, kept with them (run_record_step, mark_running): lists read one table.
    step_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["-created_at"]),
            models.Index(fields=["kind", "-created_at"]),
            models.Index(fields=["status", "-created_at"]),
            models.Index(fields=["query", "-created_at"]),
            models.Index(fields=["status", "lease_expires_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.id} ({self.status})"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL

    def _check(self, target: str) -> None:
        if target not in self.TRANSITIONS[self.status]:
            raise IllegalTransition(f"A {self.status} run cannot become {target}.")

    def _apply(self, guard: Q, **changes) -> bool:
        """Conditional UPDATE; on success mirror the changes on this instance."""
        updated = Run.objects.filter(Q(pk=self.pk) & guard).update(**changes)
        if updated:
            for name, value in changes.items():
                setattr(self, name, value)
        return bool(updated)

    def mark_running(self, *, worker: str, lease_seconds: int) -> bool:
        """Claim a queued run: attempts+1, a lease, the worker's name. False if someone else got it first."""
        self._check(self.Status.RUNNING)
        now = timezone.now()
        return self._apply(
            Q(status=self.Status.QUEUED, attempts=self.attempts),
            status=self.Status.RUNNING,
            attempts=self.attempts + 1,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
            worker=worker,
            started_at=self.started_at or now,
            step_count=0,  # the caller drops the earlier attempt's steps in the same transaction
        )

    def renew_lease(self, *, lease_seconds: int, steps_added: int = 0) -> bool:
        """Extend the lease of this attempt (see RunQuerySet.renew_lease); False when the run was cancelled or taken
        over."""
        return Run.objects.renew_lease(
            run_id=self.pk, attempt=self.attempts, lease_seconds=lease_seconds, steps_added=steps_added
        )

    def finish(
        self,
        *,
        result: object = None,
        error: dict | None = None,
        usage: dict | None = None,
        drift: dict | None = None,
        extracted_by: str = "",
    ) -> bool:
        """succeeded (with a result) or failed (with an error, and any partial result worth keeping);
        False if this attempt no longer owns the run."""
        status = self.Status.FAILED if error else self.Status.SUCCEEDED
        self._check(status)
        preview, result_bytes = summarize_result(result)
        guard = (
            Q(status=self.Status.RUNNING, attempts=self.attempts)
            if self.status == self.Status.RUNNING
            else Q(status=self.status)
        )
        return self._apply(
            guard,
            status=status,
            result=result,
            preview=preview,
            result_bytes=result_bytes,
            error=error,
            drift=drift,
            extracted_by=extracted_by,
            usage=usage if usage is not None else self.usage,
            lease_expires_at=None,
            finished_at=timezone.now(),
        )

    def cancel(self) -> bool:
        self._check(self.Status.CANCELLED)
        return self._apply(
            Q(status__in=[self.Status.QUEUED, self.Status.RUNNING]),
            status=self.Status.CANCELLED,
            error={"code": "cancelled", "message": "The run was cancelled."},
            lease_expires_at=None,
            finished_at=timezone.now(),
        )

    def requeue(self) -> bool:
        """Put a running run whose lease expired back in the queue (the reaper calls this)."""
        self._check(self.Status.QUEUED)
        return self._apply(
            Q(status=self.Status.RUNNING, attempts=self.attempts, lease_expires_at__lt=timezone.now()),
            status=self.Status.QUEUED,
            lease_expires_at=None,
            worker="",
        )

    def fail_lost(self, *, max_attempts: int) -> bool:
        """A run whose worker died on its last allowed attempt."""
        self._check(self.Status.FAILED)
        return self._apply(
            Q(status=self.Status.RUNNING, attempts=self.attempts, lease_expires_at__lt=timezone.now()),
            status=self.Status.FAILED,
            error={
                "code": "worker_lost",
                "message": f"The worker running this run stopped {self.attempts} times "
                f"(RUN_MAX_ATTEMPTS={max_attempts}); the run was not retried again.",
            },
            lease_expires_at=None,
            finished_at=timezone.now(),
        )


class Step(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    action = models.CharField(max_length=64)
    url = models.TextField(blank=True, default="")
    observation = models.TextField(blank=True, default="")
    screenshot = models.CharField(max_length=255, blank=True, default="")
    # The page this step loaded, archived (runs/archive.py): file, url, status, contentType, bytes, truncated.
    page = models.JSONField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="step_unique_index")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.index} {self.action}"


class EventQuerySet(models.QuerySet):
    def after(self, event_id: int) -> EventQuerySet:
        return self.filter(id__gt=event_id).order_by("id")


class Event(models.Model):
    """The outbox: every state change of a run writes one row in the same transaction (DESIGN.md section 2)."""

    class Type(models.TextChoices):
        RUN_QUEUED = "run-queued"
        RUN_STARTED = "run-started"
        STEP = "step"
        SCREENSHOT = "screenshot"
        RUN_FINISHED = "run-finished"

    id = models.BigAutoField(primary_key=True)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events", db_constraint=False)
    type = models.CharField(max_length=32, choices=Type.choices)
    payload = models.JSONField(default=dict)
    at = models.DateTimeField(default=timezone.now)

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "id"])]

    def __str__(self) -> str:
        return f"#{self.id} {self.type} {self.run_id}"

    def frame(self) -> dict:
        return {
            "type": self.type,
            "eventId": self.id,
            "runId": str(self.run_id),
            **self.payload,
            "at": self.at.isoformat().replace("+00:00", "Z"),
        }


class Webhook(models.Model):
    """A URL told about runs as they end (runs/webhooks.py): signed deliveries, Standard Webhooks style."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    url = models.URLField(max_length=2048)
    events = models.JSONField()  # a list of WEBHOOK_EVENTS
    # Only runs of this saved query (by name), or every run.
    query = models.CharField(max_length=64, null=True, blank=True)
    # Its signing secret is not here: a private file of the data directory (runs/webhooks.py), as credentials are.
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.url} ({', '.join(self.events)})"


class Delivery(models.Model):
    """One event for one webhook, delivered at least once: the same webhook-id and body on every attempt.

    pending (waits for next_attempt_at) -> queued (a task is in the queue) -> sending (a worker holds its lease)
    -> delivered | failed (a 4xx other than 408/429, a refused address, or still failing after 24 h); back to
    pending after a failed attempt, or when a sending worker's lease ran out (it died).
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        QUEUED = "queued"
        SENDING = "sending"
        DELIVERED = "delivered"
        FAILED = "failed"

    ENDED = (Status.DELIVERED, Status.FAILED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    run_id = models.UUIDField()
    body = models.TextField()  # the exact JSON sent on every attempt
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    queued_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=128, blank=True, default="")  # host:pid of the last one to send it
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"{self.event} {self.run_id} -> {self.webhook_id} ({self.status})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="attempts")
    event = models.CharField(max_length=32)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at"]
        indexes = [models.Index(fields=["webhook", "-at"])]


class CrawlFrontier(models.Model):
    """A crawl run's frontier (runs/engine/crawl_rules.py Frontier.snapshot()), written after every page: a crawl
    taken over after its worker died goes on from it, and fetches no page twice."""

    run = models.OneToOneField(Run, primary_key=True, on_delete=models.CASCADE, related_name="frontier")
    state = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)
