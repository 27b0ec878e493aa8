"""Validation of run specs and the JSON shapes of runs (DESIGN.md section 4)."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from django.conf import settings
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from jsonschema import SchemaError, validators
from rest_framework import serializers

from profiles.credentials import CredentialStore
from profiles.store import StateFileError, check_storage_state_file, profile_path
from runs.archive import describe_source, page_url, source_step
from runs.engine.crawl_rules import MAX_URL_CHARS
from runs.engine.extract_rules import is_rule_schema, rule_problems
from runs.engine.netpolicy import Refused, literal_private_host, parse_ipv4
from runs.engine.page_type_weights import TYPES as PAGE_TYPES
from runs.models import Batch, DeliveryAttempt, Run, Step, Webhook
from runs.resources import network_policy, screenshot_url
from service.kernel.errors import ServiceError
from service.kernel.serializers import StrictSerializer, UtcDateTimeField, document_shape, name_field, utc_text

URL_MAX_LENGTH = MAX_URL_CHARS  # a crawl skips the links longer than this (too_long)
# What a browser refuses in a host name (the WHATWG URL standard's forbidden domain code points, '%' aside: a host
# is checked after percent-decoding).
_FORBIDDEN_HOST_CHARACTERS = frozenset(" #/:<>?@[\\]^|\x7f") | {chr(code) for code in range(0x20)}


def validate_url_shape(value: str) -> str:
    """An http(s) URL that a browser can open: a valid host and port. Where it points is the network policy's
    business. Checked at submit, so a run never fails on its URL's syntax after it was queued."""
    value = value.strip()
    if len(value) > URL_MAX_LENGTH:
        raise serializers.ValidationError(f"The URL is longer than {URL_MAX_LENGTH} characters.")
    try:
        parts = urlsplit(value)
    except ValueError:  # "http://[::1/", "http://[zz]/"
        raise serializers.ValidationError(
            "The URL's host is not valid (an IPv6 address goes in brackets: http://[2001:db8::1]/)."
        ) from None
    if parts.scheme.lower() not in {"http", "https"}:
        raise serializers.ValidationError("Only http:// and https:// URLs can be fetched.")
    if not parts.hostname:
        raise serializers.ValidationError("The URL has no host.")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise serializers.ValidationError("The URL's port must be a number from 1 to 65535.")
    host = unquote(parts.hostname)
    if ":" not in host:  # IPv6 literals were checked by urlsplit
        if any(character in _FORBIDDEN_HOST_CHARACTERS for character in host):
            raise serializers.ValidationError("The URL's host contains a character a host name cannot have.")
        last = host.rstrip(".").rsplit(".", 1)[-1]
        ends_in_number = last.isdigit() or (last[:2] == "0x" and all(c in "0123456789abcdef" for c in last[2:]))
        if ends_in_number and parse_ipv4(host) is None:
            raise serializers.ValidationError("The URL's host ends in a number but is not a valid IPv4 address.")
    return value


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
    """Where the file lies and what it holds, checked like `profile import` checks a state (never echoed)."""
    try:
        check_storage_state_file(value, settings.DATA_DIR)
    except StateFileError as error:
        raise serializers.ValidationError(str(error)) from None


class StorageStatePathField(serializers.CharField):
    """A Playwright storage-state file in the data directory to start from (checked like `profile import` checks
    a state; never echoed)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "A Playwright storage-state file in the data directory (instead of profile).")
        super().__init__(required=False, max_length=4096, validators=[validate_storage_state_path], **kwargs)


def schema_rule_errors(schema: object, prefix: str = "schema") -> dict[str, list[str]]:
    """Extraction rules that could not be applied, by their dotted path (schema.properties.name.x-selector)."""
    return {f"{prefix}.{path}" if path else prefix: [problem] for path, problem in rule_problems(schema).items()}


def check_json_schema(schema: object, needs: str = "An extract run needs") -> str | None:
    """Why a value is not a usable JSON schema document, or None; needs: who says it needs one."""
    if not isinstance(schema, dict):
        return f"{needs} a JSON schema object."
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as error:
        return f"This is not a valid JSON schema: {error.message}"
    return None


@extend_schema_field({"type": "string", "format": "uri", "pattern": "^https?://"})
class PageUrlField(serializers.CharField):
    """The http(s) URL of a page (checked by the validators given); one character over URL_MAX_LENGTH is read, to
    say that it is too long."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", "An http:// or https:// URL.")
        super().__init__(max_length=URL_MAX_LENGTH + 1, **kwargs)


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JsonSchemaField(serializers.JSONField):
    """A JSON schema document (check_json_schema: an object)."""


