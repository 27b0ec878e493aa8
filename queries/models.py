"""SavedQuery: a named extract spec that users replay."""

from __future__ import annotations

from django.db import models
from django.db.models import F
from django.utils import timezone


class SavedQuery(models.Model):
    """The stored spec never changes on replay; a replay's one-off url/instruction live only on its run."""

    name = models.CharField(max_length=64, unique=True)
    url = models.CharField(max_length=2048)
    schema = models.JSONField()
    instruction = models.TextField(blank=True, default="")
    # The model's answer of a replay compiled into rules verified on its page (runs/engine/compile.py):
    # {"schema", "fields", "fromRun", "verifiedAt"}; replays run them before the model. compile=False opts out.
    compiled = models.JSONField(null=True, blank=True)
    compile = models.BooleanField(default=True)
    # Offered to MCP clients as a tool of its own (named after the query, typed by its schema).
    mcp_tool = models.BooleanField(default=False)
    # When replays run by themselves (queries/schedule.py): {"cron", "timezone"} or {"everySeconds"}; null: never.
    # A django-q2 Schedule row (queries/schedule_rows.py) holds the next due time.
    schedule = models.JSONField(null=True, blank=True)
    # The last due time a replay was started (or skipped) for: each due time is taken once.
    schedule_tick = models.DateTimeField(null=True, blank=True)
    # Due times skipped because a replay of the query was still queued or running.
    skipped_ticks = models.PositiveIntegerField(default=0)
    run_count = models.PositiveIntegerField(default=0)
    last_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "saved queries"

    def __str__(self) -> str:
        return self.name

    def count_replay(self) -> None:
        """runCount + 1 and lastRunAt = now in one UPDATE, so concurrent replays all count."""
        now = timezone.now()
        SavedQuery.objects.filter(pk=self.pk).update(run_count=F("run_count") + 1, last_run_at=now)
        self.refresh_from_db(fields=["run_count", "last_run_at"])

    def replay_spec(self, *, url: str | None = None, instruction: str | None = None) -> dict:
        """The run spec of one replay: the stored spec with this replay's overrides."""
        spec = {"kind": "extract", "url": url or self.url, "schema": self.schema}
        chosen = self.instruction if instruction is None else instruction
        if chosen:
            spec["instruction"] = chosen
        if self.compile:
            spec["compile"] = True
        if self.compiled:
            spec["compiled"] = self.compiled
        return spec
