"""Runs that would never end on their own end `failed` with `timeout` within timeoutMs + 5 s, and leave no browser
context behind: a page that never finishes loading, an agent whose model never says done, one whose model stops
answering, and an extraction whose model stops answering."""

from __future__ import annotations

import time

import pytest

from runs import services
from runs.jobs import execute_run
from runs.models import Run
from tests.fake_models import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT_MS = 3000
# README: "timeoutMs bounds a run's whole time ... A run that reaches it ends failed with timeout and its browser
# context is closed." The margin is for closing the context and recording the failure on a loaded 2-core machine.
MARGIN_S = 5
# An agent's timeoutMs must leave room for its first model call after the page loaded and was observed: on a loaded
# machine (two test processes) 3 s went to loading and observing alone, and the run timed out before asking.
AGENT_TIMEOUT_MS = 8000


def run_to_the_end(spec: dict, browser) -> tuple[Run, float]:
    browser.launched()  # the worker's Chromium is up, as it is after a worker's first run
    run = services.run_submit(spec=spec)
    started = time.monotonic()
    assert execute_run(str(run.id)) == "failed"
    took = time.monotonic() - started
    run.refresh_from_db()
    return run, took


def use_model(settings, server) -> None:
    settings.MODEL_PROVIDER, settings.MODEL_NAME = "openai", "scripted"
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url + "/v1", "sk-test"


def test_a_page_that_never_finishes_loading(site, data_dir, browser):
    run, took = run_to_the_end(
        {"kind": "fetch", "url": site.url("/hang?s=30"), "options": {"timeoutMs": TIMEOUT_MS}}, browser
    )
    assert run.status == "failed" and run.error["code"] == "timeout", run.error
    assert took < TIMEOUT_MS / 1000 + MARGIN_S
    assert browser.launched().contexts == []


@pytest.mark.parametrize(
    ("script", "what"),
    [
        ({"tool": "wait", "args": {"ms": 1000}}, "a model that keeps acting and never says done"),
        ({"stall": 60}, "a model that stops answering"),
    ],
)
def test_an_agent_that_never_says_done(site, data_dir, settings, browser, script, what):
    with FakeOpenAI([script], repeat=True) as model:
        use_model(settings, model)
        spec = {
            "kind": "agent",
            "url": site.url("/static"),
            "goal": "Never finish",
            "options": {"timeoutMs": AGENT_TIMEOUT_MS},
        }
        run, took = run_to_the_end(spec, browser)
    assert run.status == "failed", what
    message = f"The goal was not reached within timeoutMs ({AGENT_TIMEOUT_MS} ms)."
    assert run.error == {"code": "timeout", "message": message}
    assert took < AGENT_TIMEOUT_MS / 1000 + MARGIN_S, what
    assert model.requests, "the model was asked"
    assert browser.launched().contexts == []


def test_an_extraction_whose_model_stops_answering(site, data_dir, settings, browser):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    with FakeOpenAI([{"stall": 60}], repeat=True) as model:
        use_model(settings, model)
        spec = {"kind": "extract", "url": site.url("/product"), "schema": schema, "options": {"timeoutMs": TIMEOUT_MS}}
        run, took = run_to_the_end(spec, browser)
    assert run.status == "failed"
    message = f"The data was not extracted within timeoutMs ({TIMEOUT_MS} ms)."
    assert run.error == {"code": "timeout", "message": message}
    assert took < TIMEOUT_MS / 1000 + MARGIN_S
    assert model.requests, "the model was asked"
    assert browser.launched().contexts == []