class TimeoutMsField(serializers.IntegerField):
    """Milliseconds a page or a run may take: at least 1000, at most RUN_TIMEOUT_MAX_MS (read when checked)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=1000, validators=[validate_timeout_ms], **kwargs)


class TimeoutMsSchema(OpenApiSerializerFieldExtension):
    """The ceiling is configuration: the document says the one this service runs with."""

    target_class = "runs.serializers.TimeoutMsField"

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "integer", "minimum": 1000, "maximum": settings.RUN_TIMEOUT_MAX_MS}


def validate_timeout_ms(value: int) -> int:
    if value > settings.RUN_TIMEOUT_MAX_MS:
        raise serializers.ValidationError(f"At most {settings.RUN_TIMEOUT_MAX_MS} (RUN_TIMEOUT_MAX_MS).")
    return value


def state_errors(attrs: dict) -> dict[str, list[str]]:
    """What is wrong with the stored state a page starts from: profile or storageStatePath, not both; a profile
    that exists (the file itself was checked by its field)."""
    if "profile" in attrs and "storageStatePath" in attrs:
        return {"profile": ["Give either profile or storageStatePath, not both."]}
    if "profile" in attrs and not profile_path(settings.DATA_DIR, attrs["profile"]).is_file():
        return {"profile": [f"There is no profile named {attrs['profile']!r}."]}
    return {}


def source_errors(source: dict, url: str) -> dict[str, list[str]]:
    """A re-extraction reads a page that is in the archive, and keeps its URL."""
    step = source_step(source)
    if step is None:
        return {"source": [f"There is no archived page at {describe_source(source)} (none kept, or pruned)."]}
    if url != step.page["url"]:
        return {"url": [f"A re-extraction keeps its archived page's URL: {step.page['url']}."]}
    return {}


class OptionsSerializer(StrictSerializer):
    mainContent = serializers.BooleanField(
        default=True, help_text="Only the main content (no navigation, footers, ads); false: the whole page."
    )
    render = serializers.ChoiceField(choices=["auto", "browser", "http"], default="auto")
    timeoutMs = TimeoutMsField(default=60_000)
    maxSteps = serializers.IntegerField(min_value=1, max_value=200, default=25)
    screenshots = serializers.BooleanField(default=True)
    waitFor = serializers.CharField(
        max_length=500,
        required=False,
        allow_null=True,
        allow_blank=False,
        help_text="A CSS selector to wait for before the page is read (browser only).",
    )
    model = serializers.CharField(max_length=200, required=False, help_text="Model name for this run only.")
    outputSchema = JsonSchemaField(required=False, help_text="Agent runs: a JSON schema for the output.")

    def validate_outputSchema(self, value: object) -> object:
        problem = check_json_schema(value, needs="outputSchema must be")
        if problem:
            raise serializers.ValidationError(problem)
        return value


KIND_FIELDS = {
    "fetch": set(),
    "extract": {"schema", "instruction", "source", "compiled", "compile"},
    "agent": {"goal", "cred", "saveProfile", "overwriteProfile"},
    "crawl": {"crawl", "schema", "instruction"},
}


class CrawlOptionsSerializer(StrictSerializer):
    """Crawl runs: which pages, how many, how politely. Each page becomes a run of its own (`parent`): a fetch run,
    or an extract run when the crawl has a schema."""

    maxPages = serializers.IntegerField(min_value=1, max_value=10_000, default=100, help_text="Pages fetched at most.")
    maxDepth = serializers.IntegerField(min_value=0, max_value=50, default=3, help_text="Links away from url.")
    include = serializers.ListField(
        child=serializers.CharField(max_length=500),
        max_length=50,
        default=list,
        help_text="Globs over the path (and ?query) a page must match, e.g. /docs/**; none: every page in scope.",
    )
    exclude = serializers.ListField(
        child=serializers.CharField(max_length=500),
        max_length=50,
        default=list,
        help_text="Globs over the path (and ?query) of pages never fetched, e.g. **/print/**.",
    )
    scope = serializers.ChoiceField(
        choices=["host", "domain", "path"],
        default="host",
        help_text="host: url's host; domain: its last two labels and their subdomains; path: url's host under its "
        "path.",
    )
    sitemap = serializers.ChoiceField(
        choices=["auto", "only", "off"],
        default="auto",
        help_text="auto: also the pages of /sitemap.xml and robots.txt's sitemaps; only: those pages and url (links "
        "not followed); off.",
    )
    respectRobots = serializers.BooleanField(default=True, help_text="Honour robots.txt (Disallow, Crawl-delay).")
    perHostConcurrency = serializers.IntegerField(min_value=1, max_value=16, default=2)
    delayMs = serializers.IntegerField(
        min_value=0, max_value=60_000, default=0, help_text="Between two pages of a host."
    )
    render = serializers.ChoiceField(
        choices=["auto", "browser", "http"],  # in the order of the run options' render: one enum in the schema
        default="auto",
        help_text="How each page is loaded. auto: plain HTTP, and Chromium for a page that is a JavaScript shell; "
        "http: plain HTTP only (no screenshot); browser: Chromium, with a screenshot per page.",
    )


class ArchiveSourceSerializer(StrictSerializer):
    """Re-extraction: the archived page an extract run reads instead of the network (POST /api/runs/:id/reextract
    fills it in)."""

    archivedRun = serializers.UUIDField(help_text="The run whose archived page is read.")
    step = serializers.IntegerField(min_value=0, help_text="The step of that run that loaded the page.")

    def validate_archivedRun(self, value) -> str:
        return str(value)  # kept in the run's spec, which is JSON


class CompiledRulesSerializer(StrictSerializer):
    """A saved query's compiled rules (runs/engine/compile.py): the schema with a rule on each leaf that compiled,
    and per leaf path who fills it."""

    schema = JsonSchemaField(help_text="The query's schema with x-selector / x-source rules on compiled leaves.")
    fields = serializers.DictField(
        child=serializers.ChoiceField(choices=["rule", "model"]), help_text="Per leaf path: rule or model."
    )
    render = serializers.ChoiceField(
        choices=["browser", "http"],
        required=False,
        help_text="http: the rules held on the page as plain HTTP serves it; replays read it without a browser.",
    )
    # Kept as given (JSON, in the run's spec): where the rules came from, for people reading the run.
    fromRun = serializers.CharField(required=False, max_length=64, help_text="The run whose answer was compiled.")
    verifiedAt = serializers.CharField(
        required=False, max_length=64, help_text="When the rules reproduced that answer (ISO 8601)."
    )

    def validate_schema(self, value: object) -> object:
        problems = rule_problems(value)
        if problems:
            raise serializers.ValidationError({path: [problem] for path, problem in problems.items()})
        return value


class RunSpecSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=Run.Kind.choices)
    url = PageUrlField(validators=[validate_target_url])
    schema = JsonSchemaField(
        required=False, help_text="Extract runs: a JSON schema for the result; crawl runs: each page's (extract pages)."
    )
    instruction = serializers.CharField(
        required=False,
        max_length=10_000,
        allow_blank=True,
        help_text="Extract runs (and a crawl's extract pages): what to extract, in plain words.",
    )
    goal = serializers.CharField(
        required=False, max_length=10_000, help_text="Agent runs: what the agent should achieve or find out."
    )
    cred = name_field("credential", required=False)
    saveProfile = name_field(
        "profile", required=False, help_text="Agent runs: save the browser session as this profile at the end."
    )
    overwriteProfile = serializers.BooleanField(
        required=False, help_text="Replace the profile named by saveProfile if it exists (else the run is refused)."
    )
    profile = name_field("profile", required=False, help_text="Start from this stored login profile.")
    storageStatePath = StorageStatePathField()
    options = OptionsSerializer(required=False)
    source = ArchiveSourceSerializer(
        required=False, help_text="Extract runs: read this archived page instead of loading url (no request is made)."
    )
    compiled = CompiledRulesSerializer(
        required=False, help_text="Extract runs: rules tried before the model (a saved query's replay passes them)."
    )
    compile = serializers.BooleanField(
        required=False, help_text="Extract runs: compile an answer that came from the model into rules."
    )
    crawl = CrawlOptionsSerializer(required=False, help_text="Crawl runs: which pages, how many, how politely.")

    def validate(self, attrs: dict) -> dict:
        kind = attrs["kind"]
        if kind == "crawl" and "crawl" not in attrs:
            attrs["crawl"] = CrawlOptionsSerializer().to_internal_value({})
        errors: dict[str, list[str]] = {}
        for name in set().union(*KIND_FIELDS.values()) - KIND_FIELDS[kind]:
            if name in attrs:
                takers = " or ".join(other for other, names in KIND_FIELDS.items() if name in names)
                errors[name] = [f"Only {takers} runs take {name}."]
        if kind == "extract" or (kind == "crawl" and "schema" in attrs):
            schema_problem = check_json_schema(attrs.get("schema"))
            if schema_problem:
                errors["schema"] = [schema_problem]
            else:
                errors.update(schema_rule_errors(attrs["schema"]))
        if kind == "agent" and not attrs.get("goal"):
            errors["goal"] = ["An agent run needs a goal."]
        if "cred" in attrs and not CredentialStore(settings.DATA_DIR).exists(attrs["cred"]):
            errors["cred"] = [f"There is no credential named {attrs['cred']!r}; create it with `manage.py cred set`."]
        errors.update(state_errors(attrs))
        if "source" in attrs:
            errors.update(source_errors(attrs["source"], attrs["url"]))
        if "overwriteProfile" in attrs and "saveProfile" not in attrs:
            errors["overwriteProfile"] = ["overwriteProfile goes with saveProfile."]
        elif (
            "saveProfile" in attrs
            and not attrs.get("overwriteProfile")
            and profile_path(settings.DATA_DIR, attrs["saveProfile"]).exists()
        ):
            errors["saveProfile"] = [
                f"A profile named {attrs['saveProfile']!r} exists; give overwriteProfile: true to replace it."
            ]
        if errors:
            raise serializers.ValidationError(errors)
        needs_model = kind == "agent" or ("schema" in attrs and not is_rule_schema(attrs["schema"]))
        if needs_model and not settings.MODEL_PROVIDER:
            configure = (
                "set MODEL_PROVIDER (openai or anthropic), MODEL_NAME and OPENAI_API_KEY (and OPENAI_BASE_URL for "
                "compatible servers) or ANTHROPIC_API_KEY."
            )
            if kind == "agent":
                raise ServiceError("model_not_configured", f"Agent runs need a model: {configure}")
            raise ServiceError(
                "model_not_configured",
                f"This extract schema needs a model: {configure} Extraction without a model needs x-selector or "
                "x-source on every field.",
            )
        if "options" not in attrs:
            attrs["options"] = self.fields["options"].run_validation({})
        return attrs


# What each kind of run needs besides kind and url (RunSpecSerializer.validate says so too).
KIND_REQUIRED = {"fetch": (), "extract": ("schema",), "agent": ("goal",), "crawl": ()}


def kind_spec_shape(kind: str) -> type[RunSpecSerializer]:
    """A run spec of one kind as the OpenAPI document shows it: only its kind's fields, the ones it needs required."""
    return document_shape(
        RunSpecSerializer,
        f"{kind.capitalize()}RunSpec",
        drop=set().union(*KIND_FIELDS.values()) - KIND_FIELDS[kind],
        require=KIND_REQUIRED[kind],
        replace={"kind": lambda: serializers.ChoiceField(choices=[kind])},
    )


