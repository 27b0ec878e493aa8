"""Secrets canary: an API key, a model provider key, credential passwords and a profile's session cookie go
through every run kind on one live service logging at DEBUG, and none of them comes out anywhere but where it
belongs (its own file, the one header its receiver needs)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote_plus, urlsplit

import pytest
import requests
from websockets.sync.client import connect

from tests.fake_models import FakeOpenAI
from tests.live import ROOT, LiveService, browser_sign_in
from tests.site import LOGIN_PASSWORD, LOGIN_USER, real_login_state
from tests.webhook_receiver import Receiver

pytestmark = pytest.mark.live

PROVIDER_KEY = "sk-canary-provider-key-9d41c7"
# Typed into a form without method=, so the browser sends it URL-encoded in the next page's address; the
# characters make the encoded form differ from the plain one.
GET_FORM_PASSWORD = "get form~canary/pw+7@x*"
GET_FORM_PASSWORD_ENCODED = quote_plus(GET_FORM_PASSWORD, safe="*").replace("~", "%7E")  # as Chromium writes it

LOGIN_GOAL = "Log in and read my balance"
GET_FORM_GOAL = "Sign in on the plain form"
EXTRACT_INSTRUCTION = "Who is signed in, and their balance"
# Both login pages number their fields the same way: [1] user, [2] password, [3] the submit button.
LOG_IN = [
    {"tool": "type", "args": {"ref": 1, "text": "{{cred.username}}"}},
    {"tool": "type", "args": {"ref": 2, "text": "{{cred.password}}"}},
    {"tool": "click", "args": {"ref": 3}},
    {"tool": "done", "args": {"output": {"balance": 42}}},
]
MEMBER_SCHEMA = {
    "type": "object",
    "properties": {"user": {"type": "string"}, "balance": {"type": "number"}},
    "required": ["user", "balance"],
}
MEMBER_ANSWER = '{"user": "ada", "balance": 42}'


class RoutedOpenAI(FakeOpenAI):
    """One script per run: a request takes its answer from the script whose marker (a goal or an instruction)
    its body contains, so the runs can execute side by side on both workers in any order."""

    def __init__(self, scripts: dict[str, list]):
        super().__init__([])
        self.scripts = {marker: list(answers) for marker, answers in scripts.items()}

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        text = json.dumps(body)
        script = next((answers for marker, answers in self.scripts.items() if marker in text), [])
        if not script:
            return 500, {"error": {"message": "no script answers this request", "type": "server_error"}}
        return 200, self.reply(body, script.pop(0))

    def requests_for(self, marker: str) -> list[dict]:
        return [request for request in self.requests if marker in json.dumps(request["body"])]


class _GetFormHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        parts = urlsplit(self.path)
        if parts.path == "/welcome":
            self.server.received.append(parse_qs(parts.query))
            page = "<html><head><title>Welcome</title></head><body><h1>Signed in</h1></body></html>"
        else:
            page = (
                "<html><head><title>Sign in</title></head><body><form action='/welcome'>"
                "<input name='username'> <input name='password' type='password'> <button>Sign in</button>"
                "</form></body></html>"
            )
        data = page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class GetFormSite:
    """A sign-in form without method=: the browser sends the credential in the query string."""

    def __init__(self):
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _GetFormHandler)
        self.http.daemon_threads = True
        self.http.received = []
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    @property
    def url(self) -> str:
        return self.origin + "/signin"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@dataclass
class Pushed:
    """What the canaries went through, and every text that came back out."""

    service: LiveService
    canaries: dict[str, str]
    own_files: dict[str, list[Path]]
    runs: dict[str, dict] = field(default_factory=dict)
    sync_pages: dict[str, dict] = field(default_factory=dict)
    responses: dict[str, str] = field(default_factory=dict)
    frames: list[dict] = field(default_factory=list)
    cli_output: dict[str, str] = field(default_factory=dict)
    model: RoutedOpenAI | None = None
    get_form_received: list[dict] = field(default_factory=list)
    webhook_deliveries: list = field(default_factory=list)


def manage(service: LiveService, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """A CLI command against the live service's data, in its environment (so logging at DEBUG too)."""
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=service.env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done


