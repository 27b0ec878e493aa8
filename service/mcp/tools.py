"""The tools: each checks its arguments, calls one service and shapes the answer; errors come back as results
with isError and the service's "<code>: <message>". Django code runs in pool threads (`in_thread`), never on the
event loop: under daphne the loop serves the whole API."""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import mcp_types as types
from channels.db import database_sync_to_async
from django.db.models import Exists, OuterRef
from rest_framework.utils.encoders import JSONEncoder

from queries.models import SavedQuery
from queries.serializers import SavedQuerySerializer
from queries.services import query_get, query_replay
from runs.direct import fetch_page, search
from runs.models import Run
from runs.serializers import RunDetailSerializer, RunSummarySerializer
from runs.services import run_submit, run_wait
from service.kernel.errors import ServiceError
from service.mcp.inputs import api_fields

DEFAULT_WAIT_SECONDS = 120
# The SDK client gives up reading a response after 300 s by default; a longer wait would outlive it.
MAX_WAIT_SECONDS = 300
# run_wait is called in slices so a long wait holds a pool thread for at most this long at a time.
WAIT_SLICE_SECONDS = 1.0


P = ParamSpec("P")
R = TypeVar("R")


def in_thread(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """`fn` run in a pool thread with Django's connection hygiene. Not thread-sensitive on purpose: a wait for one
    run must not queue every other call behind it in one shared thread."""
    return database_sync_to_async(fn, thread_sensitive=False)


# Results


def _dumps(value: object) -> str:
    return json.dumps(value, cls=JSONEncoder, ensure_ascii=False)


def _result(
    data: object, *, text: str | None = None, note: str | None = None, run_id: str | None = None
) -> types.CallToolResult:
    """A successful tool result: the data as structured content (when it is an object) and as JSON text."""
    serialized = _dumps(data)
    content = [types.TextContent(text=serialized if text is None else text)]
    if note:
        content.append(types.TextContent(text=note))
    structured = json.loads(serialized)
    return types.CallToolResult(
        content=content,
        structured_content=structured if isinstance(structured, dict) else None,
        meta={"runId": run_id} if run_id else None,
    )


def error_result(code: str, message: str, *, run_id: str | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")],
        is_error=True,
        meta={"runId": run_id} if run_id else None,
    )


def fields_message(fields: dict[str, list[str]]) -> str:
    return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in fields.items())


async def _wait(run: Run, timeout_s: float) -> Run:
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        run = await in_thread(run_wait)(run=run, timeout_s=max(0.0, min(WAIT_SLICE_SECONDS, left)))
        if run.is_final or left <= WAIT_SLICE_SECONDS:
            return run


def _run_outcome(run: Run, timeout_s: float) -> types.CallToolResult:
    run_id = str(run.pk)
    if not run.is_final:
        hint = " Is `manage.py serve` (the workers) running?" if run.status == Run.Status.QUEUED else ""
        return error_result(
            "timeout",
            f"Run {run_id} is still {run.status} after {timeout_s:g} s; follow it with get_run.{hint}",
            run_id=run_id,
        )
    if run.status != Run.Status.SUCCEEDED:
        error = run.error or {"code": "cancelled", "message": "The run was cancelled."}
        return error_result(error["code"], f"{error['message']} (run {run_id})", run_id=run_id)
    return _result(run.result, note=f"runId: {run_id}", run_id=run_id)


# Tools


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    inputs: Callable[[], dict]  # builds the input schema (from the API's components: service/mcp/inputs.py)
    call: Callable[[dict], Awaitable[types.CallToolResult]]
    annotations: types.ToolAnnotations
    output_schema: dict | None = None  # per-query tools: the query's schema

    @functools.cached_property
    def input_schema(self) -> dict:
        return self.inputs()


def tool_input(fields: dict) -> dict:
    """A per-query tool's input: the replay's one-off overrides and how long to wait."""
    return _object({**fields, "timeoutSeconds": WAIT})


