"""Fetch and search answered at once, without a run (POST /api/fetch, POST /api/search, the search command, MCP),
and a fetch kept as a run that the caller waits for."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

from runs.engine.browser import shared_browser_thread
from runs.engine.fetch import fetch
from runs.engine.search import searxng_search
from runs.engine.spec import EngineError, NullRecorder
from runs.models import Run
from runs.resources import page_spec
from runs.serializers import FetchRequestSerializer, SearchRequestSerializer
from runs.services import run_submit, run_wait
from service.kernel.errors import ServiceError

SEARCH_FETCH_PARALLEL = 4


# Synchronous fetch: how engine failures map to HTTP statuses (anything else is the remote side's fault: 502).
FETCH_ERROR_STATUS = {
    "timeout": 504,
    "url_not_allowed": 400,
    "unknown_profile": 400,
    "invalid_storage_state": 400,
    "busy": 429,
}
BUSY_RETRY_AFTER_S = 5


def fetch_page(request: dict) -> dict:
    """A page as Markdown now, from POST /api/fetch's body (or MCP fetch_markdown's arguments), checked by
    FetchRequestSerializer: plain HTTP in this thread, Chromium on the process's browser thread when render asks
    for it (or auto finds a JavaScript shell); the result says which was used. With persist, the fetch is kept as a
    run (queued for the workers like any) and answered when it finishes."""
    asked = FetchRequestSerializer(data=request)
    asked.is_valid(raise_exception=True)
    if asked.validated_data["persist"]:
        return _fetch_kept(spec=asked.run_spec())
    return _fetch_now(asked.run_spec())


def _fetch_now(spec: dict) -> dict:
    try:
        page = page_spec(spec, run=False)
        browser = shared_browser_thread(settings.BROWSER_EXECUTABLE, settings.BROWSER_ARGS, settings.BROWSER_SANDBOX)
        result = fetch(page, NullRecorder(), browser.browser, in_browser_thread=browser.call)
    except EngineError as error:
        retry = {"Retry-After": str(BUSY_RETRY_AFTER_S)} if error.code == "busy" else None
        raise ServiceError(
            error.code, error.message, status_code=FETCH_ERROR_STATUS.get(error.code, 502), headers=retry
        ) from None
    return result.to_dict()


def _fetch_kept(*, spec: dict) -> dict:
    """A fetch kept as a run: queued for the workers like any run, answered when it finishes."""
    run = run_submit(spec=spec)
    run = run_wait(run=run, timeout_s=run.spec["options"]["timeoutMs"] / 1000 + 60)
    kept = {"runId": str(run.pk)}  # a failure is kept too: its answer says which run holds the trace
    if not run.is_final:
        raise ServiceError(
            "timeout",
            f"The run {run.pk} did not finish in time; follow it at /api/runs/{run.pk}.",
            status_code=504,
            extra=kept,
        )
    if run.status != Run.Status.SUCCEEDED:
        error = run.error or {"code": "cancelled", "message": "The run was cancelled."}
        raise ServiceError(
            error["code"], error["message"], status_code=FETCH_ERROR_STATUS.get(error["code"], 502), extra=kept
        )
    return {**run.result, **kept}


def search(request: dict) -> list[dict]:
    """Search with SearXNG, from POST /api/search's body (or the search command's and MCP search_web's), checked by
    SearchRequestSerializer; with fetch, every hit also gets its page as Markdown (or why it could not)."""
    asked = SearchRequestSerializer(data=request)
    asked.is_valid(raise_exception=True)
    data = asked.validated_data
    if not settings.SEARXNG_URL:
        raise ServiceError(
            "search_not_configured",
            "Search needs a SearXNG instance: set SEARXNG_URL (for example http://127.0.0.1:8888) and enable its "
            "json format.",
            status_code=503,
        )
    try:
        hits = searxng_search(
            settings.SEARXNG_URL,
            data["query"],
            limit=data["limit"],
            categories=data.get("categories"),
            language=data.get("language"),
            time_range=data.get("timeRange") or data.get("time_range"),
        )
    except EngineError as error:
        status = 400 if error.code == "search_rejected" else 502
        raise ServiceError(error.code, error.message, status_code=status) from None
    results = [hit.to_dict() for hit in hits]
    if data["fetch"] and results:

        def with_page(result: dict) -> dict:
            try:
                page = _fetch_now(
                    {"url": result["url"], "options": {"mainContent": data["mainContent"], "timeoutMs": 30_000}}
                )
            except ServiceError as error:
                return {**result, "error": {"code": error.error_code, "message": str(error.detail)}}
            return {**result, "markdown": page["markdown"]}

        with ThreadPoolExecutor(max_workers=min(SEARCH_FETCH_PARALLEL, len(results))) as pool:
            results = list(pool.map(with_page, results))
    return results
