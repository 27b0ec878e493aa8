"""Bad input tried as a new user would (issue 25): every case is refused at submit with one rule, never after a
page loaded. A bad field or query parameter is 400 `invalid_request` with `fields` naming it by its dotted path;
nothing is created; a storage-state file's contents are never echoed; engine internals never reach a message."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from django_q.models import OrmQ

from queries.models import SavedQuery
from runs import services
from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import EngineError, FetchOptions, FetchSpec, NullRecorder
from runs.jobs import execute_run
from runs.models import Batch, Run

pytestmark = pytest.mark.django_db(transaction=True)

README = Path(__file__).resolve().parents[2] / "README.md"

RULE_SCHEMA = {"type": "object", "properties": {"title": {"type": "string", "x-selector": "h1"}}}
NAME_RULE_MESSAGE = "A profile name is 1 to 64 characters of a-z, 0-9, '-' and '_'."


def post(client, path: str, body) -> object:
    return client.post(path, data=json.dumps(body), content_type="application/json")


def nothing_created() -> bool:
    return (Run.objects.count(), Batch.objects.count(), OrmQ.objects.count()) == (0, 0, 0)


def private_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


def saved_query(api, name: str = "shoe") -> None:
    created = post(api, "/api/queries", {"name": name, "url": "https://shop.test/p/1", "schema": RULE_SCHEMA})
    assert created.status_code == 201, created.content


# --- storage-state files are checked like a profile import, at submit ----------------------------------------------

NOT_JSON = (
    "storageStatePath is not JSON; it must hold a Playwright storage state (cookies and origins), "
    "as `profile import` takes."
)
NOT_A_STATE = "storageStatePath has keys other than cookies and origins; it is not a Playwright storage state."


def state_file_requests(url: str) -> list[tuple[str, dict, str]]:
    """Every way to hand a storage-state file to a run: (path, body, the field that names it)."""
    return [
        ("/api/fetch", {"url": url, "storageStatePath": "states/bad.json"}, "storageStatePath"),
        ("/api/runs", {"kind": "fetch", "url": url, "storageStatePath": "states/bad.json"}, "storageStatePath"),
        (
            "/api/batches",
            {"runs": [{"kind": "fetch", "url": url, "storageStatePath": "states/bad.json"}]},
            "runs.0.storageStatePath",
        ),
        ("/api/queries/shoe/run", {"storageStatePath": "states/bad.json"}, "storageStatePath"),
    ]


@pytest.mark.parametrize(("contents", "message"), [("not json", NOT_JSON), ('{"foo": 1}', NOT_A_STATE)])
def test_a_storage_state_file_that_is_not_a_state_is_400_at_submit_everywhere(api, data_dir, site, contents, message):
    private_file(data_dir / "states" / "bad.json", contents)
    saved_query(api)
    for path, body, field in state_file_requests(site.url("/static")):
        response = post(api, path, body)
        assert (response.status_code, response.json()) == (
            400,
            {"error": {"code": "invalid_request", "message": f"{field}: {message}", "fields": {field: [message]}}},
        ), path
        assert "foo" not in response.content.decode()  # the contents are never echoed
    assert nothing_created()
    assert SavedQuery.objects.get().run_count == 0


def test_a_storage_state_file_spoilt_after_submit_fails_the_run_with_a_documented_code(api, data_dir, site):
    state = private_file(data_dir / "states" / "shop.json", '{"cookies": [], "origins": []}')
    submitted = post(
        api,
        "/api/runs",
        {"kind": "fetch", "url": site.url("/static"), "storageStatePath": "states/shop.json"},
    )
    assert submitted.status_code == 201, submitted.content
    state.write_text('{"foo": 1}')
    assert execute_run(submitted.json()["id"]) == "failed"
    run = api.get(f"/api/runs/{submitted.json()['id']}").json()
    assert run["error"] == {"code": "invalid_storage_state", "message": NOT_A_STATE}
    assert run["steps"] == []  # refused before any page was loaded
    assert "`invalid_storage_state`" in README.read_text()


# --- extraction rules are checked at submit, named by their path in the schema -------------------------------------

BAD_RULES = [
    (
        {"type": "string", "x-source": "rss"},
        "x-source",
        "Must be one of jsonld, microdata, meta, heuristic, structured, not 'rss'.",
    ),
    (
        {"type": "string", "x-selector": "h1[[["},
        "x-selector",
        "'h1[[[' is not a CSS selector this service can apply: Expected ident or '*', got <DELIM '[' at 3>.",
    ),
    ({"type": "string", "x-selector": "h1", "x-attr": 5}, "x-attr", "Must be an attribute name (a non-empty string)."),
    (
        {"type": "number", "x-source": "jsonld", "x-property": ["offers.price", 7]},
        "x-property",
        "Must be a schema.org path such as offers.price, or a non-empty list of them tried in order.",
    ),
    (
        {"type": "number", "x-selector": ".price", "x-property": "offers.price"},
        "x-property",
        "Applies only with x-source (jsonld, microdata, meta, heuristic, structured).",
    ),
    (
        {"type": "number", "x-source": "jsonld", "x-fallback": {"x-selector": ".price"}},
        "x-fallback",
        "Must be a non-empty list of rules (objects with x-selector or x-source).",
    ),
    (
        {"type": "number", "x-source": "jsonld", "x-fallback": [{"x-attr": "content"}]},
        "x-fallback.0",
        "Each x-fallback entry needs x-selector or x-source.",
    ),
    (
        {"type": "number", "x-source": "jsonld", "x-fallback": [{"x-selector": "[itemprop=price"}]},
        "x-fallback.0.x-selector",
        "'[itemprop=price' is not a CSS selector this service can apply: Expected ']', got <EOF at 15>.",
    ),
]


def bad_schema(rule: dict) -> dict:
    return {"type": "object", "properties": {"title": {"type": "string", "x-selector": "h1"}, "price": rule}}


@pytest.mark.parametrize(("rule", "where", "message"), BAD_RULES, ids=[where for _, where, _ in BAD_RULES])
def test_a_bad_extraction_rule_is_400_at_submit_naming_its_schema_path(api, rule, where, message):
    saved_query(api)
    requests = [
        ("post", "/api/runs", {"kind": "extract", "url": "https://shop.test/", "schema": bad_schema(rule)}, "schema"),
        (
            "post",
            "/api/batches",
            {"runs": [{"kind": "extract", "url": "https://shop.test/", "schema": bad_schema(rule)}]},
            "runs.0.schema",
        ),
        ("post", "/api/queries", {"name": "bad", "url": "https://shop.test/", "schema": bad_schema(rule)}, "schema"),
        ("put", "/api/queries/shoe", {"url": "https://shop.test/", "schema": bad_schema(rule)}, "schema"),
        ("patch", "/api/queries/shoe", {"schema": bad_schema(rule)}, "schema"),
    ]
    for method, path, body, prefix in requests:
        response = getattr(api, method)(path, data=json.dumps(body), content_type="application/json")
        field = f"{prefix}.properties.price.{where}"
        assert (response.status_code, response.json()) == (
            400,
            {"error": {"code": "invalid_request", "message": f"{field}: {message}", "fields": {field: [message]}}},
        ), (method, path)
    assert nothing_created()
    assert list(SavedQuery.objects.values_list("name", "schema")) == [("shoe", RULE_SCHEMA)]


def test_a_stored_schema_with_bad_rules_cannot_be_promoted_or_replayed(api):
    """Rows written before rules were checked at submit: refused when used, not after a page loaded."""
    schema = bad_schema({"type": "string", "x-source": "rss"})
    old_run = Run.objects.create(
        kind="extract",
        url="https://shop.test/",
        spec={"kind": "extract", "url": "https://shop.test/", "schema": schema},
    )
    promoted = post(api, "/api/queries", {"name": "old", "fromRun": str(old_run.pk)})
    message = "Must be one of jsonld, microdata, meta, heuristic, structured, not 'rss'."
    assert (promoted.status_code, promoted.json()) == (
        400,
        {
            "error": {
                "code": "invalid_request",
                "message": f"fromRun: the run's schema.properties.price.x-source cannot be applied: {message}",
                "fields": {"fromRun": [f"schema.properties.price.x-source: {message}"]},
            }
        },
    )
    assert not SavedQuery.objects.exists()

    SavedQuery.objects.create(name="old", url="https://shop.test/", schema=schema)
    replay = post(api, "/api/queries/old/run", {})
    field = "schema.properties.price.x-source"
    assert (replay.status_code, replay.json()) == (
        400,
        {"error": {"code": "invalid_request", "message": f"{field}: {message}", "fields": {field: [message]}}},
    )
    assert Run.objects.count() == 1  # only the old row
    assert SavedQuery.objects.get().run_count == 0


def test_a_run_queued_with_bad_rules_fails_before_loading_its_page(site):
    """A run queued by an earlier version (no submit check) fails with a documented code and no page load."""
    schema = bad_schema({"type": "string", "x-selector": "h1[[["})
    # Stored as an earlier version did: run_submit refuses such a spec now (test_a_bad_extraction_rule_is_400_…).
    spec = {"kind": "extract", "url": site.url("/product"), "schema": schema, "options": {}}
    run = Run.objects.create(kind="extract", url=spec["url"], spec=spec)
    assert execute_run(str(run.id)) == "failed"
    run.refresh_from_db()
    assert run.error == {
        "code": "invalid_schema",
        "message": "schema.properties.price.x-selector: 'h1[[[' is not a CSS selector this service can apply: "
        "Expected ident or '*', got <DELIM '[' at 3>.",
    }
    assert run.steps.count() == 0
    assert "`invalid_schema`" in README.read_text()


# --- URLs: invalid ones are 400 at submit; the engine's own words never reach a user --------------------------------

BAD_URLS = [
    ("http://127.0.0.1:99999/", "The URL's port must be a number from 1 to 65535."),
    ("http://127.0.0.1:0/", "The URL's port must be a number from 1 to 65535."),
    ("http://shop.test:+80/", "The URL's port must be a number from 1 to 65535."),
    ("http://[::1/", "The URL's host is not valid (an IPv6 address goes in brackets: http://[2001:db8::1]/)."),
    ("http://sh<op.test/", "The URL's host contains a character a host name cannot have."),
    ("http://shop%7C.test/", "The URL's host contains a character a host name cannot have."),
    ("http://999.1.1.1/", "The URL's host ends in a number but is not a valid IPv4 address."),
]


@pytest.mark.parametrize(("url", "message"), BAD_URLS, ids=[url for url, _ in BAD_URLS])
def test_an_invalid_url_is_400_at_submit(api, url, message):
    saved_query(api)
    requests = [
        ("/api/runs", {"kind": "fetch", "url": url}, "url"),
        ("/api/fetch", {"url": url}, "url"),
        ("/api/batches", {"runs": [{"kind": "fetch", "url": url}]}, "runs.0.url"),
        ("/api/queries/shoe/run", {"url": url}, "url"),
        ("/api/queries", {"name": "other", "url": url, "schema": RULE_SCHEMA}, "url"),
    ]
    for path, body, field in requests:
        response = post(api, path, body)
        assert (response.status_code, response.json()) == (
            400,
            {"error": {"code": "invalid_request", "message": f"{field}: {message}", "fields": {field: [message]}}},
        ), path
    assert nothing_created()
    assert SavedQuery.objects.count() == 1


def test_playwrights_protocol_errors_become_a_sentence_with_a_documented_code(browser):
    """The engine alone (no API check in front): Chromium refuses the URL with "Protocol error (Page.navigate)"."""
    spec = FetchSpec(
        url="http://127.0.0.1:99999/",
        options=FetchOptions(render="browser", timeout_ms=10_000),
        network=NetworkPolicy(allow_private=True),
    )
    with pytest.raises(EngineError) as failed:
        fetch(spec, NullRecorder(), browser)
    assert (failed.value.code, failed.value.message) == ("navigation_error", "The browser could not load the page.")


def test_an_unsafe_port_fails_with_a_sentence_not_chromiums_text(api, site):
    """Chromium refuses some ports (6000 is X11); the user gets a sentence and a documented code."""
    response = post(api, "/api/fetch", {"url": "http://127.0.0.1:6000/", "render": "browser"})
    assert (response.status_code, response.json()) == (
        502,
        {
            "error": {
                "code": "navigation_error",
                "message": "The browser does not connect to this port: Chromium blocks it as unsafe.",
            }
        },
    )


def closing_server() -> tuple[socket.socket, int]:
    """A loopback server that accepts every connection and closes it without a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def test_a_connection_closed_without_an_answer_is_502_connection_error_and_documented(api):
    listener, port = closing_server()
    try:
        response = post(api, "/api/fetch", {"url": f"http://127.0.0.1:{port}/", "render": "http"})
    finally:
        listener.close()
    assert (response.status_code, response.json()) == (
        502,
        {"error": {"code": "connection_error", "message": "The connection to the server failed."}},
    )
    api_section = README.read_text().split("## API", 1)[1].split("\n## CLI", 1)[0]
    for code in ("connection_error", "connection_refused", "dns_error", "http_error", "not_html", "timeout"):
        assert f"`{code}`" in api_section, code


