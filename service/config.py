"""Reading and checking the environment, kept apart from settings.py so it can be tested on its own."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import secrets
import shlex
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import environ

from runs.engine.netpolicy import parse_allowlist_entry

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}


class ConfigError(Exception):
    """A configuration value that the service cannot start with; the message is one sentence."""


@dataclass(frozen=True, repr=False)
class Config:
    host: str
    port: int
    data_dir: Path
    database_url: str | None
    redis_url: str | None
    api_key: str | None
    browser_executable: str | None
    browser_args: tuple[str, ...]
    browser_sandbox: str  # auto, on or off
    workers: int
    web_processes: int
    allow_private_networks: bool
    network_allowlist: tuple[str, ...]
    network_dns_servers: tuple[str, ...]
    searxng_url: str | None
    model_provider: str | None
    model_name: str | None
    openai_api_key: str | None
    openai_base_url: str | None
    anthropic_api_key: str | None
    anthropic_base_url: str | None
    run_max_attempts: int
    run_timeout_max_ms: int
    run_lease_seconds: int
    run_reap_interval_seconds: float
    queue_poll_seconds: float
    schedule_min_seconds: int
    schedule_check_seconds: float
    webhook_timeout_seconds: float
    api_max_body_bytes: int
    api_rate_limit: int
    batch_max_runs: int
    queue_max_depth: int
    observation_max_chars: int
    screenshot_max_bytes: int
    archive_retention_days: float
    archive_max_bytes: int
    event_retention_hours: float
    events_max_backlog: int
    events_max_send_buffer_bytes: int
    secret_key: str
    debug: bool
    public_url: str | None
    allowed_hosts: list[str]
    csrf_trusted_origins: list[str]
    log_level: str
    log_format: str  # text or json
    metrics_token: str | None
    sentry_dsn: str | None

    @property
    def job_timeout_seconds(self) -> int:
        # The engine enforces timeoutMs itself; the queue's hard kill is a backstop above it.
        return self.run_timeout_max_ms // 1000 + 60

    @property
    def job_retry_seconds(self) -> int:
        return self.job_timeout_seconds + 30


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}.") from None
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}.")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of choices (the first is the default), case-insensitive."""
    value = (env.get(name) or choices[0]).lower()
    if value not in choices:
        raise ConfigError(f"{name} must be {' or '.join(choices)}, got {env.get(name)!r}.")
    return value


def _float(env: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}.") from None
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}.")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}.")


