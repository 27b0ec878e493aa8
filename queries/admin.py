from __future__ import annotations

from django.contrib import admin

from queries.models import SavedQuery
from service.kernel.admin import ReadOnlyAdmin


@admin.register(SavedQuery)
class SavedQueryAdmin(ReadOnlyAdmin):
    list_display = ["name", "url", "run_count", "last_run_at", "updated_at"]
    search_fields = ["name", "url"]
