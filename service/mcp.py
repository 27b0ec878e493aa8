"""The MCP server: the service's tools for MCP clients, over stdio (`manage.py mcp`) and streamable HTTP (/api/mcp).

Built on the SDK's low-level `Server`, so the tool table below is the whole contract: hand-written JSON input
schemas, and a tools/list that is rebuilt on every call (run_saved_query's description names the saved queries of
the moment). Tools are adapters: check the arguments, call one service, shape the answer. Errors come back as tool
results with isError and the service's "<code>: <message>", never a traceback.

Django code runs in pool threads (`_in_thread`), never on the event loop: under daphne the loop serves the whole API.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import ParamSpec, TypeVar

import mcp_types as types
from channels.db import database_sync_to_async
from django.conf import settings
from jsonschema import Draft202012Validator
from mcp.server import CacheHint, Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from rest_framework import exceptions
from rest_framework.utils.encoders import JSONEncoder
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from queries.models import SavedQuery
from queries.serializers import QueryReplaySerializer, SavedQuerySerializer
from queries.services import query_get, query_replay
from runs.models import Run
from runs.serializers import FetchRequestSerializer, RunDetailSerializer, RunSpecSerializer, SearchRequestSerializer
from runs.services import page_fetch, run_submit, run_wait, web_search
from service.auth import PerKeyRateThrottle, authenticate_key
from service.errors import ServiceError, error_body, flatten_fields

log = logging.getLogger(__name__)
# Every stateless HTTP request starts and stops its own session manager and transport, and the SDK logs each of
# those at INFO: two or three lines per request that say nothing.
for _chatty in ("mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
    logging.getLogger(_chatty).setLevel(logging.WARNING)

DEFAULT_WAIT_SECONDS = 120
# The SDK client gives up reading a response after 300 s by default; a longer wait would outlive it.
MAX_WAIT_SECONDS = 300
# run_wait is called in slices so a long wait holds a pool thread for at most this long at a time.
WAIT_SLICE_SECONDS = 1.0
# run_saved_query's description lists at most this many queries; list_saved_queries has them all.
DESCRIBED_QUERIES_MAX = 50


P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(fn: Callable[P, R]) -> Callable[P, Awaitable[R]]:
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


def _error(code: str, message: str, *, run_id: str | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"{code}: {message}")],
        is_error=True,
        meta={"runId": run_id} if run_id else None,
    )


def _fields_message(fields: dict[str, list[str]]) -> str:
    return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in fields.items())


async def _wait(run: Run, timeout_s: float) -> Run:
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        run = await _in_thread(run_wait)(run=run, timeout_s=max(0.0, min(WAIT_SLICE_SECONDS, left)))
        if run.is_final or left <= WAIT_SLICE_SECONDS:
            return run


def _run_outcome(run: Run, timeout_s: float) -> types.CallToolResult:
    run_id = str(run.pk)
    if not run.is_final:
        hint = " Is `manage.py serve` (the workers) running?" if run.status == Run.Status.QUEUED else ""
        return _error(
            "timeout",
            f"Run {run_id} is still {run.status} after {timeout_s:g} s; follow it with get_run.{hint}",
            run_id=run_id,
        )
    if run.status != Run.Status.SUCCEEDED:
        error = run.error or {"code": "cancelled", "message": "The run was cancelled."}
        return _error(error["code"], f"{error['message']} (run {run_id})", run_id=run_id)
    return _result(run.result, note=f"runId: {run_id}", run_id=run_id)


# Tools


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict
    call: Callable[[dict], Awaitable[types.CallToolResult]]
    annotations: types.ToolAnnotations


def _object(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


URL = {"type": "string", "description": "An http:// or https:// URL."}
WAIT = {
    "type": "number",
    "minimum": 1,
    "maximum": MAX_WAIT_SECONDS,
    "default": DEFAULT_WAIT_SECONDS,
    "description": "How long to wait for the run, in seconds. On timeout the run goes on; get_run follows it.",
}


def _replay(arguments: dict) -> Run:
    query = query_get(name=arguments["name"])
    overrides = QueryReplaySerializer(data={k: arguments[k] for k in ("url", "instruction") if k in arguments})
    overrides.is_valid(raise_exception=True)
    return query_replay(query=query, overrides=overrides.validated_data)


async def run_saved_query(arguments: dict) -> types.CallToolResult:
    run = await _in_thread(_replay)(arguments)
    timeout_s = arguments.get("timeoutSeconds", DEFAULT_WAIT_SECONDS)
    return _run_outcome(await _wait(run, timeout_s), timeout_s)


def _saved_queries() -> list[dict]:
    return SavedQuerySerializer(SavedQuery.objects.all(), many=True).data


async def list_saved_queries(arguments: dict) -> types.CallToolResult:
    return _result({"queries": await _in_thread(_saved_queries)()})


def _run_detail(run_id: str) -> dict:
    try:
        uuid.UUID(run_id)
    except ValueError:
        raise ServiceError("invalid_request", f"{run_id!r} is not a run id (a UUID).") from None
    run = Run.objects.with_step_count().prefetch_related("steps").filter(pk=run_id).first()
    if run is None:
        raise ServiceError("not_found", f"There is no run {run_id}.", status_code=404)
    return RunDetailSerializer(run).data


async def get_run(arguments: dict) -> types.CallToolResult:
    return _result(await _in_thread(_run_detail)(arguments["runId"]))


def _fetch(arguments: dict) -> dict:
    asked = FetchRequestSerializer(data=arguments)
    asked.is_valid(raise_exception=True)
    data = asked.validated_data
    return page_fetch(
        url=data["url"],
        main_content=data["mainContent"],
        render=data["render"],
        timeout_ms=data["timeoutMs"],
        wait_for=data.get("waitFor"),
        profile=data.get("profile"),
    )


async def fetch_markdown(arguments: dict) -> types.CallToolResult:
    page = await _in_thread(_fetch)(arguments)
    return _result(page, text=page["markdown"])


def _search(arguments: dict) -> list[dict]:
    asked = SearchRequestSerializer(data=arguments)
    asked.is_valid(raise_exception=True)
    data = asked.validated_data
    return web_search(
        query=data["query"],
        limit=data["limit"],
        language=data.get("language"),
        time_range=data.get("timeRange"),
        fetch_pages=data["fetch"],
    )


async def search_web(arguments: dict) -> types.CallToolResult:
    return _result({"results": await _in_thread(_search)(arguments)})


def _submit(spec: dict) -> Run:
    checked = RunSpecSerializer(data=spec)
    checked.is_valid(raise_exception=True)
    return run_submit(spec=checked.validated_data)


async def extract(arguments: dict) -> types.CallToolResult:
    spec = {"kind": "extract", **{k: arguments[k] for k in ("url", "schema", "instruction") if k in arguments}}
    run = await _in_thread(_submit)(spec)
    timeout_s = arguments.get("timeoutSeconds", DEFAULT_WAIT_SECONDS)
    return _run_outcome(await _wait(run, timeout_s), timeout_s)


async def start_agent(arguments: dict) -> types.CallToolResult:
    spec = {
        "kind": "agent",
        **{k: arguments[k] for k in ("url", "goal", "profile", "saveProfile", "overwriteProfile") if k in arguments},
    }
    if "maxSteps" in arguments:
        spec["options"] = {"maxSteps": arguments["maxSteps"]}
    run = await _in_thread(_submit)(spec)
    run_id = str(run.pk)
    return _result(
        {"runId": run_id, "status": run.status},
        note=f"Agent run {run_id} is queued; follow it with get_run.",
        run_id=run_id,
    )


RUN_SAVED_QUERY = (
    "Run a saved query (a named, tested extraction: a page URL, a JSON schema and an instruction) and wait for its "
    "result. Returns the extracted JSON (as structured content matching the query's schema) and the run id. "
    "url and instruction override the stored ones for this run only (same page layout, another page). A run still "
    "unfinished after timeoutSeconds is reported as a timeout; get_run follows it."
)

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            name="run_saved_query",
            title="Run a saved query",
            description=RUN_SAVED_QUERY,
            input_schema=_object(
                {
                    "name": {"type": "string", "description": "The saved query's name (see the list above)."},
                    "url": {**URL, "description": "Run the query on this page instead of its stored URL."},
                    "instruction": {"type": "string", "description": "Replace the stored instruction for this run."},
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
            input_schema=_object({}),
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
            input_schema=_object({"runId": {"type": "string", "description": "The run's id (a UUID)."}}, ("runId",)),
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
            input_schema=_object(
                {
                    "url": URL,
                    "mainContent": {
                        "type": "boolean",
                        "default": True,
                        "description": "Only the main content (no navigation, footers, ads).",
                    },
                    "render": {
                        "type": "string",
                        "enum": ["auto", "browser", "http"],
                        "default": "auto",
                        "description": "http: plain HTTP only; browser: Chromium; auto: HTTP, Chromium if needed.",
                    },
                    "timeoutMs": {"type": "integer", "minimum": 1000, "default": 30000},
                    "waitFor": {"type": "string", "description": "A CSS selector to wait for (browser only)."},
                    "profile": {"type": "string", "description": "A stored login profile to load the page with."},
                },
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
            input_schema=_object(
                {
                    "query": {"type": "string", "description": "What to search for."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                    "fetch": {"type": "boolean", "default": False, "description": "Also fetch each result page."},
                    "language": {"type": "string", "description": "A language code, e.g. en or de-CH."},
                    "timeRange": {"type": "string", "enum": ["day", "week", "month", "year"]},
                },
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
            input_schema=_object(
                {
                    "url": URL,
                    "schema": {"type": "object", "description": "A JSON schema for the result."},
                    "instruction": {"type": "string", "description": "What to extract, in plain words."},
                    "timeoutSeconds": WAIT,
                },
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
            input_schema=_object(
                {
                    "url": {**URL, "description": "Where the agent starts."},
                    "goal": {"type": "string", "description": "What the agent should achieve or find out."},
                    "profile": {"type": "string", "description": "Start from this stored login profile."},
                    "saveProfile": {"type": "string", "description": "Save the browser session as this profile."},
                    "overwriteProfile": {
                        "type": "boolean",
                        "description": "Replace the saveProfile profile if it exists (else the run is refused).",
                    },
                    "maxSteps": {"type": "integer", "minimum": 1, "maximum": 200, "default": 25},
                },
                required=("url", "goal"),
            ),
            call=start_agent,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        ),
    )
}


# The saved-query catalog in run_saved_query's description


def _type_name(schema: object) -> str:
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(str(k) for k in kind)
    if kind == "array":
        return f"array of {_type_name(schema.get('items'))}"
    return str(kind)


def _returns(schema: dict) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties:
        return f"JSON of type {_type_name(schema)}"
    fields = []
    for name, field in properties.items():
        description = field.get("description") if isinstance(field, dict) else None
        described = f": {_quoted(description)}" if isinstance(description, str) and description else ""
        fields.append(f"{_quoted(name)} ({_type_name(field)}{described})")
    return "an object with " + ", ".join(fields)


# Text users wrote (instructions, schema names and descriptions) in the tools' descriptions: quoted as JSON strings
# and cut, so that it reads as data about a query and never as this server's own words (a line break or a
# "- another query:" inside it stays inside the quotes).
QUOTED_MAX_CHARS = 200


def _quoted(text: str) -> str:
    cut = text if len(text) <= QUOTED_MAX_CHARS else text[: QUOTED_MAX_CHARS - 1] + "…"
    return json.dumps(cut, ensure_ascii=False)


def saved_query_catalog() -> str:
    queries = list(SavedQuery.objects.all()[: DESCRIBED_QUERIES_MAX + 1])
    if not queries:
        return "There are no saved queries yet; they are made in the playground, the API or `manage.py query`."
    lines = ["Saved queries:"]
    for query in queries[:DESCRIBED_QUERIES_MAX]:
        line = f"- {query.name}: reads {query.url} and returns {_returns(query.schema)}."
        if query.instruction:
            line += f" Its stored instruction (the user's words, quoted): {_quoted(query.instruction)}"
        lines.append(line)
    if len(queries) > DESCRIBED_QUERIES_MAX:
        lines.append("- … and more: list_saved_queries lists them all.")
    return "\n".join(lines)


# The server


def _argument_problems(schema: dict, arguments: dict) -> dict[str, list[str]]:
    """What is wrong with the arguments, by field; missing and unknown fields in the API's words."""
    problems: dict[str, list[str]] = {}
    for name in schema["required"]:
        if name not in arguments:
            problems[name] = ["This field is required."]
    for name in sorted(set(arguments) - set(schema["properties"])):
        problems[name] = ["This field is not allowed."]
    for error in Draft202012Validator(schema).iter_errors(arguments):
        if error.validator not in ("required", "additionalProperties"):
            name = ".".join(str(part) for part in error.absolute_path) or "arguments"
            problems.setdefault(name, []).append(error.message + ".")
    return problems


