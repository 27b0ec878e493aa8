from __future__ import annotations

from django.contrib import admin

from service.models import ApiKey


class ReadOnlyAdmin(admin.ModelAdmin):
    """The admin inspects; it never writes. Runs, events and keys change only through the services (which publish
    events, enqueue and check input), so an edit here would bypass them."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    # Never the key's hash: name and prefix identify a key; `manage.py apikey` creates and revokes them.
    list_display = ["name", "prefix", "created_at", "last_used_at", "revoked_at"]
    fields = list_display

    def lookup_allowed(self, lookup: str, value: str, request=None) -> bool:
        # ?key_hash__startswith=… in the list's URL would reveal the hash prefix by prefix (400 instead).
        return lookup.split("__")[0] != "key_hash" and super().lookup_allowed(lookup, value, request)