# The run spec in the OpenAPI document: one shape per kind, told apart by `kind`.
RUN_SPEC = PolymorphicProxySerializer(
    component_name="RunSpec",
    serializers={kind: kind_spec_shape(kind) for kind in KIND_FIELDS},
    resource_type_field_name="kind",
)


class RunSpecsField(serializers.ListField):
    """A batch's run specs, each read by RunSpecSerializer (BatchSubmitSerializer.validate_runs)."""

    def __init__(self, **kwargs):
        super().__init__(child=serializers.JSONField(allow_null=True), min_length=1, **kwargs)


class RunSpecsSchema(OpenApiSerializerFieldExtension):
    """Run specs, at most BATCH_MAX_RUNS of them (the one this service runs with)."""

    target_class = "runs.serializers.RunSpecsField"

    def map_serializer_field(self, auto_schema, direction):
        spec = auto_schema.resolve_serializer(RUN_SPEC, direction)
        return {"type": "array", "items": spec.ref, "minItems": 1, "maxItems": settings.BATCH_MAX_RUNS}


class BatchSubmitSerializer(StrictSerializer):
    runs = RunSpecsField()

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
            if not isinstance(raw, dict):
                errors[str(index)] = ["A run spec must be a JSON object."]
                continue
            try:
                valid.append(spec_serializer.run_validation(raw))
            except serializers.ValidationError as error:
                errors[str(index)] = error.detail
            except ServiceError as error:
                errors[str(index)] = [str(error.detail)]
        if errors:
            raise serializers.ValidationError(errors)
        return valid


