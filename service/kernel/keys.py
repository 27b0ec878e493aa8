"""API keys: only a hash and a short prefix are stored."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from django.db import models
from django.utils import timezone

KEY_PREFIX = "wds_"


def hash_key(raw: str) -> str:
    """API keys are random 256-bit tokens, so one SHA-256 is enough to store them safely."""
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiKeyQuerySet(models.QuerySet):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)

    def find(self, raw: str) -> ApiKey | None:
        return self.active().filter(key_hash=hash_key(raw)).first()


class ApiKey(models.Model):
    """An API key; only its hash and a short prefix (to tell keys apart) are stored."""

    name = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        app_label = "service"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, name: str) -> tuple[ApiKey, str]:
        """Create a key; the raw value is returned once and never stored."""
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        key = cls.objects.create(name=name, prefix=raw[:12], key_hash=hash_key(raw))
        return key, raw

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])


def matches_bootstrap_key(raw: str, bootstrap: str | None) -> bool:
    return bool(bootstrap) and hmac.compare_digest(hash_key(raw), hash_key(bootstrap))
