"""The agent's tools: a scripted model (the real OpenAI SDK over HTTP on loopback) drives real Chromium through
select, press, goto, back and extract on the test site; each tool's effect shows on the page, in the trace and in
what the model is shown next. With the network guard on, a goto to a private address is not made: the step says it
was refused and the model may carry on (the run fails url_not_allowed only when its own start URL is refused)."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from tests.fake_models import FakeOpenAI
from tests.runs.test_agent import agent, use
from tests.runs.test_network_safety import Canary

pytestmark = pytest.mark.django_db(transaction=True)

RULES = {
    "type": "object",
    "properties": {
        "heading": {"type": "string", "x-selector": "h1"},
        "colours": {"type": "array", "x-selector": "#colour option", "items": {"type": "string", "x-attr": "value"}},
    },
}
REFUSED = (
    "127.0.0.1 is a private, loopback or otherwise non-public address; set ALLOW_PRIVATE_NETWORKS=true or list it "
    "in NETWORK_ALLOWLIST to reach it."
)


def controls(site, *, chosen: str = "none", pressed: str = "none") -> str:
    """The observation of /controls as the agent records it and shows it to the model."""
    return (
        f"URL: {site.url('/controls')}\nTitle: Controls\nInteractive elements:\n"
        "[1] <select> Colour Red Green Blue options: red, green, blue\n"
        f"[2] <a> Seventh page -> {site.url('/page/7')}\n"
        f"Visible text:\nOrder options Colour Red Green Blue Chosen: {chosen} Pressed: {pressed} Seventh page"
    )


def shown(server: FakeOpenAI, turn: int) -> str:
    """The page as the model was shown it on a turn (the part of the prompt between <page> and </page>)."""
    prompt = server.requests[turn]["body"]["messages"][1]["content"]
    return prompt.split("<page>\n", 1)[1].rsplit("\n</page>", 1)[0]


@pytest.fixture
def canary():
    watched = Canary()
    yield watched
    watched.server.shutdown()


def test_select_press_goto_back_and_extract_act_on_the_page(api, site, settings):
    script = [
        {"tool": "select", "args": {"ref": 1, "value": "green"}},
        {"tool": "press", "args": {"key": "k"}},
        {"tool": "goto", "args": {"url": site.url("/page/7")}},
        {"tool": "back", "args": {}},
        {"tool": "extract", "args": {"schema": RULES}},
        {"tool": "extract", "args": {"schema": {"type": "object", "properties": {"heading": {"type": "string"}}}}},
        {"tool": "done", "args": {"output": {"colour": "green"}}},
    ]
    with FakeOpenAI(script) as server:
        use(settings, server)
        run = agent(api, site, url=site.url("/controls"), goal="Choose green")
    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == {"colour": "green"}
    steps = run["steps"]
    assert [(s["action"], s["url"]) for s in steps] == [
        (f'goto {{"url": "{site.url("/controls")}"}}', site.url("/controls")),
        ('select {"ref": 1, "value": "green"}', site.url("/controls")),
        ('press {"key": "k"}', site.url("/controls")),
        (f'goto {{"url": "{site.url("/page/7")}"}}', site.url("/page/7")),
        ("back", site.url("/controls")),
        (f'extract {{"schema": {json.dumps(RULES)}}}', site.url("/controls")),
        (
            'extract {"schema": {"type": "object", "properties": {"heading": {"type": "string"}}}}',
            site.url("/controls"),
        ),
        ("done", site.url("/controls")),
    ]
    # select: the page's change handler ran; press: its keydown handler saw the key.
    assert steps[1]["observation"] == controls(site, chosen="green")
    assert steps[2]["observation"] == controls(site, chosen="green", pressed="k")
    assert steps[3]["observation"].startswith(f"URL: {site.url('/page/7')}\nTitle: Page 7\n")
    assert "Page 7, paragraph 7:" in steps[3]["observation"]
    # back: the previous page again (reloaded, so its script state starts over).
    assert steps[4]["observation"].startswith(f"URL: {site.url('/controls')}\nTitle: Controls\n")
    # extract with rules: the data itself; without rules: the page's Markdown for the model to read.
    assert steps[5]["observation"] == (
        'Extracted:\n{"heading": "Order options", "colours": ["red", "green", "blue"]}\n\n' + steps[4]["observation"]
    )
    assert steps[6]["observation"].startswith("Page content as Markdown:\n")
    assert "Order options" in steps[6]["observation"] and "Chosen:" in steps[6]["observation"]
    assert all(s["screenshot"] for s in steps[:-1])
    # The model is shown each step's outcome on its next turn.
    assert len(server.requests) == len(script)
    assert [shown(server, turn) for turn in range(1, 6)] == [s["observation"] for s in steps[1:6]]


def guard_on(settings, site) -> None:
    """The guard on, with the test site allowlisted: it stands in for a public site."""
    settings.ALLOW_PRIVATE_NETWORKS = False
    settings.NETWORK_ALLOWLIST = [f"127.0.0.1:{site.server.server_address[1]}"]


def test_goto_a_private_address_with_the_guard_on_is_refused_and_the_model_is_told(api, site, settings, canary):
    guard_on(settings, site)
    private = f"http://127.0.0.1:{canary.port}/admin"
    redirect = site.url("/redirect?to=" + quote(private, safe=""))
    redirect_tls = site.url("/redirect?to=" + quote(f"https://127.0.0.1:{canary.port}/admin", safe=""))
    script = [
        {"tool": "goto", "args": {"url": private}},
        {"tool": "goto", "args": {"url": "http://169.254.169.254/latest/meta-data/"}},
        {"tool": "goto", "args": {"url": redirect}},
        {"tool": "goto", "args": {"url": redirect_tls}},
        {"tool": "goto", "args": {"url": site.url("/page/7")}},
        {"tool": "done", "args": {"output": "reached page 7 only"}},
    ]
    with FakeOpenAI(script) as server:
        use(settings, server)
        run = agent(api, site, url=site.url("/controls"), goal="Read the admin page")
    assert canary.hits == []
    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == "reached page 7 only"
    steps = run["steps"]
    assert steps[1]["observation"] == f"The action failed: {REFUSED}\n\n{controls(site)}"
    assert steps[2]["observation"] == (
        "The action failed: 169.254.169.254 is a private, loopback or otherwise non-public address; set "
        f"ALLOW_PRIVATE_NETWORKS=true or list it in NETWORK_ALLOWLIST to reach it.\n\n{controls(site)}"
    )
    # A redirect to a private address: the guard refuses the hop, over plain http and over a CONNECT tunnel alike.
    assert steps[3]["observation"].startswith(f"The action failed: {REFUSED}\n\n")
    assert steps[4]["observation"].startswith(f"The action failed: {REFUSED}\n\n")
    assert steps[5]["url"] == site.url("/page/7")
    history = server.requests[-1]["body"]["messages"][1]["content"].split("Steps so far:\n", 1)[1].split("\n\n")[0]
    assert history.splitlines() == [
        f'1. goto {{"url": "{private}"}} -> error: {REFUSED}',
        '2. goto {"url": "http://169.254.169.254/latest/meta-data/"} -> error: 169.254.169.254 is a private, '
        "loopback or otherwise non-public address; set ALLOW_PRIVATE_NETWORKS=true or list it in NETWORK_ALLOWLIST "
        "to reach it.",
        f'3. goto {{"url": "{redirect}"}} -> error: {REFUSED}',
        f'4. goto {{"url": "{redirect_tls}"}} -> error: {REFUSED}',
        f'5. goto {{"url": "{site.url("/page/7")}"}} -> ok',
    ]


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_an_agent_whose_start_url_leads_to_a_private_address_fails_url_not_allowed(api, site, settings, canary, scheme):
    guard_on(settings, site)
    redirect = site.url("/redirect?to=" + quote(f"{scheme}://127.0.0.1:{canary.port}/", safe=""))
    with FakeOpenAI([{"tool": "done", "args": {"output": "never asked"}}]) as server:
        use(settings, server)
        run = agent(api, site, url=redirect, goal="Read the admin page")
    assert canary.hits == []
    assert run["status"] == "failed"
    assert run["error"] == {"code": "url_not_allowed", "message": REFUSED}
    assert run["steps"] == [] and server.requests == []
