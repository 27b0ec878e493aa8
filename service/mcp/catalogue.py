"""The saved queries as run_saved_query's description names them: what each reads and returns, users' words
quoted as data."""

from __future__ import annotations

import json

from queries.models import SavedQuery
from service.mcp.inputs import api_fields

# run_saved_query's description lists at most this many queries; list_saved_queries has them all.
DESCRIBED_QUERIES_MAX = 50


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


# Per-query tools (a query saved with "mcpTool": true): named after the query, typed by its schema.
QUERY_TOOL_PREFIX = "query_"


def query_tool_name(name: str, taken: set[str]) -> str:
    """The query's own name, or prefixed where a built-in tool has it (query names are valid tool names)."""
    return f"{QUERY_TOOL_PREFIX}{name}"[:64] if name in taken else name


def without_rules(schema: object) -> object:
    """A query's schema as plain JSON schema: without the extraction rules (x-…)."""
    if isinstance(schema, list):
        return [without_rules(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: without_rules(value) for key, value in schema.items() if not str(key).startswith("x-")}


def output_schema(schema: object) -> dict | None:
    """A tool's output schema: the query's, when its result is an object (structured content is an object)."""
    return without_rules(schema) if isinstance(schema, dict) and schema.get("type") == "object" else None


def query_tool_specs(taken: set[str]) -> list[dict]:
    """Name, description, input and output schema of each per-query tool, from the database of the moment."""
    inputs = api_fields(
        "QueryReplayRequest",
        "url",
        "instruction",
        url="Run the query on this page instead of its stored URL (a page of the same layout).",
        instruction="Replace the stored instruction for this run.",
    )
    specs = []
    for query in SavedQuery.objects.filter(mcp_tool=True):
        description = (
            f"Run the saved query {_quoted(query.name)}: reads {query.url} and returns {_returns(query.schema)}."
        )
        if query.instruction:
            description += f" Its stored instruction (the user's words, quoted): {_quoted(query.instruction)}"
        specs.append(
            {
                "name": query_tool_name(query.name, taken),
                "query": query.name,
                "description": description + " Waits for the run; a run still going after timeoutSeconds is a timeout.",
                "inputs": inputs,
                "output_schema": output_schema(query.schema),
            }
        )
    return specs


def query_tools_fingerprint() -> tuple:
    """What the per-query tools depend on: it changes when one is added, removed or edited."""
    return tuple(SavedQuery.objects.filter(mcp_tool=True).order_by("name").values_list("name", "updated_at"))
