"""Saved queries that learn: a replay the model answered compiles into rules verified on its page; the next
replays run them without any model call; a redesign makes them fall back to the model, which recompiles; what the
rules cannot find stays with the model alone; the opt-out; compiling by hand from a run."""

from __future__ import annotations

import json

import pytest

from queries.models import SavedQuery
from runs.jobs import execute_run
from tests.fake_models import GroundTruthOpenAI
from tests.shop import INSTRUCTION, SCHEMA, Shop, product

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def shop():
    with Shop() as served:
        yield served


@pytest.fixture
def model(settings, shop):
    truth = shop.truth(count=10)
    # A field the page does not show as such: the model writes it, no rule can find it.
    for answer in truth.values():
        answer["summary"] = f"{answer['name']}, {len(answer['features'])} features"
    with GroundTruthOpenAI(truth) as server:
        settings.MODEL_PROVIDER = "openai"
        settings.MODEL_NAME = "ground-truth"
        settings.OPENAI_BASE_URL = server.base_url + "/v1"
        settings.OPENAI_API_KEY = "sk-test"
        yield server


def save(api, shop, name: str, template: str, schema: dict = SCHEMA, **extra) -> None:
    body = {"name": name, "url": shop.url(template, 0), "schema": schema, "instruction": INSTRUCTION, **extra}
    created = api.post("/api/queries", body, format="json")
    assert created.status_code == 201, created.content


def replay(api, shop, name: str, template: str, index: int) -> dict:
    queued = api.post(f"/api/queries/{name}/run", {"url": shop.url(template, index)}, format="json")
    assert queued.status_code == 201, queued.content
    execute_run(queued.json()["id"])
    run = api.get(f"/api/runs/{queued.json()['id']}").json()
    assert run["status"] == "succeeded", run["error"]
    return run


@pytest.mark.parametrize("template", ["jsonld", "microdata", "plain"])
def test_a_model_replay_compiles_and_the_next_replays_need_no_model(api, shop, model, template):
    save(api, shop, "product", template)
    first = replay(api, shop, "product", template, 0)
    assert first["extractedBy"] == "model" and len(model.requests) == 1
    assert first["steps"][-1]["action"] == "compile"
    compiled = api.get("/api/queries/product").json()["compiled"]
    assert compiled["fromRun"] == first["id"]
    assert compiled["render"] == "http"  # a server-rendered page: the rules hold without a browser
    assert set(compiled["fields"].values()) == {"rule"} and set(compiled["fields"]) == set(SCHEMA["properties"])

    for index in (1, 2, 3):
        run = replay(api, shop, "product", template, index)
        assert run["result"] == product(template, index)
        assert run["extractedBy"] == "rules", [(s["action"], s["observation"][:300]) for s in run["steps"]]
        assert (run["usage"]["inputTokens"], run["usage"]["outputTokens"]) == (0, 0)
        assert "model-call" not in [step["action"] for step in run["steps"]]
        assert "(plain HTTP, no browser)" in run["steps"][0]["observation"]
    assert len(model.requests) == 1

    # A redesign: the rules find nothing, the model reads the page, and its answer compiles anew.
    shop.restyle(template)
    try:
        changed = replay(api, shop, "product", template, 4)
        assert changed["extractedBy"] == "model" and changed["result"] == product(template, 4)
        assert "fallback" in [step["action"] for step in changed["steps"]]
        assert len(model.requests) == 2
        assert api.get("/api/queries/product").json()["compiled"]["fromRun"] == changed["id"]
        after = replay(api, shop, "product", template, 5)
        assert after["extractedBy"] == "rules" and after["result"] == product(template, 5)
        assert len(model.requests) == 2
    finally:
        shop.restyled.discard(template)


def test_what_the_rules_cannot_find_is_asked_of_the_model_alone(api, shop, model):
    schema = json.loads(json.dumps(SCHEMA))
    schema["properties"]["summary"] = {"type": "string"}
    save(api, shop, "summarised", "plain", schema=schema)
    replay(api, shop, "summarised", "plain", 0)
    fields = api.get("/api/queries/summarised").json()["compiled"]["fields"]
    assert fields["summary"] == "model" and fields["name"] == "rule"

    run = replay(api, shop, "summarised", "plain", 1)
    assert run["extractedBy"] == "mixed"
    expected = product("plain", 1)
    assert run["result"] == {**expected, "summary": f"{expected['name']}, {len(expected['features'])} features"}
    asked = model.requests[-1]["body"]["messages"][-1]["content"]
    asked_schema = json.loads(GroundTruthOpenAI.SCHEMA.search(asked)[1])
    assert list(asked_schema["properties"]) == ["summary"]  # only what the rules do not fill