class ReextractSerializer(StrictSerializer):
    """POST /api/runs/:id/reextract: what changes from the source run; each defaults to the source run's."""

    schema = JsonSchemaField(required=False, help_text="A JSON schema for the result (default: the run's).")
    instruction = serializers.CharField(
        required=False, max_length=10_000, allow_blank=True, help_text="What to extract (default: the run's)."
    )
    options = document_shape(OptionsSerializer, "ReextractOptions", keep={"model"})(required=False)
    step = serializers.IntegerField(
        required=False, min_value=0, help_text="The step whose archived page to read (default: the last one)."
    )


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


class RunErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable, machine-readable (the README lists them).")
    message = serializers.CharField()
    httpStatus = serializers.IntegerField(required=False, help_text="http_error: the status the page answered.")
    retryAfter = serializers.CharField(required=False, help_text="http_error: the page's Retry-After header.")


class DriftSerializer(serializers.Serializer):
    """A saved-query replay's result against the last successful one (runs/drift.py)."""

    comparedWith = serializers.UUIDField(allow_null=True)
    changed = serializers.ListField(child=serializers.CharField(), help_text="Fields with another value now.")
    emptied = serializers.ListField(child=serializers.CharField(), help_text="Fields that had a value and now do not.")
    appeared = serializers.ListField(child=serializers.CharField(), help_text="Fields that now have a value.")


