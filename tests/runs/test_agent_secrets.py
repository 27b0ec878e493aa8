"""A credential in an agent run, against a page and a model that try to get it out (issue 18, point 1).

A scripted model (the real OpenAI SDK over HTTP on loopback) drives real Chromium through a hostile sign-in page:
it asks for placeholders in the wrong fields, and the page echoes pieces of what is typed into its text (in upper
case), flips the password field to a text field and opens a window. No piece of 4 or more characters of the password
may come out in the trace, the events, the database or the model requests, and the screenshots paint over the field.
"""

from __future__ import annotations

import io
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

from runs.engine.secrets import SCRUBBED, Secrets
from runs.engine.spec import Credential, CredentialSite
from runs.jobs import execute_run
from runs.models import Event, Run
from tests.fake_models import FakeOpenAI
from tests.live import django_database_text
from tests.runs.test_agent import use

# Quote and backslash: JSON writes them escaped, so a scrub after serialising would miss them.
PASSWORD = 'Kq"7\\zX-wv9-Jh2x'
USERNAME = "grace.hopper"
FIELD = {"left": 20, "top": 80, "width": 300, "height": 40}  # where the password field sits on the page
ECHO = {"left": 20, "top": 360, "width": 60, "height": 18}  # the start of the paragraph that echoes it

HOSTILE = f"""<!doctype html><html><head><title>Sign in</title><style>
body {{ margin: 0; font: 16px sans-serif; }}
input, button, a, p {{ position: absolute; left: 20px; margin: 0; }}
input {{ width: 300px; height: 40px; font-size: 28px; border: 0; padding: 0; background: #fff; color: #000; }}
</style></head><body>
<form method="post" action="/signed-in">
<input id="user" name="username" placeholder="User" style="top: 20px">
<input id="pw" name="password" type="password" placeholder="Password" style="top: {FIELD["top"]}px">
<button style="top: 140px">Sign in</button>
</form>
<input id="search" name="q" placeholder="Search" style="top: 200px">
<input id="solo" autocomplete="username" placeholder="Account" style="top: 260px">
<a href="/help" target="_blank" style="top: 320px">Help</a>
<p id="echo" style="top: 360px"></p>
<script>
const pw = document.getElementById('pw');
pw.addEventListener('input', () => {{
  document.getElementById('echo').textContent = 'You typed ' + pw.value.slice(0, 7).toUpperCase() + ' then '
    + pw.value.slice(5);
  pw.type = 'text';  // the password now shows in clear
  setTimeout(() => document.querySelectorAll('*').forEach(el => {{ for (const a of el.getAttributeNames()) {{
    if (a.startsWith('data-secret')) el.removeAttribute(a); }} }}), 300);  // and the page takes our marks off
}});
</script></body></html>"""