def test_a_query_that_opts_out_is_never_compiled(api, shop, model):
    save(api, shop, "no-rules", "plain", compile=False)
    for index in (0, 1):
        assert replay(api, shop, "no-rules", "plain", index)["extractedBy"] == "model"
    assert api.get("/api/queries/no-rules").json()["compiled"] is None and len(model.requests) == 2

    # Opting out later drops the rules a query had.
    save(api, shop, "later", "plain")
    replay(api, shop, "later", "plain", 0)
    assert api.get("/api/queries/later").json()["compiled"] is not None
    assert api.patch("/api/queries/later", {"compile": False}, format="json").status_code == 200
    assert api.get("/api/queries/later").json()["compiled"] is None
    assert replay(api, shop, "later", "plain", 1)["extractedBy"] == "model"


def test_compile_by_hand_from_a_run_and_drop_it(api, shop, model):
    save(api, shop, "by-hand", "microdata", compile=False)
    none_yet = api.post("/api/queries/by-hand/compile", {}, format="json")
    assert none_yet.status_code == 409 and none_yet.json()["error"]["code"] == "no_model_run"
    run = replay(api, shop, "by-hand", "microdata", 0)

    compiled = api.post("/api/queries/by-hand/compile", {}, format="json")
    assert compiled.status_code == 200, compiled.content
    assert compiled.json()["compiled"]["fromRun"] == run["id"]
    named = api.post("/api/queries/by-hand/compile", {"fromRun": run["id"]}, format="json")
    assert named.status_code == 200
    assert api.post("/api/queries/by-hand/compile", {"fromRun": "x"}, format="json").status_code == 400

    # compile: false only stops automatic compiling; rules compiled by hand are run.
    replayed = replay(api, shop, "by-hand", "microdata", 1)
    assert replayed["extractedBy"] == "rules" and len(model.requests) == 1

    assert api.delete("/api/queries/by-hand/compile").status_code == 204
    assert SavedQuery.objects.get(name="by-hand").compiled is None
    assert replay(api, shop, "by-hand", "microdata", 2)["extractedBy"] == "model"


def test_editing_the_schema_drops_rules_compiled_for_the_old_one(api, shop, model):
    save(api, shop, "edited", "jsonld")
    replay(api, shop, "edited", "jsonld", 0)
    assert api.get("/api/queries/edited").json()["compiled"] is not None
    smaller = {"type": "object", "properties": {"name": {"type": "string"}}}
    assert api.patch("/api/queries/edited", {"schema": smaller}, format="json").status_code == 200
    assert api.get("/api/queries/edited").json()["compiled"] is None


def test_rules_that_need_the_pages_scripts_keep_the_browser(api, site, settings):
    schema = {"type": "object", "properties": {"headline": {"type": "string"}}}
    with GroundTruthOpenAI({site.url("/js"): {"headline": "Rendered headline"}}) as server:
        settings.MODEL_PROVIDER = "openai"
        settings.MODEL_NAME = "ground-truth"
        settings.OPENAI_BASE_URL = server.base_url + "/v1"
        settings.OPENAI_API_KEY = "sk-test"
        body = {"name": "headline", "url": site.url("/js"), "schema": schema}
        assert api.post("/api/queries", body, format="json").status_code == 201
        first = replay_url(api, "headline", site.url("/js"))
        assert first["extractedBy"] == "model"
        compiled = api.get("/api/queries/headline").json()["compiled"]
        assert compiled["render"] == "browser"  # plain HTTP serves the page before its script wrote the headline
        second = replay_url(api, "headline", site.url("/js"))
        assert second["extractedBy"] == "rules" and second["result"] == {"headline": "Rendered headline"}
        assert second["steps"][0]["screenshot"]  # loaded in the browser
        assert len(server.requests) == 1


def replay_url(api, name: str, url: str) -> dict:
    queued = api.post(f"/api/queries/{name}/run", {"url": url}, format="json")
    assert queued.status_code == 201, queued.content
    execute_run(queued.json()["id"])
    return api.get(f"/api/runs/{queued.json()['id']}").json()