class UsageSerializer(serializers.Serializer):
    inputTokens = serializers.IntegerField(required=False)
    outputTokens = serializers.IntegerField(required=False)
    browserMs = serializers.IntegerField(required=False)


class NoneWhenBlankChoiceField(serializers.ChoiceField):
    """A choice stored as "" when there is none, written null."""

    def to_representation(self, value):
        return super().to_representation(value) if value else None


@extend_schema_field(RunSpecSerializer)
class StoredSpecField(serializers.JSONField):
    """The spec a run was submitted with, as checked (options filled in)."""


@extend_schema_field(RunErrorSerializer(allow_null=True))
class RunErrorField(serializers.JSONField):
    pass


@extend_schema_field(DriftSerializer(allow_null=True))
class DriftField(serializers.JSONField):
    pass


@extend_schema_field(UsageSerializer)
class UsageField(serializers.JSONField):
    pass


class RunSerializer(serializers.ModelSerializer):
    spec = StoredSpecField()
    error = RunErrorField(allow_null=True)
    drift = DriftField(allow_null=True)
    usage = UsageField()
    extractedBy = NoneWhenBlankChoiceField(
        choices=["rules", "model", "mixed"],
        source="extracted_by",
        allow_null=True,
        help_text="Extract runs: rules (no model call), model, or mixed (a saved query's compiled rules, the model for "
        "the fields they do not fill).",
    )
    stepCount = serializers.IntegerField(source="step_count", read_only=True)
    createdAt = UtcDateTimeField(source="created_at")
    startedAt = UtcDateTimeField(source="started_at", allow_null=True)
    finishedAt = UtcDateTimeField(source="finished_at", allow_null=True)
    batch = serializers.UUIDField(source="batch_id", allow_null=True)
    parent = serializers.UUIDField(source="parent_id", allow_null=True, help_text="A crawl's page: the crawl run.")

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
            "parent",
            "attempts",
            "result",
            "error",
            "drift",
            "usage",
            "extractedBy",
            "stepCount",
            "createdAt",
            "startedAt",
            "finishedAt",
        ]
        read_only_fields = fields


