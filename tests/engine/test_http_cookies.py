"""The plain-HTTP path (render: http) sends a profile's cookies by a browser's rules: a host-only cookie to its own
host only, a domain cookie to the domain and its subdomains, a secure one over https only. What is checked is the
Cookie header requests builds from the engine's own session (no page is loaded: the hosts are examples)."""

from __future__ import annotations

import json

import requests

from runs.engine.http_fetch import _session
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import FetchSpec

STATE = {
    "cookies": [
        {"name": "host_only", "value": "1", "domain": "shop.example", "path": "/", "expires": -1, "secure": False},
        {"name": "whole_domain", "value": "2", "domain": ".shop.example", "path": "/", "expires": -1, "secure": False},
        {"name": "secure_only", "value": "3", "domain": "shop.example", "path": "/", "expires": -1, "secure": True},
    ],
    "origins": [],
}


def sent(tmp_path, url: str) -> set[str]:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(STATE))
    spec = FetchSpec(url=url, storage_state_path=str(path), network=NetworkPolicy(allow_private=True))
    prepared = _session(spec).prepare_request(requests.Request("GET", url))
    header = prepared.headers.get("Cookie", "")
    return {part.split("=")[0].strip() for part in header.split(";") if part.strip()}


def test_profile_cookies_go_where_a_browser_sends_them(tmp_path):
    assert sent(tmp_path, "https://shop.example/cart") == {"host_only", "whole_domain", "secure_only"}
    assert sent(tmp_path, "http://shop.example/cart") == {"host_only", "whole_domain"}
    assert sent(tmp_path, "https://www.shop.example/") == {"whole_domain"}
    assert sent(tmp_path, "https://evilshop.example/") == set()
