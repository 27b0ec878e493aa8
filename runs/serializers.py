"""Validation of run specs and the JSON shapes of runs (DESIGN.md section 4)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from jsonschema import SchemaError, validators
from rest_framework import serializers

from profiles.credentials import CredentialStore
from profiles.store import NAME_PATTERN, StateFileError, profile_path, resolve_storage_state_path
from runs.engine.extract_rules import is_rule_schema
from runs.engine.netpolicy import literal_private_host
from runs.models import Batch, Run, Step
from runs.services import screenshot_url
from service.errors import ServiceError
from service.serializers import StrictSerializer

URL_MAX_LENGTH = 2048


def validate_target_url(value: str) -> str:
    if len(value) > URL_MAX_LENGTH:
        raise serializers.ValidationError(f"The URL is longer than {URL_MAX_LENGTH} characters.")
    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in {"http", "https"}:
        raise serializers.ValidationError("Only http:// and https:// URLs can be fetched.")
    if not parts.hostname:
        raise serializers.ValidationError("The URL has no host.")
    if not settings.ALLOW_PRIVATE_NETWORKS and literal_private_host(parts.hostname):
        raise serializers.ValidationError(
            "Private and loopback addresses are refused; set ALLOW_PRIVATE_NETWORKS=true to allow them."
        )
    return value.strip()


def validate_storage_state_path(value: str) -> None:
    try:
        resolve_storage_state_path(value, settings.DATA_DIR)
    except StateFileError as error:
        raise serializers.ValidationError(str(error)) from None


def check_json_schema(schema: object) -> str | None:
    """Why a value is not a usable JSON schema document, or None."""
    if not isinstance(schema, dict):
        return "An extract run needs a JSON schema object."
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as error:
        return f"This is not a valid JSON schema: {error.message}"
    return None


class OptionsSerializer(StrictSerializer):
    mainContent = serializers.BooleanField(default=True)
    render = serializers.ChoiceField(choices=["auto", "browser", "http"], default="auto")
    timeoutMs = serializers.IntegerField(min_value=1000, default=60_000)
    maxSteps = serializers.IntegerField(min_value=1, max_value=200, default=25)
    screenshots = serializers.BooleanField(default=True)
    waitFor = serializers.CharField(max_length=500, required=False, allow_null=True, allow_blank=False)
    model = serializers.CharField(max_length=200, required=False, help_text="Model name for this run only.")
    outputSchema = serializers.JSONField(required=False, help_text="Agent runs: a JSON schema for the output.")

    def validate_outputSchema(self, value: object) -> object:
        problem = check_json_schema(value)
        if problem:
            raise serializers.ValidationError(problem.replace("An extract run needs", "outputSchema must be"))
        return value

    def validate_timeoutMs(self, value: int) -> int:
        if value > settings.RUN_TIMEOUT_MAX_MS:
            raise serializers.ValidationError(f"At most {settings.RUN_TIMEOUT_MAX_MS} (RUN_TIMEOUT_MAX_MS).")
        return value


KIND_FIELDS = {
    "fetch": set(),
    "extract": {"schema", "instruction"},
    "agent": {"goal", "cred", "saveProfile"},
}


class RunSpecSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=Run.Kind.choices)
    url = serializers.CharField(max_length=URL_MAX_LENGTH + 1, validators=[validate_target_url])
    schema = serializers.JSONField(required=False)
    instruction = serializers.CharField(required=False, max_length=10_000, allow_blank=True)
    goal = serializers.CharField(required=False, max_length=10_000)
    cred = serializers.RegexField(NAME_PATTERN, required=False)
    saveProfile = serializers.RegexField(NAME_PATTERN, required=False)
    profile = serializers.RegexField(NAME_PATTERN, required=False)
    storageStatePath = serializers.CharField(required=False, max_length=4096, validators=[validate_storage_state_path])
    options = OptionsSerializer(required=False)

    def validate(self, attrs: dict) -> dict:
        kind = attrs["kind"]
        errors: dict[str, list[str]] = {}
        for other_kind, names in KIND_FIELDS.items():
            if other_kind == kind:
                continue
            for name in names - KIND_FIELDS[kind]:
                if name in attrs:
                    errors[name] = [f"Only {other_kind} runs take {name}."]
        if kind == "extract":
            schema_problem = check_json_schema(attrs.get("schema"))
            if schema_problem:
                errors["schema"] = [schema_problem]
        if kind == "agent" and not attrs.get("goal"):
            errors["goal"] = ["An agent run needs a goal."]
        if "cred" in attrs and not CredentialStore(settings.DATA_DIR).exists(attrs["cred"]):
            errors["cred"] = [f"There is no credential named {attrs['cred']!r}; create it with `manage.py cred set`."]
        if "profile" in attrs and "storageStatePath" in attrs:
            errors["profile"] = ["Give either profile or storageStatePath, not both."]
        elif "profile" in attrs and not profile_path(settings.DATA_DIR, attrs["profile"]).is_file():
            errors["profile"] = [f"There is no profile named {attrs['profile']!r}."]
        if errors:
            raise serializers.ValidationError(errors)
        needs_model = kind == "agent" or (kind == "extract" and not is_rule_schema(attrs["schema"]))
        if needs_model and not settings.MODEL_PROVIDER:
            raise ServiceError(
                "model_not_configured",
                f"{'Agent runs' if kind == 'agent' else 'This extract schema'} need a model: set MODEL_PROVIDER "
                "(openai or anthropic), MODEL_NAME and OPENAI_API_KEY (and OPENAI_BASE_URL for compatible "
                "servers) or ANTHROPIC_API_KEY. Extraction without a model needs x-selector or x-source on "
                "every field.",
            )
        if "options" not in attrs:
            attrs["options"] = self.fields["options"].run_validation({})
        return attrs


BATCH_MAX_RUNS = 5000


class BatchSubmitSerializer(StrictSerializer):
    runs = serializers.ListField(child=serializers.JSONField(), min_length=1, max_length=BATCH_MAX_RUNS)

    def validate_runs(self, specs: list) -> list[dict]:
        """Every spec is checked before anything is created; errors are reported as runs.<index>.<field>."""
        valid: list[dict] = []
        errors: dict[str, object] = {}
        # One serializer validates every spec: building DRF's field tree per spec costs ~1 ms each.
        spec_serializer = RunSpecSerializer()
        for index, raw in enumerate(specs):
            try:
                valid.append(spec_serializer.run_validation(raw))
            except serializers.ValidationError as error:
                errors[str(index)] = error.detail
            except ServiceError as error:
                errors[str(index)] = [str(error.detail)]
        if errors:
            raise serializers.ValidationError(errors)
        return valid


class BatchCreatedSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    runs = serializers.ListField(child=serializers.UUIDField())


class BatchSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="created_at")
    runCount = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()

    class Meta:
        model = Batch
        fields = ["id", "createdAt", "runCount", "counts"]
        read_only_fields = fields

    def get_counts(self, batch: Batch) -> dict[str, int]:
        return batch.counts_by_status()

    def get_runCount(self, batch: Batch) -> int:
        return sum(self.get_counts(batch).values())


class RunSerializer(serializers.ModelSerializer):
    stepCount = serializers.IntegerField(source="step_count", read_only=True, default=0)
    createdAt = serializers.DateTimeField(source="created_at")
    startedAt = serializers.DateTimeField(source="started_at")
    finishedAt = serializers.DateTimeField(source="finished_at")
    batch = serializers.UUIDField(source="batch_id", allow_null=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "kind",
            "status",
            "url",
            "spec",
            "query",
            "batch",
            "attempts",
            "result",
            "error",
            "usage",
            "stepCount",
            "createdAt",
            "startedAt",
            "finishedAt",
        ]
        read_only_fields = fields


class StepSerializer(serializers.ModelSerializer):
    screenshot = serializers.SerializerMethodField()
    durationMs = serializers.IntegerField(source="duration_ms")

    class Meta:
        model = Step
        fields = ["index", "action", "url", "observation", "screenshot", "at", "durationMs"]
        read_only_fields = fields

    def get_screenshot(self, step: Step) -> str | None:
        return screenshot_url(step.run_id, step.index) if step.screenshot else None


class RunDetailSerializer(RunSerializer):
    steps = StepSerializer(many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "steps"]
        read_only_fields = fields


class RunFilterSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Run.Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Run.Status.choices, required=False)
    query = serializers.CharField(required=False, max_length=64)
    batch = serializers.UUIDField(required=False)
    since = serializers.DateTimeField(required=False, help_text="createdAt at or after this ISO 8601 time")
    until = serializers.DateTimeField(required=False, help_text="createdAt before this ISO 8601 time")


class ExportParamsSerializer(RunFilterSerializer):
    format = serializers.ChoiceField(
        choices=["json", "csv"], error_messages={"required": "Choose format=json or format=csv."}
    )