class RunSummarySerializer(RunSerializer):
    """A run as GET /api/runs lists it: everything but the result, which a list shows as a preview and a size
    (?include=result lists whole runs)."""

    preview = serializers.CharField(
        help_text="The result's first words (a page's Markdown, or the JSON), whitespace collapsed; empty without one."
    )
    resultBytes = serializers.IntegerField(
        source="result_bytes", allow_null=True, help_text="The result's size as compact JSON; null without one."
    )

    class Meta(RunSerializer.Meta):
        fields = [
            *(name for name in RunSerializer.Meta.fields if name != "result"),
            "preview",
            "resultBytes",
        ]
        read_only_fields = fields

    def to_representation(self, run: dict) -> dict:
        """A row of Run.objects.summaries(), written by hand: the fields above (which the schema shows) wrote it field
        by field in half a list's time. tests/runs/test_history.py holds it to RunSerializer's answer."""
        return {
            "id": str(run["id"]),
            "kind": run["kind"],
            "status": run["status"],
            "url": run["url"],
            "spec": run["spec"],
            "query": run["query"],
            "batch": str(run["batch_id"]) if run["batch_id"] else None,
            "parent": str(run["parent_id"]) if run["parent_id"] else None,
            "attempts": run["attempts"],
            "error": run["error"],
            "drift": run["drift"],
            "usage": run["usage"],
            "extractedBy": run["extracted_by"] or None,
            "stepCount": run["step_count"],
            "createdAt": utc_text(run["created_at"]),
            "startedAt": utc_text(run["started_at"]),
            "finishedAt": utc_text(run["finished_at"]),
            "preview": run["preview"],
            "resultBytes": run["result_bytes"],
        }


class ArchivedPageSerializer(serializers.Serializer):
    """The page a step loaded, as archived (runs/archive.py)."""

    href = serializers.CharField(help_text="Download the HTML (an attachment, never rendered by the service).")
    url = serializers.CharField(help_text="Where the page ended up.")
    status = serializers.IntegerField()
    contentType = serializers.CharField()
    bytes = serializers.IntegerField(help_text="Size of the HTML kept.")
    truncated = serializers.BooleanField(help_text="The page was longer than ARCHIVE_MAX_BYTES: its beginning is kept.")


class StepSerializer(serializers.ModelSerializer):
    at = UtcDateTimeField()
    screenshot = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()
    durationMs = serializers.IntegerField(source="duration_ms")

    class Meta:
        model = Step
        fields = ["index", "action", "url", "observation", "screenshot", "page", "at", "durationMs"]
        read_only_fields = fields

    def get_screenshot(self, step: Step) -> str | None:
        return screenshot_url(step.run_id, step.index) if step.screenshot else None

    @extend_schema_field(ArchivedPageSerializer(allow_null=True))
    def get_page(self, step: Step) -> dict | None:
        if not step.page:
            return None
        kept = {name: step.page[name] for name in ("url", "status", "contentType", "bytes", "truncated")}
        return {"href": page_url(step.run_id, step.index), **kept}


class RunDetailSerializer(RunSerializer):
    steps = StepSerializer(many=True, read_only=True)

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "steps"]
        read_only_fields = fields


