"""One settings module, driven by the environment (DESIGN.md section 3).

A bad value stops start-up with one sentence on stderr instead of a traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import environ

from service.config import ConfigError, read_config

BASE_DIR = Path(__file__).resolve().parent.parent

try:
    CONFIG = read_config(os.environ)
except ConfigError as error:
    sys.exit(f"configuration error: {error}")

env = environ.Env()

SECRET_KEY = CONFIG.secret_key
DEBUG = CONFIG.debug
ALLOWED_HOSTS = CONFIG.allowed_hosts
CSRF_TRUSTED_ORIGINS = CONFIG.csrf_trusted_origins

SERVICE_HOST = CONFIG.host
SERVICE_PORT = CONFIG.port
DATA_DIR = CONFIG.data_dir
SERVICE_API_KEY = CONFIG.api_key
BROWSER_EXECUTABLE = CONFIG.browser_executable
BROWSER_ARGS = CONFIG.browser_args
BROWSER_SANDBOX = CONFIG.browser_sandbox
SERVICE_PUBLIC_URL = CONFIG.public_url
WORKERS = CONFIG.workers
WEB_PROCESSES = CONFIG.web_processes
METRICS_TOKEN = CONFIG.metrics_token
SENTRY_DSN = CONFIG.sentry_dsn
# Every process of the installation on this machine writes its metrics here, and GET /api/metrics reads them all
# (service/kernel/metrics.py). Set before anything imports prometheus_client; `serve` empties it when it starts. Web
# and worker machines sharing a data directory over a network file system each set their own local directory.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(DATA_DIR / "metrics"))
Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)
ALLOW_PRIVATE_NETWORKS = CONFIG.allow_private_networks
NETWORK_ALLOWLIST = CONFIG.network_allowlist
NETWORK_DNS_SERVERS = CONFIG.network_dns_servers
REDIS_URL = CONFIG.redis_url
SEARXNG_URL = CONFIG.searxng_url
MODEL_PROVIDER = CONFIG.model_provider
MODEL_NAME = CONFIG.model_name
OPENAI_API_KEY = CONFIG.openai_api_key
OPENAI_BASE_URL = CONFIG.openai_base_url
ANTHROPIC_API_KEY = CONFIG.anthropic_api_key
ANTHROPIC_BASE_URL = CONFIG.anthropic_base_url

RUN_MAX_ATTEMPTS = CONFIG.run_max_attempts
RUN_TIMEOUT_MAX_MS = CONFIG.run_timeout_max_ms
RUN_LEASE_SECONDS = CONFIG.run_lease_seconds
RUN_REAP_INTERVAL_SECONDS = CONFIG.run_reap_interval_seconds
API_MAX_BODY_BYTES = CONFIG.api_max_body_bytes
BATCH_MAX_RUNS = CONFIG.batch_max_runs
API_RATE_LIMIT = CONFIG.api_rate_limit
QUEUE_MAX_DEPTH = CONFIG.queue_max_depth
OBSERVATION_MAX_CHARS = CONFIG.observation_max_chars
SCREENSHOT_MAX_BYTES = CONFIG.screenshot_max_bytes
ARCHIVE_RETENTION_DAYS = CONFIG.archive_retention_days
ARCHIVE_MAX_BYTES = CONFIG.archive_max_bytes
EVENT_RETENTION_HOURS = CONFIG.event_retention_hours
EVENTS_MAX_BACKLOG = CONFIG.events_max_backlog
EVENTS_MAX_SEND_BUFFER_BYTES = CONFIG.events_max_send_buffer_bytes

INSTALLED_APPS = [
    "daphne",  # first, so that `runserver` is daphne's
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "django_q",
    "service",
    "runs",
    "queries",
    "profiles",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "service.kernel.metrics.RequestMetrics",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "service.urls"
ASGI_APPLICATION = "service.asgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if CONFIG.database_url:
    DATABASES = {"default": env.db_url_config(CONFIG.database_url)}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
else:
    DATABASES = {
        "default": {
            "ENGINE": "service.sqlite",
            "NAME": DATA_DIR / "db.sqlite3",
            "OPTIONS": {
                # IMMEDIATE: a writer takes the lock at BEGIN, so concurrent writers wait on the busy
                # timeout instead of failing a lock upgrade with "database is locked".
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # Kept between requests (Django's connections are per thread, and a web process runs its requests in
            # one): opening one, with its PRAGMAs and functions, was a fifth of a short request under load.
            "CONN_MAX_AGE": 300,
            "CONN_HEALTH_CHECKS": True,
            # A file, not shared-cache memory: tests run workers in threads, and shared cache locks whole tables.
            # One per test process: engineers and CI may run several pytest processes on one checkout at once.
            "TEST": {"NAME": DATA_DIR / f"test-db-{os.getpid()}.sqlite3"},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Shared by every process of the installation: django-q2 keeps cluster stats here (/api/health reads them), and the
# sign-in limit counts in it (the API rate limit counts in service/kernel/counters.py, which follows REDIS_URL too).
# Without Redis, files whose cull deletes the expired entries first (service/kernel/cache.py).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    if REDIS_URL
    else {"BACKEND": "service.kernel.cache.FileCache", "LOCATION": str(DATA_DIR / "cache")}
}

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# django-q2 with the ORM broker: our Run row owns attempts and leases (runs.services.run_reap_expired);
# the broker only carries "execute run <id>" messages, and execute_run is idempotent.
SCHEDULE_MIN_SECONDS = CONFIG.schedule_min_seconds
SCHEDULE_CHECK_SECONDS = CONFIG.schedule_check_seconds
WEBHOOK_TIMEOUT_SECONDS = CONFIG.webhook_timeout_seconds

Q_CLUSTER = {
    "name": "runs",
    "orm": "default",
    "workers": WORKERS,
    "recycle": 500,
    # A job may run for the longest run timeout plus browser start and recording.
    "timeout": CONFIG.job_timeout_seconds,
    "retry": CONFIG.job_retry_seconds,
    "max_attempts": 1,
    "ack_failures": True,
    "save_limit": -1,
    "poll": CONFIG.queue_poll_seconds,
    "catch_up": False,
    # Due schedules are looked for by `work`'s own loop (queries/scheduling.py), every SCHEDULE_CHECK_SECONDS
    # instead of the sentinel's 15 s.
    "scheduler": False,
    "label": "Queue",
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
CSRF_FAILURE_VIEW = "service.kernel.errors.csrf_failure"
# The playground's build (`make ui`): whitenoise serves its files at the root URL (/assets/…, /favicon.svg);
# service.views.home serves its index.html. Vite names assets by content hash (index-3f9aB_x-.js), so those are
# cached for good. Whitenoise reads the folder when the process starts: restart the service after a rebuild.
WHITENOISE_ROOT = FRONTEND_DIST if FRONTEND_DIST.is_dir() else None
WHITENOISE_IMMUTABLE_FILE_TEST = r"^/assets/.+-[A-Za-z0-9_-]{8}\.[a-z0-9]+$"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "service.kernel.auth.ApiKeyAuthentication",
        "service.kernel.auth.SessionKeyAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["service.kernel.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "service.kernel.errors.exception_handler",
    # API_RATE_LIMIT requests per minute per API key (0 = no limit); over it: 429 with Retry-After.
    "DEFAULT_THROTTLE_CLASSES": ["service.kernel.auth.PerKeyRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "service.kernel.openapi.ServiceAutoSchema",
    # ?format= is GET /api/export's own parameter, not DRF's renderer override (which would 404 format=csv).
    "URL_FORMAT_OVERRIDE": None,
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Web-data service API",
    "DESCRIPTION": "Fetch, extract and agent runs in a real browser; every run kept with its trace.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Names for the choice sets several components share (drf-spectacular names the others after their component).
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "ENUM_NAME_OVERRIDES": {
        "RunKindEnum": "runs.models.Run.Kind",
        "RunStatusEnum": "runs.models.Run.Status",
        "RenderEnum": ["auto", "browser", "http"],
        "LoadedByEnum": ["browser", "http"],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "service.openapi.add_links",
    ],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        # LOG_FORMAT=json: one JSON object a line, with runId and attempt while a worker runs a run.
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "filters": {"run": {"()": "service.kernel.logs.RunContext"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": CONFIG.log_format, "filters": ["run"]},
    },
    "root": {"handlers": ["console"], "level": CONFIG.log_level},
    "loggers": {
        "django-q": {"level": "WARNING"},
        "django_q": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},  # the SDK logs each HTTP request at INFO
    },
}

if SENTRY_DSN:
    import sentry_sdk

    # Errors (and crashed runs, logged with log.exception) go to Sentry; no request bodies, no personal data.
    sentry_sdk.init(
        dsn=SENTRY_DSN,
        send_default_pii=False,
        include_local_variables=False,  # a frame's locals may hold a credential or a page's text
        max_request_body_size="never",
        traces_sample_rate=0.0,
    )
