"""Bearer API keys for /api (DESIGN.md section 4)."""

from __future__ import annotations

import hmac
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from rest_framework import authentication, exceptions, throttling
from rest_framework.request import Request

from service.kernel import counters
from service.kernel.keys import ApiKey, hash_key, matches_bootstrap_key

# The playground signs in by exchanging a key for a session; the session keeps the key's name and hash (never the
# key), so revoking the key (or changing SERVICE_API_KEY) ends the session too.
SESSION_KEY_NAME = "api_key_name"
SESSION_KEY_HASH = "api_key_hash"


BEARER_FORM = "Use the header 'Authorization: Bearer <api key>'."


def bearer_key(header: str) -> str | None:
    """The key an `Authorization: Bearer <key>` header carries (the scheme in any case); None when the header is
    of another form. The one reading of the header, for the HTTP API, the event stream and /api/mcp."""
    scheme, _, raw = header.partition(" ")
    return raw.strip() if scheme.lower() == "bearer" and raw.strip() else None


@dataclass(frozen=True)
class KeyHolder:
    """The caller behind an API key; stands in for request.user."""

    key_name: str
    is_authenticated: bool = True
    is_active: bool = True


def authenticate_key(raw: str) -> KeyHolder | None:
    if matches_bootstrap_key(raw, settings.SERVICE_API_KEY):
        return KeyHolder(key_name="bootstrap")
    key = ApiKey.objects.find(raw)
    return KeyHolder(key_name=key.name) if key else None


def key_identity(raw: str) -> tuple[str, str] | None:
    """(key name, key hash) of a valid API key: what a long-lived connection keeps to check the key again later."""
    holder = authenticate_key(raw)
    return (holder.key_name, hash_key(raw)) if holder else None


# Failed playground sign-ins allowed per minute from one address, and from all addresses together: past either, every
# sign-in (a right key too) waits for the next minute. A key is guessed, if at all, at this pace.
SIGN_IN_FAILURES_PER_ADDRESS = 10
SIGN_IN_FAILURES_IN_ALL = 100


def _failure_counters(address: str, window: int) -> list[tuple[str, int]]:
    return [
        (f"sign-in-failures:{address}:{window}", SIGN_IN_FAILURES_PER_ADDRESS),
        (f"sign-in-failures:*:{window}", SIGN_IN_FAILURES_IN_ALL),
    ]