# --- a persisted fetch that failed says which run it kept ------------------------------------------------------------


def run_the_next_queued_run(deadline_s: float) -> threading.Thread:
    """The queue's job on the next queued run, as a worker would (the request waits for it meanwhile)."""

    def work() -> None:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            queued = Run.objects.filter(status="queued").values_list("id", flat=True).first()
            if queued:
                execute_run(str(queued))
                return
            time.sleep(0.02)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    return worker


def test_a_persisted_fetch_of_a_404_answers_with_the_run_it_kept(api, site):
    worker = run_the_next_queued_run(deadline_s=60)
    response = post(api, "/api/fetch", {"url": site.url("/missing"), "render": "http", "persist": True})
    worker.join(timeout=10)
    run = Run.objects.get()
    assert (response.status_code, response.json()) == (
        502,
        {"error": {"code": "http_error", "message": "The page answered HTTP 404.", "runId": str(run.id)}},
    )
    assert (run.status, run.error) == (
        "failed",
        {"code": "http_error", "message": "The page answered HTTP 404.", "httpStatus": 404},
    )


# --- the model-needed message, names, pages and body shapes ----------------------------------------------------------


def test_an_agent_run_without_a_model_says_what_to_set_and_nothing_about_extraction(api, settings):
    settings.MODEL_PROVIDER = None
    response = post(api, "/api/runs", {"kind": "agent", "url": "https://shop.test/", "goal": "Find the price."})
    assert (response.status_code, response.json()) == (
        400,
        {
            "error": {
                "code": "model_not_configured",
                "message": "Agent runs need a model: set MODEL_PROVIDER (openai or anthropic), MODEL_NAME and "
                "OPENAI_API_KEY (and OPENAI_BASE_URL for compatible servers) or ANTHROPIC_API_KEY.",
            }
        },
    )
    assert nothing_created()