# The same page, taking the marks off again and again, as fast as it can, from the first key typed.
RELENTLESS = HOSTILE.replace("setTimeout(", "setInterval(").replace("}), 300);", "}), 0);")
assert RELENTLESS.count("setInterval(") == 1 and "}), 0);" in RELENTLESS
ECHO_RULE = {"type": "object", "properties": {"echo": {"type": "string", "x-selector": "#echo"}}}
SCRIPT = [
    {"tool": "type", "args": {"ref": 4, "text": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA{{cred.password}}"}},
    {"tool": "type", "args": {"ref": 4, "text": "{{cred.password}}"}},
    {"tool": "type", "args": {"ref": 4, "text": "{{cred.username}}"}},
    {"tool": "type", "args": {"ref": 5, "text": "{{cred.username}}"}},
    {"tool": "type", "args": {"ref": 1, "text": "{{cred.username}}"}},
    {"tool": "type", "args": {"ref": 2, "text": "{{cred.password}}"}},
    {"tool": "extract", "args": {"schema": ECHO_RULE}},
    {"tool": "click", "args": {"ref": 6}},
    {"tool": "wait", "args": {"ms": 300}},
    {"tool": "done", "args": {"output": {"saw": 'You typed KQ"7\\ZX- then \\zX-wv9-Jh2x'}}},
]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.server.hits.append(self.path)
        page = {"/signin": HOSTILE, "/relentless": RELENTLESS}.get(
            self.path, "<html><head><title>Help</title></head><body>Help</body></html>"
        )
        data = page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def hostile():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.hits = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def origin(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def store_credential(*domains: str, password: str = PASSWORD, username: str = USERNAME) -> None:
    real, sys.stdin = sys.stdin, io.StringIO(password + "\n")
    try:
        args = [arg for domain in domains for arg in ("--domain", domain)]
        call_command("cred", "set", "site", *args, "--username", username, stdout=io.StringIO())
    finally:
        sys.stdin = real


def agent(api, url: str, script: list[dict], settings) -> tuple[dict, FakeOpenAI]:
    with FakeOpenAI(script) as model:
        use(settings, model)
        response = api.post(
            "/api/runs", {"kind": "agent", "url": url, "goal": "Sign in", "cred": "site"}, format="json"
        )
        assert response.status_code == 201, response.content
        execute_run(response.json()["id"])
    return api.get(f"/api/runs/{response.json()['id']}").json(), model


def pieces_found(text: str, secret: str = PASSWORD) -> set[str]:
    """Every piece of 4 or more characters of the secret in the text, in any letter case, as written or
    JSON-escaped."""
    found = set()
    for written in (secret, json.dumps(secret)[1:-1]):
        for size in range(4, len(written) + 1):
            for start in range(len(written) - size + 1):
                piece = written[start : start + size]
                if piece.lower() in text.lower():
                    found.add(piece)
    return found


def screenshot(api, step: dict) -> Image.Image:
    response = api.get(step["screenshot"])
    assert response.status_code == 200
    return Image.open(io.BytesIO(b"".join(response.streaming_content))).convert("RGB")


def mean_colour(image: Image.Image, box: dict) -> tuple[int, int, int]:
    inside = image.crop(
        (box["left"] + 4, box["top"] + 4, box["left"] + box["width"] - 4, box["top"] + box["height"] - 4)
    )
    pixels = list(inside.get_flattened_data())
    return tuple(sum(p[i] for p in pixels) // len(pixels) for i in range(3))


@pytest.mark.django_db(transaction=True)
def test_a_hostile_page_and_model_get_no_piece_of_the_password(api, settings, hostile):
    store_credential(origin(hostile))
    run, model = agent(api, origin(hostile) + "/signin", SCRIPT, settings)
    assert run["status"] == "succeeded", run["error"]
    steps = run["steps"]
    observations = [step["observation"] for step in steps]
    # Placeholders go only where they belong, the model is told why, and nothing was typed.
    assert observations[1].startswith("The action failed: a credential placeholder must be the whole text typed")
    assert observations[2].startswith("The action failed: {{cred.password}} can only be typed into a password field")
    assert observations[3].startswith("The action failed: {{cred.username}} can only be typed into a text or email")
    assert "[4] <input> Search\n" in observations[3]  # the search box stayed empty
    # autocomplete=username, and the sign-in form's user field, take the username; the password goes in.
    assert [o.startswith("The action failed") for o in observations[4:7]] == [False, False, False]
    assert "[5] <input> Account (filled)" in observations[4]  # a field that took a value never shows it
    assert "[2] <input type=text> Password (filled)" in observations[6]  # the field turned text: still no value
    assert f"You typed {SCRUBBED}" in observations[6]  # the echo, in upper case, is scrubbed too
    assert observations[7].startswith("Extracted:\n")
    # The window the link opened was closed (when the browser told of it: after the click or the wait), never
    # acted on; the agent stayed on its page.
    assert "/help" in hostile.hits
    closed = [o for o in observations[8:10] if o.startswith("The page opened 1 other window(s); they were closed.")]
    assert len(closed) == 1
    assert steps[8]["url"] == steps[9]["url"] == origin(hostile) + "/signin"
    # No piece of the password anywhere it could have gone.
    everything = json.dumps(
        [run, [e.frame() for e in Event.objects.all()], list(Run.objects.values())], default=str, ensure_ascii=False
    )
    assert pieces_found(everything) == set()
    assert pieces_found(model.sent_text()) == set()
    assert pieces_found(json.dumps([r["body"] for r in model.requests], ensure_ascii=False)) == set()
    assert pieces_found(django_database_text()) == set()
    # The pages the steps archived are scrubbed like the observations (the page echoes what was typed).
    archived = [api.get(step["page"]["href"]).content.decode() for step in steps if step["page"]]
    assert len(archived) >= 8 and any("You typed" in html for html in archived)
    assert pieces_found("".join(archived)) == set()
    # The screenshots after the password went in paint over its field, though the page made it a text field and
    # took the service's marks off, and over the text that echoes it (Playwright's mask colour is magenta).
    for step in steps[6:9]:
        image = screenshot(api, step)
        for box in (FIELD, ECHO):  # and the paragraph that echoes it
            red, green, blue = mean_colour(image, box)
            assert red > 200 and green < 60 and blue > 200, (step["index"], box, (red, green, blue))


@pytest.mark.django_db(transaction=True)
def test_no_screenshot_shows_a_field_whose_marks_the_page_keeps_taking_off(api, settings, hostile):
    store_credential(origin(hostile))
    typing = [{"tool": "type", "args": {"ref": 2, "text": "{{cred.password}}"}}]
    waits = [{"tool": "wait", "args": {"ms": 50}} for _ in range(4)]
    done = [{"tool": "done", "args": {"output": {}}}]
    run, _ = agent(api, origin(hostile) + "/relentless", [*typing, *waits, *done], settings)
    assert run["status"] == "succeeded", run["error"]
    after = run["steps"][1:6]
    assert "[2] <input type=text> Password" in after[-1]["observation"]  # the page shows it in clear
    # The marks are set again by the script that reads them: the page never gets to take them off in between, so
    # the model is told the field is filled, not shown a value (scrubbed, but a value all the same).
    assert all("[2] <input type=text> Password (filled)\n" in step["observation"] for step in after), [
        step["observation"] for step in after
    ]
    for step in after:
        if step["screenshot"] is None:  # no picture rather than one that may show it
            continue
        red, green, blue = mean_colour(screenshot(api, step), FIELD)
        assert red > 200 and green < 60 and blue > 200, (step["index"], (red, green, blue))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("127.0.0.1", "https only"),
        ("http://127.0.0.1:1", "another port"),
        ("http://localhost:{port}", "another host"),
    ],
)
def test_the_credential_goes_only_to_its_own_origin(api, settings, hostile, entry, why):
    store_credential(entry.format(port=hostile.server_address[1]))
    typing = [{"tool": "type", "args": {"ref": 2, "text": "{{cred.password}}"}}]
    run, _ = agent(api, origin(hostile) + "/signin", [*typing, {"tool": "fail", "args": {"reason": "no"}}], settings)
    assert run["error"]["code"] == "agent_failed", why
    assert run["steps"][1]["observation"].startswith(
        f"The action failed: the credential may not be typed on {origin(hostile)}"
    ), why
    assert "[2] <input type=password> Password\n" in run["steps"][1]["observation"]  # nothing typed


def test_credential_sites_match_scheme_host_and_port():
    credential = Credential("c", "u", "p", ("example.com", "shop.test:8443", "http://intranet.local:8080"))
    allowed = [
        "https://example.com/login",
        "https://www.example.com/",
        "https://shop.test:8443/",
        "https://a.shop.test:8443/x",
        "http://intranet.local:8080/sign-in",
    ]
    refused = [
        "http://example.com/",  # plain http for a bare entry
        "https://example.com:444/",
        "https://notexample.com/",
        "https://shop.test/",  # 443, not 8443
        "http://a.intranet.local:8080/",  # http entries do not cover subdomains
        "https://intranet.local:8080/",
        "http://intranet.local/",
        "about:blank",
        "data:text/html,x",
    ]
    assert [url for url in allowed if not credential.allows(url)] == []
    assert [url for url in refused if credential.allows(url)] == []
    for bad in ("https://example.com/path", "ftp://example.com", "*.example.com", "user@example.com", "a:b:c", ""):
        with pytest.raises(ValueError):
            CredentialSite.parse(bad)


def test_cred_set_refuses_a_site_it_cannot_match(data_dir):
    real, sys.stdin = sys.stdin, io.StringIO("pw\n")
    try:
        with pytest.raises(CommandError) as refused:
            call_command("cred", "set", "x", "--domain", "https://example.com/login", "--username", "u")
    finally:
        sys.stdin = real
    assert refused.value.returncode == 2
    assert "a credential's site is host, host:port" in str(refused.value)
    assert not (data_dir / "credentials" / "x.json").exists()


def test_scrubbing_takes_every_piece_of_four_or_more_characters_in_any_case_and_encoding():
    secrets = Secrets(Credential("c", "ada", "h0rse pass~bat", ("example.com",), totp_secret="JBSWY3DPEHPK3PXP"))
    text = (
        "starts H0RSE, then 'pass~b', encoded pass%7Ebat or h0rse+pass%7Ebat, totp jbsw, the user ada, "
        "three characters h0r stay, and words with no piece of it stay whole"
    )
    scrubbed = secrets.scrub(text)
    assert pieces_found(scrubbed, "h0rse pass~bat") == set()
    assert pieces_found(scrubbed, "h0rse+pass%7Ebat") == set()
    assert pieces_found(scrubbed, "JBSWY3DPEHPK3PXP") == set()
    assert scrubbed.startswith(f"starts {SCRUBBED}, then '{SCRUBBED}', encoded")
    assert "the user [secret]," in scrubbed
    assert "h0r stay, and words with no piece of it stay whole" in scrubbed
    # " pas" is a piece too.
    assert secrets.scrub_all({"k h0rse": ["x PASS~BAT"]}) == {f"k {SCRUBBED}": [f"x{SCRUBBED}"]}
