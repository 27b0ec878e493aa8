from django.contrib import admin

from runs.models import Batch, Event, Run, Step


class StepInline(admin.TabularInline):
    model = Step
    extra = 0
    fields = ["index", "action", "url", "duration_ms", "screenshot", "at"]
    readonly_fields = fields
    can_delete = False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "url", "query", "attempts", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    search_fields = ["id", "url", "query"]
    readonly_fields = [f.name for f in Run._meta.fields]
    inlines = [StepInline]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["run", "index", "action", "url", "duration_ms", "at"]
    readonly_fields = [f.name for f in Step._meta.fields]


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["id", "type", "run", "at"]
    list_filter = ["type"]
    readonly_fields = [f.name for f in Event._meta.fields]


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ["id", "created_at"]