BAD_PAGES = [
    ("limit=abc", "limit", "Must be a whole number from 1 to 500."),
    ("limit=0", "limit", "Must be a whole number from 1 to 500."),
    ("limit=-1", "limit", "Must be a whole number from 1 to 500."),
    ("limit=100000", "limit", "Must be a whole number from 1 to 500."),
    (
        "next=garbage",
        "next",
        "To page, follow the answer's next URL (its cursor parameter); there is no next parameter.",
    ),
    (
        "cursor=garbage",
        "cursor",
        "Not a cursor this API gave out; follow an answer's next URL, or start again without cursor.",
    ),
    (
        "colour=red",
        "colour",
        "Unknown parameter; GET /api/runs takes id, kind, status, query, batch, parent, since, until, limit, cursor, "
        "include.",
    ),
]


@pytest.mark.parametrize(("query", "field", "message"), BAD_PAGES, ids=[query for query, _, _ in BAD_PAGES])
def test_bad_paging_parameters_are_400_not_the_first_page(api, query, field, message):
    services.run_submit(spec={"kind": "fetch", "url": "https://shop.test/", "options": {}})
    response = api.get(f"/api/runs?{query}")
    assert (response.status_code, response.json()) == (
        400,
        {"error": {"code": "invalid_request", "message": f"{field}: {message}", "fields": {field: [message]}}},
    )


