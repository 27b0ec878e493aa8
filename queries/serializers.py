from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from queries.models import SavedQuery
from queries.schedule import BadSchedule, check_rule
from queries.schedule_rows import next_run_at
from runs.engine.extract_rules import rule_problems
from runs.serializers import (
    CompiledRulesSerializer,
    JsonSchemaField,
    OptionsSerializer,
    PageUrlField,
    StorageStatePathField,
    check_json_schema,
    validate_target_url,
)
from service.kernel.serializers import StrictSerializer, document_shape, name_field, utc_text


def validate_schema(value: object) -> object:
    """A JSON schema whose extraction rules can be applied; rule problems are named by their path in the schema."""
    problem = check_json_schema(value, needs="A saved query needs")
    if problem:
        raise serializers.ValidationError(problem)
    rules = rule_problems(value)
    if rules:
        raise serializers.ValidationError({path: [message] for path, message in rules.items()})
    return value


COMPILE_HELP = "Compile a replay's model answer into rules that later replays run first (default true; false opts out)."


@extend_schema_field(CompiledRulesSerializer(allow_null=True))
class CompiledField(serializers.JSONField):
    pass


MCP_TOOL_HELP = "Offer the query to MCP clients as a tool of its own, typed by its schema (default false)."


SCHEDULE_HELP = (
    'Replay by itself: {"cron": "<5 fields>", "timezone": "Europe/Paris"} (timezone defaults to UTC) or '
    '{"everySeconds": N} (N at least SCHEDULE_MIN_SECONDS); null: only when asked. A due time while a replay of the '
    "query is still queued or running is skipped (and counted in skippedTicks)."
)


class CronScheduleSerializer(serializers.Serializer):
    cron = serializers.CharField(help_text="minute hour day-of-month month day-of-week, as cron reads them")
    timezone = serializers.CharField(required=False, help_text="An IANA time zone (default UTC).")


class IntervalScheduleSerializer(serializers.Serializer):
    everySeconds = serializers.IntegerField(min_value=1)


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="QuerySchedule",
        serializers=[CronScheduleSerializer, IntervalScheduleSerializer],
        resource_type_field_name=None,
        many=False,
    )
)
class ScheduleField(serializers.JSONField):
    """A schedule as queries/schedule.py reads it, checked against SCHEDULE_MIN_SECONDS."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("help_text", SCHEDULE_HELP)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        rule = super().to_internal_value(data)
        if rule is None:
            return None
        try:
            return check_rule(rule, min_seconds=settings.SCHEDULE_MIN_SECONDS)
        except BadSchedule as problem:
            raise serializers.ValidationError(str(problem)) from None


class SavedQuerySerializer(serializers.ModelSerializer):
    mcpTool = serializers.BooleanField(source="mcp_tool", help_text=MCP_TOOL_HELP)
    compiled = CompiledField(
        allow_null=True, help_text="The rules a replay's answer compiled into; null until one did (or compile is off)."
    )
    schedule = ScheduleField(read_only=True)
    nextRunAt = serializers.SerializerMethodField(
        help_text="When the schedule replays the query next; null without one."
    )
    skippedTicks = serializers.IntegerField(
        source="skipped_ticks", help_text="Due times skipped because a replay was still queued or running."
    )
    runCount = serializers.IntegerField(source="run_count")
    lastRunAt = serializers.DateTimeField(source="last_run_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = SavedQuery
        fields = [
            "name",
            "url",
            "schema",
            "instruction",
            "compile",
            "compiled",
            "mcpTool",
            "schedule",
            "nextRunAt",
            "skippedTicks",
            "runCount",
            "lastRunAt",
            "createdAt",
            "updatedAt",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_nextRunAt(self, query: SavedQuery) -> str | None:
        return utc_text(next_run_at(query))


class QuerySpecSerializer(StrictSerializer):
    """The editable part of a saved query (PUT needs url and schema; PATCH any of them)."""

    name = name_field("saved query", required=False, help_text="Names do not change; if given, the same.")
    url = PageUrlField(validators=[validate_target_url])
    schema = JsonSchemaField(validators=[validate_schema])
    instruction = serializers.CharField(max_length=10_000, allow_blank=True, required=False)
    compile = serializers.BooleanField(required=False, help_text=COMPILE_HELP)
    mcpTool = serializers.BooleanField(required=False, help_text=MCP_TOOL_HELP)
    schedule = ScheduleField(required=False)


class QueryCreateSerializer(StrictSerializer):
    name = name_field("saved query")
    url = PageUrlField(validators=[validate_target_url], required=False)
    schema = JsonSchemaField(validators=[validate_schema], required=False)
    instruction = serializers.CharField(max_length=10_000, allow_blank=True, required=False)
    compile = serializers.BooleanField(required=False, help_text=COMPILE_HELP)
    mcpTool = serializers.BooleanField(required=False, help_text=MCP_TOOL_HELP)
    schedule = ScheduleField(required=False)
    fromRun = serializers.UUIDField(
        required=False, help_text="Promote a past extract run: copies its url, schema, instruction."
    )

    def validate(self, attrs: dict) -> dict:
        if "fromRun" in attrs:
            extra = sorted({"url", "schema", "instruction"} & attrs.keys())
            if extra:
                raise serializers.ValidationError(
                    {name: ["Give either fromRun or the spec, not both."] for name in extra}
                )
            return attrs
        missing = {
            name: ["This field is required (or give fromRun)."] for name in ("url", "schema") if name not in attrs
        }
        if missing:
            raise serializers.ValidationError(missing)
        return attrs


# The body of POST /api/queries in the OpenAPI document: a spec, or a run to promote (never both).
QUERY_CREATE = PolymorphicProxySerializer(
    component_name="QueryCreate",
    serializers=[
        document_shape(QueryCreateSerializer, "QueryFromSpec", drop={"fromRun"}, require=("url", "schema")),
        document_shape(
            QueryCreateSerializer,
            "QueryFromRun",
            keep={"name", "fromRun", "compile", "mcpTool", "schedule"},
            require=("fromRun",),
        ),
    ],
    resource_type_field_name=None,
)


class QueryCompileSerializer(StrictSerializer):
    """POST /api/queries/:name/compile."""

    fromRun = serializers.UUIDField(
        required=False, help_text="Compile this run's answer (default: the query's last successful model replay)."
    )


class QueryReplaySerializer(StrictSerializer):
    """One replay's overrides; none of them changes the stored query."""

    url = PageUrlField(validators=[validate_target_url], required=False)
    instruction = serializers.CharField(max_length=10_000, allow_blank=True, required=False)
    profile = name_field("profile", required=False)
    storageStatePath = StorageStatePathField()
    options = OptionsSerializer(required=False)