def set_credential(service: LiveService, name: str, site: str, username: str, password: str) -> str:
    done = manage(service, "cred", "set", name, "--domain", site, "--username", username, stdin=password + "\n")
    return done.stdout + done.stderr


def read_frames_until_finished(ws, run_ids: set[str], timeout: float = 90) -> list[dict]:
    frames, pending = [], set(run_ids)
    deadline = time.monotonic() + timeout
    while pending:
        frame = json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic())))
        frames.append(frame)
        if frame["type"] == "run-finished":
            pending.discard(frame["runId"])
    return frames


@pytest.fixture(scope="module")
def pushed(tmp_path_factory, site, browser):
    data_dir = tmp_path_factory.mktemp("canary")
    sessions_before = set(site.server.sessions)
    scripts = {LOGIN_GOAL: LOG_IN, GET_FORM_GOAL: LOG_IN, EXTRACT_INSTRUCTION: [MEMBER_ANSWER, MEMBER_ANSWER]}
    get_form = GetFormSite()
    with RoutedOpenAI(scripts) as model, ThreadPoolExecutor(4) as pool:
        service = LiveService(
            data_dir,
            LOG_LEVEL="DEBUG",
            MODEL_PROVIDER="openai",
            MODEL_NAME="scripted",
            OPENAI_BASE_URL=model.base_url + "/v1",
            OPENAI_API_KEY=PROVIDER_KEY,
        )
        # Serve starts (migrations, workers, Chromium) while the credentials are stored and this process logs in.
        started = pool.submit(service.start, 120)
        stored = [
            pool.submit(set_credential, service, "site", site.base_url, LOGIN_USER, LOGIN_PASSWORD),
            pool.submit(set_credential, service, "plain-form", get_form.origin, "grace", GET_FORM_PASSWORD),
        ]
        try:
            state = real_login_state(browser, site)
            cred_output = "".join(future.result() for future in stored)
            started.result()
            api_key = json.loads(manage(service, "apikey", "create", "canary-client", "--json").stdout)["key"]
            # The listings run while the runs do (they change nothing the runs change).
            listings = {tool: pool.submit(manage, service, tool, "list", "--json") for tool in ("cred", "apikey")}
            # Every request from here on carries the canary key, the WebSocket's included.
            service.session.headers["Authorization"] = f"Bearer {api_key}"
            result = Pushed(
                service=service,
                canaries={
                    "api key": api_key,
                    "provider key": PROVIDER_KEY,
                    "credential password": LOGIN_PASSWORD,
                    "profile cookie": next(c["value"] for c in state["cookies"] if c["name"] == "sid"),
                    "GET form password": GET_FORM_PASSWORD,
                    "GET form password, URL-encoded": GET_FORM_PASSWORD_ENCODED,
                    # Pieces of the passwords (6 and 8 characters): no part of a secret comes out either.
                    "a piece of the credential password": LOGIN_PASSWORD[1:7],
                    "a piece of the GET form password": GET_FORM_PASSWORD[9:17],
                },
                own_files={
                    "credential password": [data_dir / "credentials" / "site.json"],
                    "profile cookie": [data_dir / "profiles" / "members.json"],
                    "GET form password": [data_dir / "credentials" / "plain-form.json"],
                    "a piece of the credential password": [data_dir / "credentials" / "site.json"],
                    "a piece of the GET form password": [data_dir / "credentials" / "plain-form.json"],
                },
                cli_output={"cred set": cred_output},
                model=model,
                get_form_received=get_form.http.received,
            )
            _push(result, site, get_form, state, pool)
            # The agent logged in for real, so the site issued it a session of its own: a secret that only the
            # profile the agent saved may hold.
            for sid in set(site.server.sessions) - sessions_before - {result.canaries["profile cookie"]}:
                result.canaries[f"agent's session cookie {sid}"] = sid
                result.own_files[f"agent's session cookie {sid}"] = [data_dir / "profiles" / "agent-session.json"]
            for tool, listed in listings.items():
                result.cli_output[f"{tool} list"] = listed.result().stdout + listed.result().stderr
        finally:
            wait([started, *stored])
            service.stop()
            get_form.close()
    return result


