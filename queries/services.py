"""Saved queries: create, promote from a run, edit, delete, replay, compile."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from queries import schedule_rows
from queries.models import SavedQuery
from queries.serializers import (
    QueryCompileSerializer,
    QueryCreateSerializer,
    QueryReplaySerializer,
    QuerySpecSerializer,
)
from runs import archive
from runs.engine.compile import compile_answer
from runs.models import Run
from runs.serializers import schema_rule_errors
from runs.services import run_submit
from service.kernel.errors import ServiceError


def query_get(*, name: str) -> SavedQuery:
    query = SavedQuery.objects.filter(name=name).first()
    if query is None:
        raise ServiceError("not_found", f"There is no saved query named {name!r}.", status_code=404)
    return query


def _name_taken(name: str) -> ServiceError:
    return ServiceError(
        "conflict", f"A saved query named {name!r} already exists.", status_code=409, fields={"name": ["Taken."]}
    )


def query_create(
    *,
    name: str,
    url: str,
    schema: dict,
    instruction: str = "",
    compile: bool = True,
    mcp_tool: bool = False,
    schedule: dict | None = None,
) -> SavedQuery:
    try:
        with transaction.atomic():
            query = SavedQuery.objects.create(
                name=name,
                url=url,
                schema=schema,
                instruction=instruction,
                compile=compile,
                mcp_tool=mcp_tool,
                schedule=schedule,
            )
            schedule_rows.keep_in_step(query)
            return query
    except IntegrityError:
        raise _name_taken(name) from None


def query_from_run(
    *, name: str, run_id: str, compile: bool = True, mcp_tool: bool = False, schedule: dict | None = None
) -> SavedQuery:
    """Promote a past extract run: its url, schema and instruction become the saved query."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise ServiceError("not_found", f"There is no run {run_id}.", status_code=404)
    if run.kind != Run.Kind.EXTRACT:
        raise ServiceError(
            "invalid_request",
            f"Only extract runs can become saved queries; run {run_id} is a {run.kind} run.",
            fields={"fromRun": ["Not an extract run."]},
        )
    # A run submitted before rules were checked at submit may hold a schema no replay could apply.
    problems = schema_rule_errors(run.spec["schema"])
    if problems:
        first, messages = next(iter(problems.items()))
        raise ServiceError(
            "invalid_request",
            f"fromRun: the run's {first} cannot be applied: {messages[0]}",
            fields={"fromRun": [f"{first}: {messages[0]}"]},
        )
    return query_create(
        name=name,
        url=run.spec["url"],
        schema=run.spec["schema"],
        instruction=run.spec.get("instruction", ""),
        compile=compile,
        mcp_tool=mcp_tool,
        schedule=schedule,
    )


def query_update(*, query: SavedQuery, changes: dict) -> SavedQuery:
    if "name" in changes and changes["name"] != query.name:
        raise ServiceError(
            "invalid_request",
            "A saved query's name cannot change (its runs keep it); save a new query instead.",
            fields={"name": ["Cannot change."]},
        )
    if ("schema" in changes and changes["schema"] != query.schema) or changes.get("compile") is False:
        query.compiled = None  # rules of another schema, or no longer wanted
    for field in ("url", "schema", "instruction", "compile"):
        if field in changes:
            setattr(query, field, changes[field])
    if "mcpTool" in changes:
        query.mcp_tool = changes["mcpTool"]
    if "schedule" in changes:
        query.schedule = changes["schedule"]
    query.updated_at = timezone.now()
    with transaction.atomic():
        query.save(
            update_fields=["url", "schema", "instruction", "compile", "compiled", "mcp_tool", "schedule", "updated_at"]
        )
        if "schedule" in changes:
            schedule_rows.keep_in_step(query)
    return query


def query_schedule(*, query: SavedQuery, schedule: object) -> SavedQuery:
    """Set (or with None, stop) the query's schedule, checked as PATCH checks it; nothing else changes."""
    body = QuerySpecSerializer(data={"schedule": schedule}, partial=True)
    body.is_valid(raise_exception=True)
    return query_update(query=query, changes=body.validated_data)


def query_delete(*, query: SavedQuery) -> None:
    """The query goes, and its schedule; its runs stay, and keep its name."""
    with transaction.atomic():
        schedule_rows.forget(query.pk)
        query.delete()


