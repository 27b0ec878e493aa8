"""Extract runs: rules without a model, and models (OpenAI-compatible, Anthropic) through scripted servers."""

from __future__ import annotations

import itertools
import json
import time

import pytest

from runs.jobs import execute_run
from runs.models import Event, Run
from tests.fake_models import FakeAnthropic, FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

RULE_SCHEMA = {
    "type": "object",
    "x-type": "Product",
    "properties": {
        "name": {"type": "string", "x-selector": "h1.name"},
        "price": {"type": "number", "x-selector": "p.price"},
        "sizes": {"type": "array", "x-selector": "ul.sizes li", "items": {"type": "string", "x-attr": "data-size"}},
        "reviews": {
            "type": "array",
            "x-selector": ".review",
            "items": {
                "type": "object",
                "properties": {
                    "author": {"type": "string", "x-selector": ".author"},
                    "stars": {"type": "integer", "x-selector": ".stars"},
                },
            },
        },
        "sku": {"type": "string", "x-source": "jsonld"},
        "availability": {"type": "string", "x-source": "jsonld", "x-property": "offers.availability"},
        "currency": {"type": "string", "x-source": "structured", "x-property": "offers.priceCurrency"},
    },
    "required": ["name", "price", "sku"],
}

MODEL_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
    "required": ["name", "price"],
}
GOOD_ANSWER = '{"name": "Trail shoe", "price": 89.9}'
KEY_CANARY = "sk-canary-model-key-5b1e"