def test_pages_follow_the_cursor_of_the_next_url(api):
    for index in range(3):
        services.run_submit(spec={"kind": "fetch", "url": f"https://shop.test/{index}", "options": {}})
    first = api.get("/api/runs?limit=2").json()
    assert [run["url"] for run in first["results"]] == ["https://shop.test/2", "https://shop.test/1"]
    assert "cursor=" in first["next"]
    second = api.get(first["next"]).json()
    assert [run["url"] for run in second["results"]] == ["https://shop.test/0"]
    assert second["next"] is None


def test_a_name_that_breaks_the_rule_is_told_the_rule_everywhere(api, settings):
    settings.MODEL_PROVIDER = "openai"
    saved_query(api)
    requests = [
        ("/api/runs", {"kind": "fetch", "url": "https://shop.test/", "profile": "Shop Login"}, "profile"),
        ("/api/fetch", {"url": "https://shop.test/", "profile": "Shop Login"}, "profile"),
        (
            "/api/batches",
            {"runs": [{"kind": "fetch", "url": "https://shop.test/", "profile": "Shop"}]},
            "runs.0.profile",
        ),
        ("/api/queries/shoe/run", {"profile": "Shop Login"}, "profile"),
        ("/api/profiles/import", {"name": "Shop Login", "state": {"cookies": [], "origins": []}}, "name"),
        ("/api/runs", {"kind": "agent", "url": "https://shop.test/", "goal": "x", "saveProfile": "a/b"}, "saveProfile"),
    ]
    for path, body, field in requests:
        response = post(api, path, body)
        assert (response.status_code, response.json()) == (
            400,
            {
                "error": {
                    "code": "invalid_request",
                    "message": f"{field}: {NAME_RULE_MESSAGE}",
                    "fields": {field: [NAME_RULE_MESSAGE]},
                }
            },
        ), path
    credential = post(api, "/api/runs", {"kind": "agent", "url": "https://shop.test/", "goal": "x", "cred": "Ada"})
    rule = "A credential name is 1 to 64 characters of a-z, 0-9, '-' and '_'."
    assert credential.json() == {
        "error": {"code": "invalid_request", "message": f"cred: {rule}", "fields": {"cred": [rule]}}
    }
    assert nothing_created()


