from __future__ import annotations

from django.contrib import admin

from queries.models import SavedQuery


@admin.register(SavedQuery)
class SavedQueryAdmin(admin.ModelAdmin):
    list_display = ["name", "url", "run_count", "last_run_at", "updated_at"]
    search_fields = ["name", "url"]
    readonly_fields = ["run_count", "last_run_at", "created_at", "updated_at"]
