from __future__ import annotations

from django.contrib import admin

from service.kernel.admin import ReadOnlyAdmin
from service.kernel.keys import ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    # Never the key's hash: name and prefix identify a key; `manage.py apikey` creates and revokes them.
    list_display = ["name", "prefix", "created_at", "last_used_at", "revoked_at"]
    fields = list_display

    def lookup_allowed(self, lookup: str, value: str, request=None) -> bool:
        # ?key_hash__startswith=… in the list's URL would reveal the hash prefix by prefix (400 instead).
        return lookup.split("__")[0] != "key_hash" and super().lookup_allowed(lookup, value, request)
