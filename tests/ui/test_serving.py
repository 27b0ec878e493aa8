"""Django serves the playground's build: index.html for / and every client-side route, the hashed assets through
whitenoise with long caching; /api, /admin and missing files are never answered with the playground."""

from __future__ import annotations

import pytest
from django.test import Client

INDEX = "<!doctype html><title>playground</title><div id=root></div>"


@pytest.fixture
def built(settings, tmp_path):
    """A stand-in for frontend/dist; a fresh Client loads the middleware, so whitenoise reads this folder."""
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text(INDEX)
    (dist / "assets" / "index-Ab3_x-9Z.js").write_text("console.log('app')")
    (dist / "favicon.svg").write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    settings.FRONTEND_DIST = dist
    settings.WHITENOISE_ROOT = dist
    return Client()


@pytest.mark.parametrize(
    "path", ["/", "/history?kind=fetch", "/runs/3f0c2a9e-0000-4000-8000-000000000000/live", "/queries/shoe"]
)
def test_every_client_side_route_gets_the_playground(built, path):
    response = built.get(path)
    assert response.status_code == 200
    assert response.content.decode() == INDEX
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response["Cache-Control"] == "no-cache"
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_build_files_are_served_and_hashed_assets_cached_for_good(built):
    asset = built.get("/assets/index-Ab3_x-9Z.js")
    assert asset.status_code == 200
    assert b"".join(asset.streaming_content) == b"console.log('app')"
    assert asset["Cache-Control"] == "max-age=315360000, public, immutable"
    icon = built.get("/favicon.svg")
    assert icon.status_code == 200
    assert "immutable" not in icon["Cache-Control"]


@pytest.mark.parametrize("path", ["/api/nope", "/api", "/assets/index-gone1234.js", "/favicon.ico", "/static/x.css"])
def test_api_and_missing_files_are_not_answered_with_the_playground(built, path):
    response = built.get(path)
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": f"No route for {path}."}}


def test_only_reads_get_the_playground(built):
    assert built.head("/history").status_code == 200
    assert built.put("/history").status_code == 405
    assert built.delete("/").status_code == 405


def test_without_a_build_the_home_page_says_how_to_make_it(settings, tmp_path):
    settings.FRONTEND_DIST = tmp_path / "missing"
    response = Client().get("/")
    assert response.status_code == 200
    assert b"make ui" in response.content
