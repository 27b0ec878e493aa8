"""The MCP server: the tool table as tools/list (rebuilt on every call) and tools/call, over stdio."""

from __future__ import annotations

import logging

import anyio
import mcp_types as types
from django.conf import settings
from jsonschema import Draft202012Validator
from mcp.server import CacheHint, Server, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from rest_framework import exceptions

from service.kernel.errors import ServiceError, flatten_fields
from service.mcp.catalogue import query_tool_specs, query_tools_fingerprint, saved_query_catalog
from service.mcp.tools import TOOLS, Tool, error_result, fields_message, in_thread, run_saved_query, tool_input

log = logging.getLogger(__name__)


# Checks the tools' serializers make again and say better: a pattern in words ("Only http:// and https:// URLs
# can be fetched.") rather than as a regular expression.
SAID_BY_THE_SERVICE = ("required", "additionalProperties", "pattern")


def _argument_problems(schema: dict, arguments: dict) -> dict[str, list[str]]:
    """What is wrong with the arguments, by field; missing and unknown fields in the API's words."""
    problems: dict[str, list[str]] = {}
    for name in schema["required"]:
        if name not in arguments:
            problems[name] = ["This field is required."]
    for name in sorted(set(arguments) - set(schema["properties"])):
        problems[name] = ["This field is not allowed."]
    for error in Draft202012Validator(schema).iter_errors(arguments):
        if error.validator not in SAID_BY_THE_SERVICE:
            name = ".".join(str(part) for part in error.absolute_path) or "arguments"
            problems.setdefault(name, []).append(error.message + ".")
    return problems


def query_tools() -> dict[str, Tool]:
    """The per-query tools of the moment ("mcpTool": true), by tool name: each replays its query."""
    tools = {}
    for spec in query_tool_specs(set(TOOLS)):
        query = spec["query"]

        async def call(arguments: dict, query: str = query) -> types.CallToolResult:
            return await run_saved_query({**arguments, "name": query})

        tools[spec["name"]] = Tool(
            name=spec["name"],
            title=f"Saved query {query}",
            description=spec["description"],
            inputs=lambda fields=spec["inputs"]: tool_input(fields),
            call=call,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
            output_schema=spec["output_schema"],
        )
    return tools


async def _list_tools(ctx: ServerRequestContext, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    LISTENERS.note(ctx)
    catalog = await in_thread(saved_query_catalog)()
    tools = {**TOOLS, **await in_thread(query_tools)()}
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=tool.name,
                title=tool.title,
                description=f"{tool.description}\n\n{catalog}" if tool.name == "run_saved_query" else tool.description,
                input_schema=tool.input_schema,
                output_schema=tool.output_schema,
                annotations=tool.annotations,
            )
            for tool in tools.values()
        ]
    )


async def _call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
    LISTENERS.note(ctx)
    tool = TOOLS.get(params.name) or (await in_thread(query_tools)()).get(params.name)
    if tool is None:
        raise MCPError(types.INVALID_PARAMS, f"There is no tool named {params.name!r}; tools/list names them.")
    arguments = params.arguments or {}
    problems = _argument_problems(tool.input_schema, arguments)
    if problems:
        return error_result("invalid_arguments", fields_message(problems))
    try:
        return await tool.call(arguments)
    except ServiceError as error:
        return error_result(error.error_code, str(error.detail))
    except exceptions.ValidationError as error:
        return error_result("invalid_request", fields_message(flatten_fields(error.detail)))
    except Exception:
        log.exception("MCP tool %s failed", tool.name)
        return error_result("internal_error", "The server hit an unexpected error; it has been logged.")


server = Server(
    "web-data-service",
    version=settings.SPECTACULAR_SETTINGS["VERSION"],
    instructions=(
        "A self-hosted web-data service: fetch pages as Markdown, crawl sites, search the web, extract JSON from "
        "pages with a schema, replay saved queries and start browser agents. Every run is kept; get_run shows its "
        "trace."
    ),
    # The tool list changes with the saved queries: clients should not keep it.
    cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
    get_tool_input_schema=lambda name: TOOLS[name].input_schema if name in TOOLS else None,  # built-ins only
    on_list_tools=_list_tools,
    on_call_tool=_call_tool,
)


# How often the stdio server looks whether the per-query tools changed (a database read of the mcpTool queries).
QUERY_TOOLS_POLL_SECONDS = 1.0


class Listeners:
    """The connections of this process's clients, told `notifications/tools/list_changed` when the per-query tools
    change (a query gets or loses "mcpTool", or is edited). Over stdio, where the connection stays open; handshake-era
    connections receive it (the modern era delivers change notifications on subscriptions/listen streams only)."""

    def __init__(self) -> None:
        self.sessions: list = []  # the clients' sessions
        self.watching = False  # only the stdio server watches; HTTP requests come and go without a channel

    def note(self, ctx: ServerRequestContext) -> None:
        if not self.watching:
            return
        session = getattr(ctx, "session", None)
        if session is not None and all(session is not known for known in self.sessions):
            self.sessions.append(session)

    async def watch(self, interval: float = QUERY_TOOLS_POLL_SECONDS) -> None:
        self.watching = True
        seen = await in_thread(query_tools_fingerprint)()
        while True:
            await anyio.sleep(interval)
            now = await in_thread(query_tools_fingerprint)()
            if now == seen:
                continue
            seen = now
            for session in list(self.sessions):
                try:
                    await session.send_tool_list_changed()
                except Exception:  # a client that went away
                    log.info("MCP client gone: tools/list_changed not sent", exc_info=True)
                    self.sessions.remove(session)


LISTENERS = Listeners()


async def serve_stdio() -> None:
    """Serve one client on stdin/stdout until it closes them. The SDK points fd 1 at stderr meanwhile, so stray
    output (Chromium, warnings) cannot corrupt the protocol stream."""
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tasks:
        tasks.start_soon(LISTENERS.watch)
        await server.run(read_stream, write_stream, options)
        tasks.cancel_scope.cancel()