def _push(result: Pushed, site, get_form: GetFormSite, state: dict, pool: ThreadPoolExecutor) -> None:
    service, responses = result.service, result.responses
    # A webhook told about every run: its secret is shown once, in the answer that creates it (kept out of
    # `responses`), signs every delivery, and must appear nowhere else but its private file.
    receiver = Receiver().__enter__()
    hook = service.post("/api/webhooks", {"url": receiver.url, "events": ["run.finished"]}).json()
    result.canaries["webhook secret"] = hook["secret"]
    result.own_files["webhook secret"] = [service.data_dir / "webhooks" / f"{hook['id']}.secret"]
    imported = service.post("/api/profiles/import", {"name": "members", "state": state})
    assert imported.status_code == 201, imported.text
    responses["profile import"] = imported.text
    members = site.url("/members")
    auth = {"Authorization": service.session.headers["Authorization"]}
    with connect(f"{service.events_url}?after=0", additional_headers=auth) as ws:
        specs = {
            "agent": {
                "kind": "agent",
                "url": site.url("/login"),
                "goal": LOGIN_GOAL,
                "cred": "site",
                "profile": "members",
                "saveProfile": "agent-session",
                "options": {"outputSchema": {"type": "object", "required": ["balance"]}},
            },
            "agent on a GET form": {"kind": "agent", "url": get_form.url, "goal": GET_FORM_GOAL, "cred": "plain-form"},
            "fetch": {"kind": "fetch", "url": members, "profile": "members"},
            "extract": {
                "kind": "extract",
                "url": members,
                "profile": "members",
                "schema": MEMBER_SCHEMA,
                "instruction": EXTRACT_INSTRUCTION,
            },
        }
        submitted = {}
        for name, spec in specs.items():
            response = service.post("/api/runs", spec)
            assert response.status_code == 201, response.text
            responses[f"submit {name}"] = response.text
            submitted[name] = response.json()["id"]
        saved = service.post("/api/queries", {"name": "members", "fromRun": submitted["extract"]})
        assert saved.status_code == 201, saved.text
        responses["query create"] = saved.text
        replayed = service.post("/api/queries/members/run", {"profile": "members"})
        assert replayed.status_code == 201, replayed.text
        responses["query replay"] = replayed.text
        submitted["replay"] = replayed.json()["id"]

        # Synchronous fetches, plain HTTP and in the web process's own Chromium, while the workers run.
        sync = {
            render: pool.submit(
                service.session.post,
                service.base_url + "/api/fetch",
                json={"url": members, "profile": "members", "render": render},
                timeout=90,
            )
            for render in ("http", "browser")
        }
        result.frames = read_frames_until_finished(ws, set(submitted.values()))
        for render, future in sync.items():
            page = future.result()
            assert page.status_code == 200, page.text
            responses[f"sync fetch {render}"] = page.text
            result.sync_pages[render] = page.json()

    # The playground's sign-in takes the key in a body: it must not come back, in the answer or in the cookie.
    browser_session = requests.Session()
    signed_in = browser_sign_in(service.base_url, result.canaries["api key"], browser_session)
    assert signed_in.json() == {"signedIn": True, "keyName": "canary-client"}
    responses["session sign-in"] = signed_in.text + json.dumps(browser_session.cookies.get_dict())
    responses["profiles, signed in"] = browser_session.get(service.base_url + "/api/profiles", timeout=30).text
    assert "members" in responses["profiles, signed in"]

    for name, run_id in submitted.items():
        detail = service.get(f"/api/runs/{run_id}")
        responses[f"run {name}"] = detail.text
        result.runs[name] = detail.json()
    for path in (
        "/api/runs",
        "/api/queries",
        "/api/queries/members",
        "/api/profiles",
        "/api/profiles/members",
        "/api/profiles/agent-session",
        "/api/export?format=json",
        "/api/export?format=csv",
        "/api/health",
    ):
        response = service.session.get(service.base_url + path, timeout=30)
        assert response.status_code == 200, (path, response.text)
        responses[path] = response.text
    result.webhook_deliveries = receiver.wait_for(len(submitted))
    receiver.__exit__(None, None, None)
    for path in ("/api/webhooks", f"/api/webhooks/{hook['id']}", f"/api/webhooks/{hook['id']}/deliveries"):
        responses[path] = service.get(path).text


def occurrences(pushed: Pushed, text: str) -> dict[str, int]:
    return {name: text.count(value) for name, value in pushed.canaries.items() if value in text}