async def _list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    catalog = await _in_thread(saved_query_catalog)()
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=tool.name,
                title=tool.title,
                description=f"{tool.description}\n\n{catalog}" if tool.name == "run_saved_query" else tool.description,
                input_schema=tool.input_schema,
                annotations=tool.annotations,
            )
            for tool in TOOLS.values()
        ]
    )


async def _call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    tool = TOOLS.get(params.name)
    if tool is None:
        raise MCPError(types.INVALID_PARAMS, f"There is no tool named {params.name!r}; tools/list names them.")
    arguments = params.arguments or {}
    problems = _argument_problems(tool.input_schema, arguments)
    if problems:
        return _error("invalid_arguments", _fields_message(problems))
    try:
        return await tool.call(arguments)
    except ServiceError as error:
        return _error(error.error_code, str(error.detail))
    except exceptions.ValidationError as error:
        return _error("invalid_request", _fields_message(flatten_fields(error.detail)))
    except Exception:
        log.exception("MCP tool %s failed", tool.name)
        return _error("internal_error", "The server hit an unexpected error; it has been logged.")


server = Server(
    "web-data-service",
    version=settings.SPECTACULAR_SETTINGS["VERSION"],
    instructions=(
        "A self-hosted web-data service: fetch pages as Markdown, search the web, extract JSON from pages with a "
        "schema, replay saved queries and start browser agents. Every run is kept; get_run shows its trace."
    ),
    # The tool list changes with the saved queries: clients should not keep it.
    cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
    get_tool_input_schema=lambda name: TOOLS[name].input_schema if name in TOOLS else None,
    on_list_tools=_list_tools,
    on_call_tool=_call_tool,
)