def query_save(request: dict) -> SavedQuery:
    """A new saved query from POST /api/queries' body (or `query save`'s options), checked by QueryCreateSerializer:
    url, schema and instruction given, or fromRun, a past extract run to promote."""
    body = QueryCreateSerializer(data=request)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    flags = {
        "compile": data.get("compile", True),
        "mcp_tool": data.get("mcpTool", False),
        "schedule": data.get("schedule"),
    }
    if "fromRun" in data:
        return query_from_run(name=data["name"], run_id=str(data["fromRun"]), **flags)
    return query_create(
        name=data["name"], url=data["url"], schema=data["schema"], instruction=data.get("instruction", ""), **flags
    )


def query_replay(*, query: SavedQuery, overrides: dict) -> Run:
    """Queue one replay as an ordinary extract run linked by name; count it in the same transaction. overrides: the
    replay request's body, checked by QueryReplaySerializer (url, instruction, profile or storageStatePath, options
    for this run only)."""
    asked = QueryReplaySerializer(data=overrides)
    asked.is_valid(raise_exception=True)
    overrides = asked.validated_data
    spec = query.replay_spec(url=overrides.get("url"), instruction=overrides.get("instruction"))
    spec.update({key: overrides[key] for key in ("profile", "storageStatePath", "options") if key in overrides})
    with transaction.atomic():
        run = run_submit(spec=spec, query=query.name, query_since=query.created_at)
        query.count_replay()
    return run


def keep_compiled(*, run: Run, compiled: dict, **_) -> None:
    """runs.signals.answer_compiled: a replay's answer compiled into rules; the query it replayed keeps them, unless
    it opted out, or it changed (another schema, or a new query under the old name) since the run was submitted."""
    if not run.query:
        return
    query = SavedQuery.objects.filter(name=run.query, created_at__lte=run.created_at).first()
    if query is None or not query.compile or query.schema != run.spec.get("schema"):
        return
    SavedQuery.objects.filter(pk=query.pk).update(compiled=compiled)


def query_compile(*, query: SavedQuery, request: object) -> SavedQuery:
    """Compile a run's model answer into the query's rules, verified on the page the run archived: the run named by
    `fromRun` (QueryCompileSerializer), else the query's last successful replay that the model answered."""
    body = QueryCompileSerializer(data=request)
    body.is_valid(raise_exception=True)
    if "fromRun" in body.validated_data:
        run_id = str(body.validated_data["fromRun"])
        run = Run.objects.filter(pk=run_id, kind=Run.Kind.EXTRACT, status=Run.Status.SUCCEEDED).first()
        if run is None:
            raise ServiceError("not_found", f"There is no successful extract run {run_id}.", status_code=404)
    else:
        run = (
            Run.objects.filter(
                query=query.name,
                status=Run.Status.SUCCEEDED,
                extracted_by__in=["model", "mixed"],
                created_at__gte=query.created_at,
            )
            .order_by("-finished_at")
            .first()
        )
        if run is None:
            raise ServiceError(
                "no_model_run",
                f"Query {query.name!r} has no successful replay answered by the model to compile; replay it first.",
                status_code=409,
            )
    if run.spec.get("schema") != query.schema:
        raise ServiceError(
            "schema_differs", f"Run {run.pk} extracted with another schema than {query.name!r} has.", status_code=409
        )
    step = run.steps.filter(page__isnull=False).order_by("-index").first()
    page = archive.read_page(step) if step is not None else None
    if page is None:
        raise ServiceError(
            "no_archived_page", f"Run {run.pk} has no archived page (none was kept, or it was pruned).", status_code=409
        )
    compiled = compile_answer(page.html, page.url, query.schema, run.result)
    if compiled.rule_count == 0:
        raise ServiceError(
            "nothing_compiled", f"No field of run {run.pk}'s answer could be found again in its page.", status_code=409
        )
    query.compiled = {
        "schema": compiled.schema,
        "fields": compiled.fields,
        "fromRun": str(run.pk),
        "verifiedAt": timezone.now().isoformat(),
    }
    query.save(update_fields=["compiled"])
    return query


def query_uncompile(*, query: SavedQuery) -> None:
    """Drop the compiled rules: replays go to the model again (and compile anew unless compile is off)."""
    query.compiled = None
    query.save(update_fields=["compiled"])