BODY_ENDPOINTS = ["/api/runs", "/api/batches", "/api/fetch", "/api/queries", "/api/profiles/import", "/api/search"]


@pytest.mark.parametrize("path", BODY_ENDPOINTS)
@pytest.mark.parametrize("body", ["null", "[]", '[{"kind": "fetch"}]', '"fetch"', "42"])
def test_a_body_that_is_not_a_json_object_gets_one_sentence(api, path, body):
    response = api.post(path, data=body, content_type="application/json")
    assert (response.status_code, response.json()) == (
        400,
        {
            "error": {
                "code": "invalid_request",
                "message": "The body must be a JSON object.",
                "fields": {"request": ["The body must be a JSON object."]},
            }
        },
    )
    assert nothing_created()


def test_a_batch_item_that_is_not_an_object_is_named_by_index(api):
    response = post(api, "/api/batches", {"runs": [{"kind": "fetch", "url": "https://shop.test/"}, None, "x"]})
    message = "A run spec must be a JSON object."
    assert (response.status_code, response.json()) == (
        400,
        {
            "error": {
                "code": "invalid_request",
                "message": f"runs.1: {message}",
                "fields": {"runs.1": [message], "runs.2": [message]},
            }
        },
    )
    assert nothing_created()


@pytest.mark.parametrize("path", BODY_ENDPOINTS)
def test_a_body_not_sent_as_json_is_415_saying_what_to_send(api, path):
    response = api.post(
        path, data="kind=fetch&url=https://shop.test/", content_type="application/x-www-form-urlencoded"
    )
    assert (response.status_code, response.json()) == (
        415,
        {
            "error": {
                "code": "unsupported_media_type",
                "message": 'Unsupported media type "application/x-www-form-urlencoded" in request. '
                "Send the body as JSON with the header Content-Type: application/json.",
            }
        },
    )
    assert nothing_created()


MISSING = "5b0e6a4c-31c4-4c1a-9a34-9e1f6e2b5d10"


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("get", f"/api/runs/{MISSING}", f"There is no run {MISSING}."),
        ("post", f"/api/runs/{MISSING}/cancel", f"There is no run {MISSING}."),
        ("get", f"/api/runs/{MISSING}/steps/0/screenshot", f"There is no run {MISSING}."),
        ("get", "/api/runs/not-a-run", "There is no run not-a-run."),
        ("get", f"/api/batches/{MISSING}", f"There is no batch {MISSING}."),
        ("get", "/api/batches/not-a-batch", "There is no batch not-a-batch."),
        ("get", "/api/queries/ghost", "There is no saved query named 'ghost'."),
        ("post", "/api/queries/ghost/run", "There is no saved query named 'ghost'."),
        ("get", "/api/profiles/ghost", "There is no profile named 'ghost'."),
        ("delete", "/api/profiles/ghost", "There is no profile named 'ghost'."),
    ],
)
def test_an_unknown_object_is_404_saying_which(api, method, path, message):
    response = getattr(api, method)(path, content_type="application/json")
    assert (response.status_code, response.json()) == (404, {"error": {"code": "not_found", "message": message}})


@pytest.mark.parametrize(
    "items",
    [True, [{"type": "string"}]],
    ids=["items-true", "items-list"],
)
def test_valid_schemas_whose_items_are_not_an_object_are_not_a_crash(api, settings, items):
    """`"items": true` (2020-12) and a list of items (draft-07 tuples) are valid JSON schema: without rules on every
    leaf such a schema needs a model, which is a 400 that says so, never a 500."""
    settings.MODEL_PROVIDER = None
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": items}}}
    if isinstance(items, list):
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    response = post(api, "/api/runs", {"kind": "extract", "url": "https://shop.test/", "schema": schema})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "model_not_configured")
    assert nothing_created()


def test_a_misspelt_export_filter_is_400_not_an_export_of_everything(api):
    services.run_submit(spec={"kind": "fetch", "url": "https://shop.test/"})
    response = api.get("/api/export?format=csv&statsu=failed")
    message = "Unknown parameter; GET /api/export takes id, kind, status, query, batch, parent, since, until, format."
    assert (response.status_code, response.json()) == (
        400,
        {"error": {"code": "invalid_request", "message": f"statsu: {message}", "fields": {"statsu": [message]}}},
    )