async def serve_stdio() -> None:
    """Serve one client on stdin/stdout until it closes them. The SDK points fd 1 at stderr meanwhile, so stray
    output (Chromium, warnings) cannot corrupt the protocol stream."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


# Streamable HTTP at /api/mcp


def _key_problem(header: str) -> tuple[int, dict, dict[str, str]] | None:
    """Why an Authorization header does not let its caller in, or why not now, in the API's words and codes
    (service/auth.py): (status, error body, headers); None if it does. A valid key spends its API_RATE_LIMIT
    budget here as on the HTTP API (the same counter: one budget per key)."""
    unauthenticated = {"WWW-Authenticate": 'Bearer realm="api"'}
    if not header:
        return 401, error_body("unauthenticated", str(exceptions.NotAuthenticated.default_detail)), unauthenticated
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        return 401, error_body("unauthenticated", "Use the header 'Authorization: Bearer <api key>'."), unauthenticated
    holder = authenticate_key(raw.strip())
    if holder is None:
        return 401, error_body("unauthenticated", "The API key is not valid or has been revoked."), unauthenticated
    throttle = PerKeyRateThrottle()
    if not throttle.allow_request(SimpleNamespace(user=holder), None):
        wait = throttle.wait()
        limited = exceptions.Throttled(wait)
        return 429, error_body("rate_limited", str(limited.detail)), {"Retry-After": str(math.ceil(wait or 1))}
    return None


class HttpEndpoint:
    """The server over streamable HTTP, behind the API's Bearer keys, answering like the API when the key is wrong.

    Stateless with JSON responses: every POST is served on its own, so nothing outlives a request. That is also why
    each request gets its own session manager: daphne runs no ASGI lifespan, and a manager's run() (its task group)
    then lasts exactly as long as the request it serves. Host/Origin checks (the SDK's DNS-rebinding guard) are off:
    the endpoint takes no cookies, only a key a rebinding page cannot have."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        problem = await _in_thread(_key_problem)(header)
        if problem is not None:
            status_code, body, headers = problem
            await JSONResponse(body, status_code=status_code, headers=headers)(scope, receive, send)
            return
        if scope["method"] != "POST":
            # Stateless: no stream to GET (the spec's answer is 405) and no session to DELETE.
            message = str(exceptions.MethodNotAllowed(scope["method"]).detail)
            response = JSONResponse(
                error_body("method_not_allowed", message), status_code=405, headers={"Allow": "POST"}
            )
            await response(scope, receive, send)
            return
        manager = StreamableHTTPSessionManager(
            app=server, stateless=True, json_response=True, max_request_body_size=settings.API_MAX_BODY_BYTES
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)