def _object(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


RUN_ID = {"type": "string", "format": "uuid", "description": "The run's id (a UUID)."}
SUMMARY = {
    "type": "boolean",
    "default": False,
    "description": "Only the run's status, error, usage, a preview of its result and the result's size; no result "
    "and no trace (enough to follow a run until it ends).",
}
WAIT = {
    "type": "number",
    "minimum": 1,
    "maximum": MAX_WAIT_SECONDS,
    "default": DEFAULT_WAIT_SECONDS,
    "description": "How long to wait for the run, in seconds. On timeout the run goes on; get_run follows it.",
}


def _replay(arguments: dict) -> Run:
    query = query_get(name=arguments["name"])
    return query_replay(query=query, overrides={k: arguments[k] for k in ("url", "instruction") if k in arguments})


async def run_saved_query(arguments: dict) -> types.CallToolResult:
    run = await in_thread(_replay)(arguments)
    timeout_s = arguments.get("timeoutSeconds", DEFAULT_WAIT_SECONDS)
    return _run_outcome(await _wait(run, timeout_s), timeout_s)


def _saved_queries() -> list[dict]:
    return SavedQuerySerializer(SavedQuery.objects.all(), many=True).data


async def list_saved_queries(arguments: dict) -> types.CallToolResult:
    return _result({"queries": await in_thread(_saved_queries)()})


def _run_detail(run_id: str, summary: bool) -> dict:
    try:
        uuid.UUID(run_id)
    except ValueError:
        raise ServiceError("invalid_request", f"{run_id!r} is not a run id (a UUID).") from None
    runs = Run.objects.summaries() if summary else Run.objects.prefetch_related("steps")
    run = runs.filter(pk=run_id).first()
    if run is None:
        raise ServiceError("not_found", f"There is no run {run_id}.", status_code=404)
    return (RunSummarySerializer if summary else RunDetailSerializer)(run).data


async def get_run(arguments: dict) -> types.CallToolResult:
    return _result(await in_thread(_run_detail)(arguments["runId"], arguments.get("summary", False)))


async def fetch_markdown(arguments: dict) -> types.CallToolResult:
    page = await in_thread(fetch_page)(arguments)
    return _result(page, text=page["markdown"])


async def search_web(arguments: dict) -> types.CallToolResult:
    return _result({"results": await in_thread(search)(arguments)})


def _submit(spec: dict) -> Run:
    return run_submit(spec=spec)


async def extract(arguments: dict) -> types.CallToolResult:
    spec = {"kind": "extract", **{k: arguments[k] for k in ("url", "schema", "instruction") if k in arguments}}
    run = await in_thread(_submit)(spec)
    timeout_s = arguments.get("timeoutSeconds", DEFAULT_WAIT_SECONDS)
    return _run_outcome(await _wait(run, timeout_s), timeout_s)


async def start_agent(arguments: dict) -> types.CallToolResult:
    spec = {
        "kind": "agent",
        **{k: arguments[k] for k in ("url", "goal", "profile", "saveProfile", "overwriteProfile") if k in arguments},
    }
    if "maxSteps" in arguments:
        spec["options"] = {"maxSteps": arguments["maxSteps"]}
    run = await in_thread(_submit)(spec)
    run_id = str(run.pk)
    return _result(
        {"runId": run_id, "status": run.status},
        note=f"Agent run {run_id} is queued; follow it with get_run.",
        run_id=run_id,
    )


# crawl_site returns the pages' Markdown (and extract pages' data) up to this many characters in all, pages in crawl
# order: a 100-page crawl would otherwise put megabytes into the client's context. get_run gives any page whole.
CRAWL_CONTENT_MAX_CHARS = 100_000
# ...and lists at most this many pages (URL, status, title each); GET /api/runs?parent=<id> lists them all.
CRAWL_PAGES_LISTED_MAX = 500
CRAWL_OPTIONS = ("maxPages", "maxDepth", "include", "exclude", "scope", "render")
CRAWL_WAIT = {
    **WAIT,
    "description": "How long to wait for the crawl, in seconds. When it runs out, the pages done so far come back "
    "(status running) and the crawl goes on; get_run follows it.",
}


def _crawl_page(page: Run, room: int) -> tuple[dict, int]:
    """A crawl's page as crawl_site shows it, its Markdown (fetch pages) or data (extract pages) within `room`
    characters; and how many of them it used. Data is JSON: it comes whole or not at all."""
    result = page.result if page.status == Run.Status.SUCCEEDED else None
    entry: dict = {"runId": str(page.pk), "url": page.url, "status": page.status}
    if page.kind == Run.Kind.EXTRACT:
        size = len(_dumps(result)) if result is not None else 0
        fits = size <= room
        entry.update(title=None, data=result if fits else None, cut=not fits)
        used = size if fits else room
    else:
        page_result = result if isinstance(result, dict) else {}
        markdown = page_result.get("markdown")
        title = page_result.get("title")
        used = min(len(markdown), room) if isinstance(markdown, str) else 0
        cut = isinstance(markdown, str) and len(markdown) > room
        if cut and used:
            markdown = markdown[:used] + f"\n\n[… {len(markdown) - used} more characters cut: get_run gives them]"
        elif cut:
            markdown = None
        entry.update(title=title or None, markdown=markdown, cut=cut)
    entry["error"] = page.error
    return entry, used


def _crawl_outcome(crawl: Run, wait_s: float) -> types.CallToolResult:
    """The crawl (finished, or as far as it got in wait_s) with its pages; a failed or cancelled crawl is an error."""
    run_id = str(crawl.pk)
    if crawl.is_final and crawl.status != Run.Status.SUCCEEDED:
        return _run_outcome(crawl, wait_s)
    children = Run.objects.filter(parent=crawl)
    # A page tried again (a 429 or 503 answer) has a run per attempt: the last one is the page.
    retried = children.filter(url=OuterRef("url"), created_at__gt=OuterRef("created_at"))
    pages = children.exclude(Exists(retried)).order_by("created_at")
    total = pages.count()
    room = CRAWL_CONTENT_MAX_CHARS
    listed = []
    cut = 0
    for page in pages[:CRAWL_PAGES_LISTED_MAX].iterator(chunk_size=50):
        entry, used = _crawl_page(page, room)
        room = 0 if entry["cut"] else room - used  # in crawl order: once a page is cut, the rest are left out
        cut += entry["cut"]
        listed.append(entry)
    notes = []
    if not crawl.is_final:
        hint = " Is `manage.py serve` (the workers) running?" if crawl.status == Run.Status.QUEUED else ""
        notes.append(
            f"The crawl is still {crawl.status} after {wait_s:g} s, with {total} pages so far, and goes on: get_run "
            f"follows it (runId {run_id}) and GET /api/runs?parent={run_id} lists its pages.{hint}"
        )
    if cut:
        notes.append(
            f"{cut} pages are cut or left out here: the pages' Markdown and data come to at most "
            f"{CRAWL_CONTENT_MAX_CHARS} characters in all; get_run with a page's runId gives it whole."
        )
    if total > len(listed):
        notes.append(f"{total - len(listed)} more pages are not listed: GET /api/runs?parent={run_id} lists them all.")
    data = {
        "runId": run_id,
        "status": crawl.status,
        "summary": crawl.result,
        "pages": listed,
        "note": " ".join(notes) or None,
    }
    return _result(data, run_id=run_id)


async def crawl_site(arguments: dict) -> types.CallToolResult:
    spec = {
        "kind": "crawl",
        "url": arguments["url"],
        "crawl": {k: arguments[k] for k in CRAWL_OPTIONS if k in arguments},
        **{k: arguments[k] for k in ("schema", "instruction") if k in arguments},
    }
    run = await in_thread(_submit)(spec)
    wait_s = arguments.get("timeoutSeconds", DEFAULT_WAIT_SECONDS)
    return await in_thread(_crawl_outcome)(await _wait(run, wait_s), wait_s)


RUN_SAVED_QUERY = (
    "Run a saved query (a named, tested extraction: a page URL, a JSON schema and an instruction) and wait for its "
    "result. Returns the extracted JSON (as structured content matching the query's schema) and the run id. "
    "url and instruction override the stored ones for this run only (same page layout, another page). A run still "
    "unfinished after timeoutSeconds is reported as a timeout; get_run follows it."
)

CRAWL_SITE = (
    "Crawl a website from url: follow its links (and its sitemap) within scope, up to maxPages pages and maxDepth "
    "links away, and return the crawl's run id, status and summary, and each page's url, status, title and Markdown "
    "(with a schema: each page's extracted JSON as data instead). Waits up to timeoutSeconds; a crawl still going then "
    "returns the pages done so far with status running and a note, and goes on. The pages' Markdown and data come "
    f"to at most {CRAWL_CONTENT_MAX_CHARS} characters in all (in crawl order; a page past that is cut or left out "
    f"and says so: get_run with its runId gives it whole); at most {CRAWL_PAGES_LISTED_MAX} pages are listed."
)

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            name="run_saved_query",
            title="Run a saved query",
            description=RUN_SAVED_QUERY,
            inputs=lambda: _object(
                {
                    **api_fields("QueryFromRunRequest", "name", name="The saved query's name (see the list above)."),
                    **api_fields(
                        "QueryReplayRequest",
                        "url",
                        "instruction",
                        url="Run the query on this page instead of its stored URL.",
                        instruction="Replace the stored instruction for this run.",
                    ),
                    "timeoutSeconds": WAIT,
                },
                required=("name",),
            ),
            call=run_saved_query,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        ),
        Tool(
            name="list_saved_queries",
            title="List saved queries",
            description=(
                "List the saved queries: name, url, JSON schema, instruction, how often each ran and when last."
            ),
            inputs=lambda: _object({}),
            call=list_saved_queries,
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        Tool(
            name="get_run",
            title="Get a run",
            description=(
                "A run with its status, result or error, usage and its complete trace of steps (action, url, "
                "observation, screenshot path). Use it to follow a run by the id another tool returned."
            ),
            inputs=lambda: _object({"runId": RUN_ID, "summary": SUMMARY}, ("runId",)),
            call=get_run,
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        Tool(
            name="fetch_markdown",
            title="Fetch a page as Markdown",
            description=(
                "Load a web page now and return it as clean Markdown (the text content), with its title, final URL, "
                "HTTP status and links as structured content. Plain HTTP first, a real browser for JavaScript pages."
            ),
            inputs=lambda: _object(
                api_fields("FetchRequestRequest", "url", "mainContent", "render", "timeoutMs", "waitFor", "profile"),
                required=("url",),
            ),
            call=fetch_markdown,
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
        ),
        Tool(
            name="search_web",
            title="Search the web",
            description=(
                "Search the web (through the service's SearXNG) and return title, url, snippet and engine of each "
                "result. With fetch: true, every result also carries its page as Markdown."
            ),
            inputs=lambda: _object(
                api_fields("SearchRequestRequest", "query", "limit", "fetch", "language", "timeRange"),
                required=("query",),
            ),
            call=search_web,
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True),
        ),
        Tool(
            name="extract",
            title="Extract JSON from a page",
            description=(
                "Load a page in a real browser and return JSON matching a JSON schema, guided by an instruction. "
                "Fields with an x-selector (a CSS selector) are read without a language model; other fields need "
                "the service's model. Waits for the run and returns its result and run id."
            ),
            inputs=lambda: _object(
                {**api_fields("ExtractRunSpecRequest", "url", "schema", "instruction"), "timeoutSeconds": WAIT},
                required=("url", "schema"),
            ),
            call=extract,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        ),
        Tool(
            name="start_agent",
            title="Start a browser agent",
            description=(
                "Start an agent run: a language model drives a real browser from url toward a goal (clicks, typing, "
                "navigation) and returns its output. Returns the run id at once; follow it with get_run."
            ),
            inputs=lambda: _object(
                {
                    **api_fields(
                        "AgentRunSpecRequest",
                        "url",
                        "goal",
                        "profile",
                        "saveProfile",
                        "overwriteProfile",
                        url="Where the agent starts.",
                    ),
                    **api_fields("OptionsRequest", "maxSteps"),
                },
                required=("url", "goal"),
            ),
            call=start_agent,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        ),
        Tool(
            name="crawl_site",
            title="Crawl a website",
            description=CRAWL_SITE,
            inputs=lambda: _object(
                {
                    **api_fields(
                        "CrawlRunSpecRequest", "url", url="Where the crawl starts (its scope is taken from it)."
                    ),
                    **api_fields("CrawlOptionsRequest", *CRAWL_OPTIONS),
                    **api_fields(
                        "CrawlRunSpecRequest",
                        "schema",
                        "instruction",
                        schema="A JSON schema: each page is then extracted (its data) instead of returned as Markdown. "
                        "Fields with an x-selector (a CSS selector) are read without a language model.",
                        instruction="With schema: what to extract from each page, in plain words.",
                    ),
                    "timeoutSeconds": CRAWL_WAIT,
                },
                required=("url",),
            ),
            call=crawl_site,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        ),
    )
}
