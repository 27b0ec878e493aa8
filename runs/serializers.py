"""Validation of run specs and the JSON shapes of runs (DESIGN.md section 4)."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from jsonschema import SchemaError, validators
from rest_framework import serializers

from profiles.credentials import CredentialStore
from profiles.store import NAME_PATTERN, StateFileError, profile_path, resolve_storage_state_path
from runs.engine.extract_rules import is_rule_schema
from runs.engine.netpolicy import Refused, literal_private_host
from runs.models import Batch, Run, Step
from runs.services import network_policy, screenshot_url
from service.errors import ServiceError
from service.serializers import StrictSerializer

URL_MAX_LENGTH = 2048


def validate_url_shape(value: str) -> str:
    """An http(s) URL with a host; where it points is the network policy's business."""
    if len(value) > URL_MAX_LENGTH:
        raise serializers.ValidationError(f"The URL is longer than {URL_MAX_LENGTH} characters.")
    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in {"http", "https"}:
        raise serializers.ValidationError("Only http:// and https:// URLs can be fetched.")
    if not parts.hostname:
        raise serializers.ValidationError("The URL has no host.")
    return value.strip()


def validate_target_url(value: str) -> str:
    value = validate_url_shape(value)
    parts = urlsplit(value)
    if literal_private_host(parts.hostname):
        # Names are resolved when the run connects (the network guard); literals can be refused right away.
        try:
            network_policy().check_url(value.strip())
        except Refused as refused:
            raise serializers.ValidationError(str(refused)) from None
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
                f"{'Agent runs need' if kind == 'agent' else 'This extract schema needs'} a model: set MODEL_PROVIDER "
                "(openai or anthropic), MODEL_NAME and OPENAI_API_KEY (and OPENAI_BASE_URL for compatible "
                "servers) or ANTHROPIC_API_KEY. Extraction without a model needs x-selector or x-source on "
                "every field.",
            )
        if "options" not in attrs:
            attrs["options"] = self.fields["options"].run_validation({})
        return attrs


class BatchSubmitSerializer(StrictSerializer):
    runs = serializers.ListField(child=serializers.JSONField(), min_length=1)

    def validate_runs_count(self, specs: list) -> None:
        if len(specs) > settings.BATCH_MAX_RUNS:
            raise serializers.ValidationError(
                f"A batch holds at most {settings.BATCH_MAX_RUNS} runs (BATCH_MAX_RUNS); split it."
            )

    def validate_runs(self, specs: list) -> list[dict]:
        """Every spec is checked before anything is created; errors are reported as runs.<index>.<field>."""
        self.validate_runs_count(specs)
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
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
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
            "drift",
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


class FetchRequestSerializer(StrictSerializer):
    # Refused addresses are answered by the fetch itself (400 url_not_allowed), not as a validation error.
    url = serializers.CharField(max_length=URL_MAX_LENGTH + 1, validators=[validate_url_shape])
    mainContent = serializers.BooleanField(default=True)
    render = serializers.ChoiceField(
        choices=["auto", "browser", "http"],
        default="auto",
        help_text="http: plain HTTP only; browser: Chromium; auto: plain HTTP, then Chromium for JavaScript shells.",
    )
    timeoutMs = serializers.IntegerField(min_value=1000, default=30_000)
    waitFor = serializers.CharField(max_length=500, required=False, allow_blank=False)
    profile = serializers.RegexField(NAME_PATTERN, required=False)
    storageStatePath = serializers.CharField(required=False, max_length=4096, validators=[validate_storage_state_path])
    persist = serializers.BooleanField(default=False, help_text="Also keep it as a fetch run (in history).")

    def validate_timeoutMs(self, value: int) -> int:
        if value > settings.RUN_TIMEOUT_MAX_MS:
            raise serializers.ValidationError(f"At most {settings.RUN_TIMEOUT_MAX_MS} (RUN_TIMEOUT_MAX_MS).")
        return value

    def validate(self, attrs: dict) -> dict:
        if "profile" in attrs and "storageStatePath" in attrs:
            raise serializers.ValidationError({"profile": ["Give either profile or storageStatePath, not both."]})
        if "profile" in attrs and not profile_path(settings.DATA_DIR, attrs["profile"]).is_file():
            raise serializers.ValidationError({"profile": [f"There is no profile named {attrs['profile']!r}."]})
        return attrs

    def run_spec(self) -> dict:
        """The same fetch as a run spec, for persist: true."""
        data = self.validated_data
        options = {"mainContent": data["mainContent"], "render": data["render"], "timeoutMs": data["timeoutMs"]}
        if "waitFor" in data:
            options["waitFor"] = data["waitFor"]
        spec = {"kind": "fetch", "url": data["url"], "options": options}
        spec.update({key: data[key] for key in ("profile", "storageStatePath") if key in data})
        checked = RunSpecSerializer(data=spec)
        checked.is_valid(raise_exception=True)
        return checked.validated_data


class FetchResponseSerializer(serializers.Serializer):
    url = serializers.CharField()
    finalUrl = serializers.CharField()
    status = serializers.IntegerField()
    title = serializers.CharField()
    markdown = serializers.CharField()
    links = serializers.ListField(child=serializers.CharField())
    render = serializers.ChoiceField(choices=["browser", "http"], help_text="How the page was loaded.")
    runId = serializers.UUIDField(required=False, help_text="With persist: true, the run that keeps it.")


class SearchRequestSerializer(StrictSerializer):
    query = serializers.CharField(max_length=1000)
    limit = serializers.IntegerField(min_value=1, max_value=50, default=10)
    fetch = serializers.BooleanField(default=False, help_text="Also fetch every result as Markdown, in parallel.")
    mainContent = serializers.BooleanField(default=True)
    categories = serializers.CharField(max_length=200, required=False, help_text="SearXNG categories, e.g. news")
    language = serializers.CharField(max_length=20, required=False, help_text="e.g. en, de-CH")
    timeRange = serializers.ChoiceField(choices=["day", "week", "month", "year"], required=False)
    time_range = serializers.ChoiceField(
        choices=["day", "week", "month", "year"], required=False, help_text="SearXNG's own name for timeRange."
    )


class SearchResultSerializer(serializers.Serializer):
    title = serializers.CharField()
    url = serializers.CharField()
    snippet = serializers.CharField()
    engine = serializers.CharField()
    markdown = serializers.CharField(required=False, help_text="With fetch: true, when the page could be fetched.")
    error = serializers.DictField(required=False, help_text="With fetch: true, why the page could not be fetched.")


class SearchResponseSerializer(serializers.Serializer):
    results = SearchResultSerializer(many=True)