def _optional(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


def _allowlist(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    entries = tuple(entry.strip() for entry in env.get(name, "").split(",") if entry.strip())
    for entry in entries:
        try:
            parse_allowlist_entry(entry)
        except ValueError:
            raise ConfigError(
                f"{name} entries must be addresses or networks with an optional port "
                f"(10.0.0.5, 10.0.0.0/8, 127.0.0.1:8080, [::1]:8080), got {entry!r}."
            ) from None
    return entries


def _nameservers(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    entries = tuple(entry.strip() for entry in env.get(name, "").split(",") if entry.strip())
    for entry in entries:
        try:
            network, _ = parse_allowlist_entry(entry)
            single = network.num_addresses == 1 and "/" not in entry
        except ValueError:
            single = False
        if not single:
            raise ConfigError(
                f"{name} entries must be addresses with an optional port (10.0.0.2, 127.0.0.1:5353, [::1]:53), "
                f"got {entry!r}."
            )
    return entries


def _url(env: Mapping[str, str], name: str, schemes: tuple[str, ...]) -> str | None:
    value = _optional(env, name)
    if value is None:
        return None
    scheme = value.split("://", 1)[0].lower() if "://" in value else ""
    if scheme not in schemes:
        raise ConfigError(f"{name} must be a URL starting with {' or '.join(s + '://' for s in schemes)}.")
    if name == "DATABASE_URL":
        try:
            environ.Env.db_url_config(value)
        except Exception:
            raise ConfigError("DATABASE_URL could not be parsed as a database URL.") from None
    return value


_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*")


def _host(env: Mapping[str, str]) -> str:
    host = env.get("SERVICE_HOST") or "127.0.0.1"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOST_NAME.fullmatch(host):
            raise ConfigError(f"SERVICE_HOST must be an IP address or a host name, got {host!r}.") from None
    return host


API_KEY_MIN_CHARS = 16


def _api_key(env: Mapping[str, str]) -> str | None:
    value = _header_secret(env, "SERVICE_API_KEY")
    if value is not None and len(value) < API_KEY_MIN_CHARS:
        raise ConfigError(
            f"SERVICE_API_KEY must be at least {API_KEY_MIN_CHARS} characters (a short key is guessed): "
            "e.g. the output of `openssl rand -hex 16`."
        )
    return value


def _header_secret(env: Mapping[str, str], name: str) -> str | None:
    """A key sent in an HTTP header: printable ASCII without spaces, or a client could never send it (the value is
    a secret, so the message does not repeat it)."""
    value = _optional(env, name)
    if value is not None and not re.fullmatch(r"[\x21-\x7e]+", value):
        raise ConfigError(f"{name} must be printable ASCII without spaces (it travels in an HTTP header).")
    return value


def _model_name(env: Mapping[str, str], provider: str | None) -> str | None:
    value = _optional(env, "MODEL_NAME")
    if value is not None and not re.fullmatch(r"\S+", value):
        raise ConfigError(f"MODEL_NAME must be a model name without spaces, got {value!r}.")
    return value or DEFAULT_MODELS.get(provider or "")


def _list(env: Mapping[str, str], name: str) -> list[str]:
    return [entry.strip() for entry in (env.get(name) or "").split(",") if entry.strip()]


def _allowed_hosts(env: Mapping[str, str], host: str, public_url: str | None) -> list[str]:
    """ALLOWED_HOSTS as given, else derived: the loopback names, the bind address (or, bound to every interface,
    this machine's host name) and SERVICE_PUBLIC_URL's host. Never "*": a Host header nobody configured is refused,
    so a DNS-rebinding page cannot talk to the service under a name of its own."""
    allowed = _list(env, "ALLOWED_HOSTS")
    for entry in allowed:
        if "://" in entry or "/" in entry or " " in entry:
            raise ConfigError(f"ALLOWED_HOSTS entries must be host names without a scheme or path, got {entry!r}.")
    if allowed:
        return allowed
    derived = ["localhost", "127.0.0.1", "[::1]"]
    if host in {"0.0.0.0", "::"}:
        derived.append(socket.gethostname())
    else:
        derived.append(f"[{host}]" if ":" in host else host)
    if public_url is not None:
        derived.append(urlsplit(public_url).hostname or "")
    return list(dict.fromkeys(name for name in derived if name))


def _public_url(env: Mapping[str, str]) -> str | None:
    value = _optional(env, "SERVICE_PUBLIC_URL")
    if value is None:
        return None
    value = value.rstrip("/")
    if not re.fullmatch(r"https?://[^/\s?#@]+", value):
        raise ConfigError(
            f"SERVICE_PUBLIC_URL must be the origin users open, like https://scrape.example.com, got {value!r}."
        )
    return value


_SANDBOX_MODES = ("auto", "on", "off")


def _sandbox(env: Mapping[str, str]) -> str:
    value = (env.get("BROWSER_SANDBOX") or "auto").strip().lower()
    if value not in _SANDBOX_MODES:
        raise ConfigError(f"BROWSER_SANDBOX must be auto, on or off, got {value!r}.")
    return value


def _origins(env: Mapping[str, str], public_url: str | None) -> list[str]:
    origins = _list(env, "CSRF_TRUSTED_ORIGINS")
    for entry in origins:
        if not re.fullmatch(r"https?://[^/\s]+", entry):
            raise ConfigError(
                f"CSRF_TRUSTED_ORIGINS entries must be origins like https://scrape.example.com, got {entry!r}."
            )
    if public_url is not None and public_url not in origins:
        origins.append(public_url)  # the service's own origin behind a proxy
    return origins


def _data_dir(env: Mapping[str, str]) -> Path:
    raw = env.get("SERVICE_DATA_DIR") or "./data"
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = (Path.cwd() / path).resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ConfigError(f"SERVICE_DATA_DIR {str(path)!r} is not a writable directory ({error.strerror}).") from None
    for sub in ("screenshots", "exports", "cache", "static"):
        (path / sub).mkdir(exist_ok=True)
    for private in ("profiles", "credentials"):
        (path / private).mkdir(mode=0o700, exist_ok=True)
        os.chmod(path / private, 0o700)
    return path


def _secret_key(env: Mapping[str, str], data_dir: Path) -> str:
    """SECRET_KEY from the environment, else one generated once and kept in the data dir (0600).

    The file appears complete or not at all (written aside, then hard-linked into place), so processes starting
    at the same time on a shared data dir all read the one key and none reads a half-written file."""
    configured = env.get("SECRET_KEY")
    if configured:
        # Django's own rule (security.W009): shorter or repetitive keys make signed sessions guessable.
        if len(configured) < 50 or len(set(configured)) < 5:
            raise ConfigError(
                "SECRET_KEY must be at least 50 characters with at least 5 different ones (unset it to have one "
                "generated)."
            )
        return configured
    key_file = data_dir / "secret_key"
    try:
        return key_file.read_text().strip()
    except FileNotFoundError:
        pass
    fd, temp = tempfile.mkstemp(dir=data_dir, prefix=".secret_key-")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):  # another process was first: use its key
            os.link(temp, key_file)
    finally:
        os.unlink(temp)
    return key_file.read_text().strip()


def _browser_args(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("BROWSER_ARGS") or ""
    try:
        return tuple(shlex.split(raw))
    except ValueError as error:
        raise ConfigError(f"BROWSER_ARGS could not be split into arguments ({error}).") from None


def read_config(env: Mapping[str, str]) -> Config:
    host = _host(env)
    port = _int(env, "SERVICE_PORT", 3470, 1, 65535)
    data_dir = _data_dir(env)
    public_url = _public_url(env)
    run_timeout_max_ms = _int(env, "RUN_TIMEOUT_MAX_MS", 300_000, 1_000, 3_600_000)
    provider = _optional(env, "MODEL_PROVIDER")
    if provider is not None and provider not in {"openai", "anthropic"}:
        raise ConfigError(f"MODEL_PROVIDER must be openai or anthropic, got {provider!r}.")
    browser = _optional(env, "BROWSER_EXECUTABLE")
    if browser is not None and not os.access(browser, os.X_OK):
        raise ConfigError(f"BROWSER_EXECUTABLE {browser!r} is not an executable file.")
    log_level = (env.get("LOG_LEVEL") or "INFO").upper()
    if log_level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ConfigError(f"LOG_LEVEL must be DEBUG, INFO, WARNING or ERROR, got {log_level!r}.")
    return Config(
        host=host,
        port=port,
        data_dir=data_dir,
        database_url=_url(env, "DATABASE_URL", ("postgres", "postgresql", "sqlite")),
        redis_url=_url(env, "REDIS_URL", ("redis", "rediss", "unix")),
        api_key=_api_key(env),
        browser_executable=browser,
        browser_args=_browser_args(env),
        browser_sandbox=_sandbox(env),
        workers=_int(env, "WORKERS", 2, 1, 64),
        web_processes=_int(env, "WEB_PROCESSES", max(1, os.cpu_count() or 1), 1, 64),
        allow_private_networks=_bool(env, "ALLOW_PRIVATE_NETWORKS", False),
        network_allowlist=_allowlist(env, "NETWORK_ALLOWLIST"),
        network_dns_servers=_nameservers(env, "NETWORK_DNS_SERVERS"),
        searxng_url=_url(env, "SEARXNG_URL", ("http", "https")),
        model_provider=provider,
        model_name=_model_name(env, provider),
        openai_api_key=_header_secret(env, "OPENAI_API_KEY"),
        openai_base_url=_url(env, "OPENAI_BASE_URL", ("http", "https")),
        anthropic_api_key=_header_secret(env, "ANTHROPIC_API_KEY"),
        anthropic_base_url=_url(env, "ANTHROPIC_BASE_URL", ("http", "https")),
        run_max_attempts=_int(env, "RUN_MAX_ATTEMPTS", 3, 1, 20),
        run_timeout_max_ms=run_timeout_max_ms,
        run_lease_seconds=_int(env, "RUN_LEASE_SECONDS", 20, 3, 3600),
        run_reap_interval_seconds=_float(env, "RUN_REAP_INTERVAL_SECONDS", 2.0, 0.1, 600),
        queue_poll_seconds=_float(env, "QUEUE_POLL_SECONDS", 0.05, 0.005, 10),
        schedule_min_seconds=_int(env, "SCHEDULE_MIN_SECONDS", 60, 1, 86_400),
        schedule_check_seconds=_float(env, "SCHEDULE_CHECK_SECONDS", 5.0, 0.1, 60),
        webhook_timeout_seconds=_float(env, "WEBHOOK_TIMEOUT_SECONDS", 10.0, 0.5, 120),
        # Events, not batches: above BATCH_MAX_RUNS' default, so a reader stays connected through a whole batch's
        # run-queued events arriving at once.
        events_max_backlog=_int(env, "EVENTS_MAX_BACKLOG", 20_000, 10, 10_000_000),
        events_max_send_buffer_bytes=_int(env, "EVENTS_MAX_SEND_BUFFER_BYTES", 4 * 1024 * 1024, 16 * 1024, 1 << 30),
        event_retention_hours=_float(env, "EVENT_RETENTION_HOURS", 168.0, 0.0, 87_600.0),
        api_max_body_bytes=_int(env, "API_MAX_BODY_BYTES", 1_048_576, 1024, 1_073_741_824),
        api_rate_limit=_int(env, "API_RATE_LIMIT", 1200, 0, 1_000_000),
        batch_max_runs=_int(env, "BATCH_MAX_RUNS", 5000, 1, 1_000_000),
        queue_max_depth=_int(env, "QUEUE_MAX_DEPTH", 100_000, 1, 100_000_000),
        observation_max_chars=_int(env, "OBSERVATION_MAX_CHARS", 1_000_000, 2000, 100_000_000),
        screenshot_max_bytes=_int(env, "SCREENSHOT_MAX_BYTES", 5_000_000, 10_000, 1_000_000_000),
        archive_retention_days=_float(env, "ARCHIVE_RETENTION_DAYS", 30.0, 0.0, 36_500.0),
        archive_max_bytes=_int(env, "ARCHIVE_MAX_BYTES", 10_000_000, 10_000, 1_000_000_000),
        secret_key=_secret_key(env, data_dir),
        debug=_bool(env, "DEBUG", False),
        public_url=public_url,
        allowed_hosts=_allowed_hosts(env, host, public_url),
        csrf_trusted_origins=_origins(env, public_url),
        log_level=log_level,
        log_format=_choice(env, "LOG_FORMAT", ("text", "json")),
        metrics_token=_header_secret(env, "METRICS_TOKEN"),
        sentry_dsn=_url(env, "SENTRY_DSN", ("http", "https")),
    )