class RunFilterSerializer(serializers.Serializer):
    """The filters of the run history and the export. Unknown parameters are refused: a misspelt filter must not
    silently list (or export) everything."""

    endpoint = "GET /api/runs"
    unknown_hints: dict[str, str] = {}

    id = serializers.UUIDField(required=False, help_text="Only this run (its export, for one)")
    kind = serializers.ChoiceField(choices=Run.Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Run.Status.choices, required=False)
    query = serializers.CharField(required=False, max_length=64)
    batch = serializers.UUIDField(required=False)
    parent = serializers.UUIDField(required=False, help_text="A crawl's pages: the crawl run's id")
    since = serializers.DateTimeField(required=False, help_text="createdAt at or after this ISO 8601 time")
    until = serializers.DateTimeField(required=False, help_text="createdAt before this ISO 8601 time")

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            known = ", ".join(self.fields)
            fallback = f"Unknown parameter; {self.endpoint} takes {known}."
            raise serializers.ValidationError({name: [self.unknown_hints.get(name, fallback)] for name in unknown})
        return super().to_internal_value(data)


RUNS_PAGE_DEFAULT = 50
RUNS_PAGE_MAX = 500


class RunListParamsSerializer(RunFilterSerializer):
    """GET /api/runs: the filters, a page size and the cursor of a page this API gave out (in `next`/`previous`)."""

    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=RUNS_PAGE_MAX,
        help_text=f"Runs per page, 1 to {RUNS_PAGE_MAX} (default {RUNS_PAGE_DEFAULT}).",
        error_messages={
            problem: f"Must be a whole number from 1 to {RUNS_PAGE_MAX}."
            for problem in ("invalid", "min_value", "max_value", "max_string_length")
        },
    )
    cursor = serializers.CharField(
        required=False, help_text="The page to read: take it from the `next` or `previous` URL of an answer."
    )
    include = serializers.ChoiceField(
        choices=["result"],
        required=False,
        help_text="result: list whole runs, each with its result (by default a run is listed without it, with a "
        "preview and its size).",
    )

    unknown_hints = {
        "next": "To page, follow the answer's next URL (its cursor parameter); there is no next parameter.",
        "page": "Pages are read by cursor: follow the answer's next URL (its cursor parameter).",
        "offset": "Pages are read by cursor: follow the answer's next URL (its cursor parameter).",
    }


class ExportParamsSerializer(RunFilterSerializer):
    endpoint = "GET /api/export"

    format = serializers.ChoiceField(
        choices=["json", "csv"], error_messages={"required": "Choose format=json or format=csv."}
    )


class FetchRequestSerializer(StrictSerializer):
    # Refused addresses are answered by the fetch itself (400 url_not_allowed), not as a validation error.
    url = PageUrlField(validators=[validate_url_shape])
    mainContent = serializers.BooleanField(
        default=True, help_text="Only the main content (no navigation, footers, ads); false: the whole page."
    )
    render = serializers.ChoiceField(
        choices=["auto", "browser", "http"],
        default="auto",
        help_text="http: plain HTTP only; browser: Chromium; auto: plain HTTP, then Chromium for JavaScript shells.",
    )
    timeoutMs = TimeoutMsField(default=30_000)
    waitFor = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=False,
        help_text="A CSS selector to wait for before the page is read (browser only).",
    )
    profile = name_field("profile", required=False, help_text="Load the page with this stored login profile.")
    storageStatePath = StorageStatePathField()
    persist = serializers.BooleanField(default=False, help_text="Also keep it as a fetch run (in history).")

    def validate(self, attrs: dict) -> dict:
        errors = state_errors(attrs)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def run_spec(self) -> dict:
        """The same fetch as a run spec, for persist: true (run_submit checks it)."""
        data = self.validated_data
        options = {"mainContent": data["mainContent"], "render": data["render"], "timeoutMs": data["timeoutMs"]}
        if "waitFor" in data:
            options["waitFor"] = data["waitFor"]
        spec = {"kind": "fetch", "url": data["url"], "options": options}
        spec.update({key: data[key] for key in ("profile", "storageStatePath") if key in data})
        return spec