def sign_in_wait(address: str) -> int | None:
    """Seconds until a sign-in from address is taken again, or None when it may try now. This minute's failures
    and the last minute's count together, so a burst across a minute boundary is held like one within a minute
    (the wait is then until the burst's minute has passed)."""
    now = time.time()
    window = int(now // 60)
    current = _failure_counters(address, window)
    previous = _failure_counters(address, window - 1)
    for (key, limit), (before, _) in zip(current, previous, strict=True):
        if (cache.get(key) or 0) + (cache.get(before) or 0) >= limit:
            return max(1, 60 - int(now % 60))
    return None


def note_failed_sign_in(address: str) -> None:
    for key, _ in _failure_counters(address, int(time.time() // 60)):
        if not cache.add(key, 1, timeout=120):
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.add(key, 1, timeout=120)


def session_sign_in(session, raw: str) -> KeyHolder | None:
    holder = authenticate_key(raw)
    if holder is None:
        return None
    session.cycle_key()  # a new session id at sign-in (no fixation)
    session[SESSION_KEY_NAME] = holder.key_name
    session[SESSION_KEY_HASH] = hash_key(raw)
    return holder


def key_still_valid(name: str, digest: str) -> bool:
    """Whether the key named name with this hash still opens the API (not revoked, bootstrap not changed)."""
    if name == "bootstrap":
        bootstrap = settings.SERVICE_API_KEY
        return bool(bootstrap) and hmac.compare_digest(hash_key(bootstrap), digest)
    return ApiKey.objects.active().filter(name=name, key_hash=digest).exists()


def session_identity(session) -> tuple[str, str] | None:
    """(key name, key hash) of a signed-in playground session, while its key is still valid."""
    if session is None:
        return None
    name, digest = session.get(SESSION_KEY_NAME), session.get(SESSION_KEY_HASH)
    if not name or not digest or not key_still_valid(name, digest):
        return None
    return name, digest


def session_holder(session) -> KeyHolder | None:
    """The caller of a signed-in playground session, while its key is still valid."""
    identity = session_identity(session)
    return KeyHolder(key_name=identity[0]) if identity else None


def origin_if_foreign(origin: str | None, own: str) -> str | None:
    """The one origin rule of sessions, HTTP and WebSocket alike: an Origin that is neither this service's own
    (scheme, host and port exactly) nor one of CSRF_TRUSTED_ORIGINS is foreign; None when it is ours or absent."""
    if origin is None:
        return None
    return None if origin in (own, *settings.CSRF_TRUSTED_ORIGINS) else origin


def foreign_origin(request) -> str | None:
    """The Origin a browser sent when it is not this service's own (nor one of CSRF_TRUSTED_ORIGINS). Same-origin
    navigations and scripts send none, or ours; a page elsewhere using the visitor's cookie sends its own."""
    own = f"{'https' if request.is_secure() else 'http'}://{request.get_host()}"
    return origin_if_foreign(request.META.get("HTTP_ORIGIN"), own)


def refuse_foreign_origin(request) -> None:
    origin = foreign_origin(request)
    if origin is not None:
        raise exceptions.PermissionDenied(
            f"Origin {origin} is refused: a signed-in session works only from this service's own pages "
            "(add the origin to CSRF_TRUSTED_ORIGINS to allow it, or send an API key)."
        )


class SessionKeyAuthentication(authentication.SessionAuthentication):
    """The playground's session cookie: only from our own origin (any method), and every unsafe method must carry
    the CSRF token (X-CSRFToken)."""

    def authenticate(self, request: Request) -> tuple[KeyHolder, str] | None:
        holder = session_holder(getattr(request._request, "session", None))
        if holder is None:
            return None
        refuse_foreign_origin(request)
        self.enforce_csrf(request)
        return holder, "session"

    def enforce_csrf(self, request) -> None:
        # Django's check on Django's request: on DRF's, a token looked for in the body parses the body first, and
        # a form-encoded write without the token got 415 (our parsers take JSON) instead of the CSRF refusal.
        super().enforce_csrf(request._request if isinstance(request, Request) else request)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[KeyHolder, str] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        raw = bearer_key(header)
        if raw is None:
            raise exceptions.AuthenticationFailed(BEARER_FORM)
        holder = authenticate_key(raw)
        if holder is None:
            raise exceptions.AuthenticationFailed("The API key is not valid or has been revoked.")
        return holder, "api-key"

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class MetricsTokenAuthentication(authentication.BaseAuthentication):
    """METRICS_TOKEN as a Bearer token: what a scraper sends to GET /api/metrics (and it opens nothing else)."""

    def authenticate(self, request: Request) -> tuple[KeyHolder, str] | None:
        token = settings.METRICS_TOKEN
        header = authentication.get_authorization_header(request).decode("latin-1")
        raw = bearer_key(header) if header else None
        if token and raw and hmac.compare_digest(raw.encode(), token.encode()):
            return KeyHolder(key_name="metrics-token"), "metrics-token"
        return None

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'  # so an unauthenticated scrape is a 401, as everywhere in the API


class PerKeyRateThrottle(throttling.BaseThrottle):
    """API_RATE_LIMIT requests a minute per API key (a playground session counts as its key), counted in the
    installation's shared counters (service/kernel/counters.py) so that every web process spends one budget: a
    minute starts with the key's first request, and its first API_RATE_LIMIT requests pass, exactly."""

    WINDOW_SECONDS = 60
    seconds_left: float | None = None

    def allow_request(self, request: Request, view) -> bool:
        limit = settings.API_RATE_LIMIT  # read per request, so the limit follows the settings; 0 = no limit
        holder = request.user
        if not limit or not getattr(holder, "is_authenticated", False):
            return True  # unauthenticated requests are refused anyway (health is not limited)
        count, self.seconds_left = counters.hit(f"api-key:{holder.key_name}", self.WINDOW_SECONDS)
        return count <= limit

    def wait(self) -> float | None:
        return self.seconds_left
