from __future__ import annotations

from django.contrib import admin

from runs.models import Batch, Delivery, DeliveryAttempt, Event, Run, Step, Webhook
from service.kernel.admin import ReadOnlyAdmin


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ["index", "action", "url", "duration_ms", "screenshot", "at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True  # the step's own page has its complete observation

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["id", "kind", "status", "url", "query", "attempts", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    search_fields = ["id", "url", "query"]
    inlines = [StepInline]


@admin.register(Step)
class StepAdmin(ReadOnlyAdmin):
    list_display = ["run", "index", "action", "url", "duration_ms", "at"]


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ["id", "type", "run", "at"]
    list_filter = ["type"]


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
    list_display = ["id", "created_at"]


@admin.register(Webhook)
class WebhookAdmin(ReadOnlyAdmin):
    list_display = ["id", "url", "events", "query", "created_at"]


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyAdmin):
    list_display = ["id", "event", "run_id", "webhook", "status", "attempts", "next_attempt_at", "created_at"]
    list_filter = ["status", "event"]


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(ReadOnlyAdmin):
    list_display = ["delivery", "event", "status_code", "duration_ms", "error", "at"]