class FetchResponseSerializer(serializers.Serializer):
    url = serializers.CharField()
    finalUrl = serializers.CharField()
    status = serializers.IntegerField()
    title = serializers.CharField()
    markdown = serializers.CharField()
    links = serializers.ListField(child=serializers.CharField())
    render = serializers.ChoiceField(choices=["browser", "http"], help_text="How the page was loaded.")
    loadState = serializers.ChoiceField(
        choices=["load", "domcontentloaded"],
        help_text="How far the browser got: domcontentloaded when the load event did not come within a few seconds "
        "of DOMContentLoaded (the page was read as it was); always load for render http.",
    )
    truncated = serializers.BooleanField(
        help_text="The page was longer than the service reads (20 MiB of HTML): the result is of its beginning."
    )
    pageType = serializers.ChoiceField(
        choices=list(PAGE_TYPES),
        help_text="What kind of page it is, as the main content was found for it (runs/engine/page_type.py).",
    )
    canonical = serializers.CharField(
        allow_null=True,
        help_text="The page's canonical URL (its <link rel=canonical>, made absolute), or null when it names none.",
    )
    runId = serializers.UUIDField(required=False, help_text="With persist: true, the run that keeps it.")


class SearchRequestSerializer(StrictSerializer):
    query = serializers.CharField(max_length=1000, help_text="What to search for.")
    limit = serializers.IntegerField(min_value=1, max_value=50, default=10, help_text="How many results.")
    fetch = serializers.BooleanField(default=False, help_text="Also fetch every result as Markdown, in parallel.")
    mainContent = serializers.BooleanField(
        default=True, help_text="Only the main content (no navigation, footers, ads); false: the whole page."
    )
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


WEBHOOK_EVENTS = ("run.finished", "run.succeeded", "run.failed", "query.drifted")


class WebhookCreateSerializer(StrictSerializer):
    """POST /api/webhooks."""

    url = serializers.URLField(
        max_length=2048, help_text="Where deliveries are POSTed; it must pass the network guard, as run URLs do."
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=WEBHOOK_EVENTS),
        min_length=1,
        help_text="run.finished (every run that ends), run.succeeded, run.failed, query.drifted (a saved query's "
        "replay whose drift lists a change).",
    )
    query = name_field("saved query", required=False, help_text="Only runs of this saved query (by name).")

    def validate_url(self, value: str) -> str:
        if urlsplit(value).scheme.lower() not in ("http", "https"):
            raise serializers.ValidationError("Only http:// and https:// URLs can receive deliveries.")
        return value

    def validate_events(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class WebhookSerializer(serializers.ModelSerializer):
    events = serializers.ListField(child=serializers.ChoiceField(choices=WEBHOOK_EVENTS))
    query = serializers.CharField(allow_null=True)
    createdAt = UtcDateTimeField(source="created_at")

    class Meta:
        model = Webhook
        fields = ["id", "url", "events", "query", "createdAt"]
        read_only_fields = fields


class WebhookCreatedSerializer(WebhookSerializer):
    """The answer to its creation, the only one that holds the secret (runs/webhooks.py subscribe sets it)."""

    secret = serializers.CharField(
        help_text="Verifies the webhook-signature of every delivery (Standard Webhooks): shown this once, keep it."
    )

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class DeliveryAttemptSerializer(serializers.ModelSerializer):
    webhookId = serializers.SerializerMethodField(help_text="The webhook-id header: the same on every retry.")
    runId = serializers.UUIDField(source="delivery.run_id")
    statusCode = serializers.IntegerField(source="status_code", allow_null=True)
    durationMs = serializers.IntegerField(source="duration_ms")
    error = serializers.CharField(help_text="Empty when the receiver answered 2xx.")
    deliveryStatus = serializers.CharField(
        source="delivery.status", help_text="pending (retried later), queued, sending, delivered or failed."
    )
    at = UtcDateTimeField()

    class Meta:
        model = DeliveryAttempt
        fields = ["webhookId", "event", "runId", "statusCode", "durationMs", "error", "deliveryStatus", "at"]
        read_only_fields = fields

    def get_webhookId(self, attempt: DeliveryAttempt) -> str:
        return f"msg_{attempt.delivery_id.hex}"
