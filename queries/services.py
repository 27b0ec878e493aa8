"""Saved queries: create, promote from a run, edit, delete, replay."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from queries.models import SavedQuery
from queries.serializers import QueryCreateSerializer, QueryReplaySerializer
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


def query_create(*, name: str, url: str, schema: dict, instruction: str = "") -> SavedQuery:
    try:
        with transaction.atomic():
            return SavedQuery.objects.create(name=name, url=url, schema=schema, instruction=instruction)
    except IntegrityError:
        raise _name_taken(name) from None


def query_from_run(*, name: str, run_id: str) -> SavedQuery:
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
        name=name, url=run.spec["url"], schema=run.spec["schema"], instruction=run.spec.get("instruction", "")
    )


def query_update(*, query: SavedQuery, changes: dict) -> SavedQuery:
    if "name" in changes and changes["name"] != query.name:
        raise ServiceError(
            "invalid_request",
            "A saved query's name cannot change (its runs keep it); save a new query instead.",
            fields={"name": ["Cannot change."]},
        )
    for field in ("url", "schema", "instruction"):
        if field in changes:
            setattr(query, field, changes[field])
    query.updated_at = timezone.now()
    query.save(update_fields=["url", "schema", "instruction", "updated_at"])
    return query


def query_delete(*, query: SavedQuery) -> None:
    """The query goes; its runs stay, and keep its name."""
    query.delete()


def query_save(request: dict) -> SavedQuery:
    """A new saved query from POST /api/queries' body (or `query save`'s options), checked by QueryCreateSerializer:
    url, schema and instruction given, or fromRun, a past extract run to promote."""
    body = QueryCreateSerializer(data=request)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    if "fromRun" in data:
        return query_from_run(name=data["name"], run_id=str(data["fromRun"]))
    return query_create(
        name=data["name"], url=data["url"], schema=data["schema"], instruction=data.get("instruction", "")
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