def test_every_canary_was_really_used(pushed):
    runs = pushed.runs
    for name, run in runs.items():
        assert run["status"] == "succeeded", (name, run["error"])
    # The profile's cookie logged the fetch run and both synchronous fetches in.
    assert "Welcome back, ada" in runs["fetch"]["result"]["markdown"]
    for render, page in pushed.sync_pages.items():
        assert page["finalUrl"].endswith("/members"), render
        assert "Welcome back, ada" in page["markdown"], render
    # Both agents typed their passwords and got past the login forms.
    for name in ("agent", "agent on a GET form"):
        assert [step["action"] for step in runs[name]["steps"][1:]] == [
            'type {"ref": 1, "text": "{{cred.username}}"}',
            'type {"ref": 2, "text": "{{cred.password}}"}',
            'click {"ref": 3}',
            "done",
        ], name
        assert runs[name]["result"] == {"balance": 42}
    assert runs["agent"]["steps"][3]["url"].endswith("/members")
    assert "Welcome back" in runs["agent"]["steps"][3]["observation"]
    assert any(name.startswith("agent's session cookie") for name in pushed.canaries)
    assert pushed.get_form_received == [{"username": ["grace"], "password": [GET_FORM_PASSWORD]}]
    assert "Signed in" in runs["agent on a GET form"]["steps"][3]["observation"]
    # The extract run and the saved query's replay reached the model logged in, with the provider key in the header
    # OpenAI needs.
    model = pushed.model
    extract_requests = model.requests_for(EXTRACT_INSTRUCTION)
    assert len(extract_requests) == 2
    assert all("Welcome back, ada" in json.dumps(request["body"]) for request in extract_requests)
    assert runs["extract"]["result"] == runs["replay"]["result"] == {"user": "ada", "balance": 42}
    assert len(model.requests_for(LOGIN_GOAL)) == len(model.requests_for(GET_FORM_GOAL)) == len(LOG_IN)
    for request in model.requests:
        assert request["headers"]["authorization"] == f"Bearer {PROVIDER_KEY}"
    # The canary API key made every request after its creation, the WebSocket's included.
    assert pushed.service.session.headers["Authorization"] == f"Bearer {pushed.canaries['api key']}"
    assert pushed.frames[0]["eventId"] == 1


def test_no_canary_in_the_debug_log(pushed):
    log = pushed.service.log_path.read_text(errors="replace")
    assert " DEBUG " in log  # the service really logged at DEBUG
    assert occurrences(pushed, log) == {}


def test_no_canary_in_the_database(pushed):
    assert occurrences(pushed, pushed.service.database_text()) == {}


def test_no_canary_in_any_file_of_the_data_dir_but_its_own(pushed):
    """Raw bytes of every file (the SQLite file and its WAL too, so deleted rows count), except each canary's own
    file, which must hold it."""
    for path in sorted(p for p in pushed.service.data_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for name, value in pushed.canaries.items():
            if path in pushed.own_files.get(name, []):
                assert value.encode() in data, (name, path)
            else:
                assert value.encode() not in data, (name, path)


def test_no_canary_in_webhook_deliveries_which_its_secret_signs(pushed):
    from standardwebhooks.webhooks import Webhook as Verifier

    assert len(pushed.webhook_deliveries) >= 5
    for delivery in pushed.webhook_deliveries:
        Verifier(pushed.canaries["webhook secret"]).verify(delivery.body, delivery.headers)
        assert occurrences(pushed, delivery.body + json.dumps(delivery.headers)) == {}


def test_no_canary_in_events(pushed):
    assert {"run-queued", "run-started", "step", "run-finished"} <= {frame["type"] for frame in pushed.frames}
    assert occurrences(pushed, json.dumps(pushed.frames)) == {}


def test_no_canary_in_api_responses_or_cli_output(pushed):
    found = {
        where: hits
        for where, text in {**pushed.responses, **pushed.cli_output}.items()
        if (hits := occurrences(pushed, text))
    }
    assert found == {}


def test_no_canary_in_model_requests_but_the_provider_key_in_its_header(pushed):
    for request in pushed.model.requests:
        headers = dict(request["headers"])
        assert headers.pop("authorization") == f"Bearer {PROVIDER_KEY}"
        assert occurrences(pushed, json.dumps([request["path"], headers, request["body"]])) == {}