def submit(api, **spec):
    response = api.post("/api/runs", {"kind": "extract", **spec}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def finished(api, run_id: str) -> dict:
    execute_run(run_id)
    return api.get(f"/api/runs/{run_id}").json()


def test_rules_extract_without_any_model(api, site, settings):
    settings.MODEL_PROVIDER = None
    run = finished(api, submit(api, url=site.url("/product"), schema=RULE_SCHEMA))
    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == {
        "name": "Trail shoe",
        "price": 89.9,
        "sizes": ["40", "41", "42"],
        "reviews": [{"author": "Kim", "stars": 5}, {"author": "Lee", "stars": 3}],
        "sku": "TS-042",
        "availability": "InStock",
        "currency": "EUR",
    }
    assert [s["action"] for s in run["steps"]] == ["navigate", "extract", "validate"]
    assert run["steps"][2]["observation"] == "valid"
    assert run["usage"]["inputTokens"] == 0


def test_rules_result_that_breaks_the_schema_fails_and_keeps_the_output(api, site):
    schema = {
        "type": "object",
        "properties": {"missing": {"type": "string", "x-selector": ".nothing-here"}},
        "required": ["missing"],
    }
    run = finished(api, submit(api, url=site.url("/product"), schema=schema))
    assert run["status"] == "failed"
    assert run["error"]["code"] == "schema_mismatch"
    assert run["result"] == {"missing": None}


def use_openai(settings, server):
    settings.MODEL_PROVIDER = "openai"
    settings.MODEL_NAME = "scripted-model"
    settings.OPENAI_BASE_URL = server.base_url + "/v1"
    settings.OPENAI_API_KEY = KEY_CANARY


def test_openai_compatible_extract(api, site, settings):
    with FakeOpenAI([GOOD_ANSWER]) as server:
        use_openai(settings, server)
        run = finished(api, submit(api, url=site.url("/product"), schema=MODEL_SCHEMA, instruction="name and price"))
    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == {"name": "Trail shoe", "price": 89.9}
    assert (run["usage"]["inputTokens"], run["usage"]["outputTokens"]) == (120, 30)
    assert [s["action"] for s in run["steps"]] == ["navigate", "snapshot", "model-call", "validate"]
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {KEY_CANARY}"
    body = request["body"]
    assert body["model"] == "scripted-model" and body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert "untrusted" in system["content"]
    assert "Instruction: name and price" in user["content"]
    assert "<page>" in user["content"] and "Ignore previous instructions" in user["content"]
    assert KEY_CANARY not in server.sent_text()
    everything = json.dumps([run, [e.frame() for e in Event.objects.all()], list(Run.objects.values())], default=str)
    assert KEY_CANARY not in everything


def test_one_invalid_answer_is_repaired(api, site, settings):
    with FakeOpenAI(['{"name": "Trail shoe", "price": "cheap"}', GOOD_ANSWER]) as server:
        use_openai(settings, server)
        run = finished(api, submit(api, url=site.url("/product"), schema=MODEL_SCHEMA))
    assert run["status"] == "succeeded"
    assert run["result"] == {"name": "Trail shoe", "price": 89.9}
    assert [s["action"] for s in run["steps"]][2:] == ["model-call", "validate", "model-call", "validate"]
    assert "price: 'cheap' is not of type 'number'" in run["steps"][3]["observation"]
    repair = server.requests[1]["body"]["messages"][1]["content"]
    assert "Your previous answer was" in repair and "'cheap' is not of type 'number'" in repair
    assert run["usage"]["inputTokens"] == 240


def test_answers_that_never_match_fail_with_schema_mismatch_and_keep_the_last(api, site, settings):
    with FakeOpenAI(["not json at all", '{"name": 1}', '{"name": "x"}']) as server:
        use_openai(settings, server)
        run = finished(api, submit(api, url=site.url("/product"), schema=MODEL_SCHEMA))
    assert run["status"] == "failed"
    assert run["error"] == {
        "code": "schema_mismatch",
        "message": "The model's answer did not match the schema after 2 repairs.",
    }
    assert run["result"] == {"name": "x"}
    assert len(server.requests) == 3


class TimedOpenAI(FakeOpenAI):
    """The scripted OpenAI server, also noting when each request arrived."""

    def __init__(self, answers: list):
        super().__init__(answers)
        self.arrivals: list[float] = []

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        self.arrivals.append(time.monotonic())
        return super().answer(path, body)


def test_rate_limit_is_retried_with_backoff(api, site, settings):
    # 429 without Retry-After, twice: the client waits before each retry, and longer the second time.
    limited = (429, {"error": {"message": "slow down", "type": "rate_limit_error"}})
    with TimedOpenAI([limited, limited, GOOD_ANSWER]) as server:
        use_openai(settings, server)
        run = finished(api, submit(api, url=site.url("/product"), schema=MODEL_SCHEMA))
    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == {"name": "Trail shoe", "price": 89.9}
    assert len(server.requests) == 3
    first_wait, second_wait = (later - earlier for earlier, later in itertools.pairwise(server.arrivals))
    # Backing off means waiting markedly longer each time (a fixed pause, or none, gives two about equal gaps).
    assert second_wait > 1.5 * first_wait, server.arrivals


def test_provider_refusing_the_key_fails_clearly(api, site, settings):
    refused = (401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
    with FakeOpenAI([refused]) as server:
        use_openai(settings, server)
        run = finished(api, submit(api, url=site.url("/product"), schema=MODEL_SCHEMA))
    assert run["error"] == {"code": "model_auth_error", "message": "The model provider refused the API key."}


def test_anthropic_extract_with_a_forced_tool_call(api, site, settings):
    with FakeAnthropic([GOOD_ANSWER]) as server:
        settings.MODEL_PROVIDER = "anthropic"
        settings.MODEL_NAME = "scripted-claude"
        settings.ANTHROPIC_BASE_URL = server.base_url
        settings.ANTHROPIC_API_KEY = KEY_CANARY
        run = finished(api, submit(api, url=site.url("/product"), schema=MODEL_SCHEMA))
    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == {"name": "Trail shoe", "price": 89.9}
    assert (run["usage"]["inputTokens"], run["usage"]["outputTokens"]) == (200, 40)
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/v1/messages"
    assert body["tool_choice"] == {"type": "tool", "name": "give_result"}
    assert body["tools"][0]["input_schema"] == MODEL_SCHEMA
    headers = server.requests[0]["headers"]  # the SDK sends the key as x-api-key or as a Bearer token
    assert KEY_CANARY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
    assert KEY_CANARY not in server.sent_text()


def test_per_run_model_override(api, site, settings):
    with FakeOpenAI([GOOD_ANSWER]) as server:
        use_openai(settings, server)
        finished(api, submit(api, url=site.url("/product"), schema=MODEL_SCHEMA, options={"model": "other-model"}))
    assert server.requests[0]["body"]["model"] == "other-model"


def test_submit_refuses_model_runs_when_no_provider_is_configured(api, settings):
    settings.MODEL_PROVIDER = None
    for spec in (
        {"kind": "extract", "url": "https://shop.test/", "schema": MODEL_SCHEMA},
        {"kind": "agent", "url": "https://shop.test/", "goal": "buy socks"},
    ):
        response = api.post("/api/runs", spec, format="json")
        assert response.status_code == 400
        error = response.json()["error"]
        assert error["code"] == "model_not_configured"
        assert "MODEL_PROVIDER" in error["message"] and "OPENAI_API_KEY" in error["message"]
    assert Run.objects.count() == 0
    rules = api.post(
        "/api/runs", {"kind": "extract", "url": "https://shop.test/", "schema": RULE_SCHEMA}, format="json"
    )
    assert rules.status_code == 201


def test_an_invalid_json_schema_is_400(api):
    response = api.post(
        "/api/runs",
        {
            "kind": "extract",
            "url": "https://shop.test/",
            "schema": {"type": "object", "properties": {"a": {"type": "colour"}}},
        },
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["schema"][0].startswith("This is not a valid JSON schema")
