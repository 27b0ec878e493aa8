"""Error codes a run gets at run time (README: "A failed run says why in error.code"): navigation_error,
model_rate_limited (retries on 429 stop at the run's deadline) and unknown_credential (deleted after submit)."""

from __future__ import annotations

import io
import socket
import threading
from datetime import datetime

import pytest
from django.core.management import call_command

from runs.jobs import execute_run
from tests.fake_models import FakeOpenAI
from tests.runs.test_agent import agent, set_credential, use

pytestmark = pytest.mark.django_db(transaction=True)

# README, "Stopping, crashes and timeouts": timeoutMs bounds every model request, "and retries on 429/5xx stop at
# the deadline". The margin covers what follows the last refused request: closing the browser context and recording
# the failure (measured well under 1 s here; four times that for a 2-core machine running other tests beside it).
# The deadline leaves room for the start page and two model requests on such a machine.
RATE_LIMITED_TIMEOUT_MS = 5000
AFTER_DEADLINE_MARGIN_S = 4.0

RATE_LIMITED = (
    429,
    {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}},
)


class NotHttpServer:
    """A loopback server that answers every connection with something that is not HTTP (an SSH banner): the
    browser gets a response it cannot parse, neither a DNS, connection, timeout nor HTTP status failure."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            with client:
                client.recv(65536)
                client.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@pytest.fixture
def not_http():
    server = NotHttpServer()
    yield server
    server.socket.close()


def submit_and_execute(api, spec: dict) -> dict:
    response = api.post("/api/runs", spec, format="json")
    assert response.status_code == 201, response.content
    execute_run(response.json()["id"])
    return api.get(f"/api/runs/{response.json()['id']}").json()


def assert_navigation_error(run: dict) -> None:
    # The message wording belongs to the fetch engine; the contract is the code and a sentence saying so.
    assert run["status"] == "failed"
    assert set(run["error"]) == {"code", "message"}
    assert run["error"]["code"] == "navigation_error"
    assert run["error"]["message"].startswith("The page could not be loaded")


def test_a_page_that_answers_something_other_than_http_fails_a_fetch_run_with_navigation_error(api, not_http):
    run = submit_and_execute(api, {"kind": "fetch", "url": not_http.url})
    assert_navigation_error(run)
    assert not_http.connections >= 1  # the browser did reach the server
    assert run["steps"] == []


def test_an_agent_whose_start_page_is_not_http_fails_with_navigation_error(api, site, settings, not_http):
    with FakeOpenAI([{"tool": "done", "args": {"output": "never asked"}}]) as server:
        use(settings, server)
        run = agent(api, site, url=not_http.url)
    assert_navigation_error(run)
    assert server.requests == []


def test_a_model_that_answers_429_every_time_fails_the_run_model_rate_limited_by_its_deadline(api, site, settings):
    with FakeOpenAI([RATE_LIMITED], repeat=True) as server:
        use(settings, server)
        run = agent(api, site, url=site.url("/static"), options={"timeoutMs": RATE_LIMITED_TIMEOUT_MS})
    assert run["status"] == "failed"
    assert run["error"] == {
        "code": "model_rate_limited",
        "message": "The model provider kept answering 429 after retries.",
    }
    # The agent counts its deadline from its own start: after the worker took the run (startedAt) and launched the
    # browser, which on a busy machine takes a while; before its first step was recorded, at the latest.
    agent_started = datetime.fromisoformat(run["steps"][0]["at"]).timestamp()
    assert agent_started >= datetime.fromisoformat(run["startedAt"]).timestamp()
    finished = datetime.fromisoformat(run["finishedAt"]).timestamp()
    deadline = agent_started + RATE_LIMITED_TIMEOUT_MS / 1000
    assert len(server.requests) >= 2, "a 429 is retried"
    assert all(request["at"] < deadline for request in server.requests), "no retry starts past the deadline"
    assert finished <= deadline + AFTER_DEADLINE_MARGIN_S
    # The start page was loaded and recorded; the model never chose a step.
    assert [step["action"] for step in run["steps"]] == [f'goto {{"url": "{site.url("/static")}"}}']


def test_a_credential_deleted_after_submit_fails_the_run_unknown_credential(api, site, settings):
    set_credential(site.base_url)
    with FakeOpenAI([{"tool": "done", "args": {"output": "never asked"}}]) as server:
        use(settings, server)
        response = api.post(
            "/api/runs", {"kind": "agent", "url": site.url("/login"), "goal": "Log in", "cred": "site"}, format="json"
        )
        assert response.status_code == 201, response.content
        call_command("cred", "delete", "site", stdout=io.StringIO())
        execute_run(response.json()["id"])
        run = api.get(f"/api/runs/{response.json()['id']}").json()
    assert run["status"] == "failed"
    assert run["error"] == {"code": "unknown_credential", "message": "The credential 'site' no longer exists."}
    assert run["steps"] == [] and server.requests == []
