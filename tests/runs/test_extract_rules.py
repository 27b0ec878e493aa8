"""The README's "Extract without a model" example, run as written (its JSON block is read from the README) and in
variants, against real pages on a loopback server, through POST /api/runs and the queue's job in real Chromium:
`x-fallback`, `x-source: microdata`, list-valued `x-property` (tried in order), `x-type`, `x-attr` on items."""

from __future__ import annotations

import copy
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from runs.jobs import execute_run
from tests.fake_models import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_schema() -> dict:
    """The JSON block under the README's "### Extract without a model"."""
    section = README.read_text().split("### Extract without a model", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert block, "the README's example schema is missing"
    return json.loads(block.group(1))


SIZES = '<ul class="sizes"><li data-size="40">EU 40</li><li data-size="41">EU 41</li></ul>'


def jsonld(item: dict) -> str:
    return f'<script type="application/ld+json">{json.dumps({"@context": "https://schema.org", **item})}</script>'


PAGES = {
    # JSON-LD with an Offer price.
    "/offer": f"""<!doctype html><html><head><title>Trail shoe</title>
{jsonld({"@type": "Product", "name": "Trail shoe", "sku": "LD-42", "offers": {"@type": "Offer", "price": "89.90"}})}
</head><body><h1>Trail shoe</h1>{SIZES}</body></html>""",
    # An AggregateOffer has lowPrice, no price: the second path of the list.
    "/aggregate": f"""<!doctype html><html><head><title>Road shoe</title>
{jsonld({"@type": "Product", "sku": "LD-7", "offers": {"@type": "AggregateOffer", "lowPrice": 59, "highPrice": 99}})}
</head><body><h1>Road shoe</h1>{SIZES}</body></html>""",
    # Both paths present: the first of the list wins.
    "/both-prices": f"""<!doctype html><html><head><title>Both</title>
{jsonld({"@type": "Product", "sku": "LD-8", "offers": {"@type": "AggregateOffer", "price": "70", "lowPrice": "59"}})}
</head><body><h1>Both</h1>{SIZES}</body></html>""",
    # No price in any structured data: the x-fallback selector reads the attribute.
    "/fallback": f"""<!doctype html><html><head><title>Sandal</title>
{jsonld({"@type": "Product", "sku": "LD-9"})}
</head><body><h1>Sandal</h1><p>Price: <span itemprop="price" content="12.50">12,50 €</span></p>{SIZES}</body></html>""",
    # Microdata only, with a JSON-LD item of another type to be skipped by x-type.
    "/microdata": f"""<!doctype html><html><head><title>Boot</title>
{jsonld({"@type": "BreadcrumbList", "sku": "NOT-A-PRODUCT"})}
</head><body>
<div itemscope itemtype="https://schema.org/Product">
  <h1 itemprop="name">Boot</h1><meta itemprop="sku" content="MD-3">
  <div itemprop="offers" itemscope itemtype="https://schema.org/Offer"><meta itemprop="price" content="149.00"></div>
</div>{SIZES}</body></html>""",
    # Different SKUs in JSON-LD and microdata: which source is read shows.
    "/two-sources": f"""<!doctype html><html><head><title>Clog</title>
{jsonld({"@type": "Product", "sku": "LD-1", "offers": {"@type": "Offer", "price": "30"}})}
</head><body>
<div itemscope itemtype="https://schema.org/Product"><h1 itemprop="name">Clog</h1><meta itemprop="sku" content="MD-1">
</div>{SIZES}</body></html>""",
}


class _Pages(BaseHTTPRequestHandler):
    def log_message(self, format, *args):
        pass

    def do_GET(self):
        page = PAGES.get(self.path)
        body = (page or "<!doctype html><title>Not found</title>").encode()
        self.send_response(200 if page else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def shop():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def model_that_must_not_be_called(settings):
    """A configured model (a real HTTP server on loopback): rule schemas must not call it."""
    with FakeOpenAI([]) as server:
        settings.MODEL_PROVIDER = "openai"
        settings.MODEL_NAME = "scripted-model"
        settings.OPENAI_BASE_URL = server.base_url + "/v1"
        settings.OPENAI_API_KEY = "sk-test"
        yield server


def extracted(api, url: str, schema: dict) -> dict:
    submitted = api.post("/api/runs", {"kind": "extract", "url": url, "schema": schema}, format="json")
    assert submitted.status_code == 201, submitted.content
    execute_run(submitted.json()["id"])
    run = api.get(f"/api/runs/{submitted.json()['id']}").json()
    assert run["status"] == "succeeded", run["error"]
    assert [step["action"] for step in run["steps"]] == ["navigate", "extract", "validate"]
    return run["result"]


def test_the_readme_example_reads_an_offer_price_from_json_ld(api, shop, model_that_must_not_be_called):
    result = extracted(api, f"{shop}/offer", readme_schema())
    assert result == {"name": "Trail shoe", "price": 89.9, "sizes": ["40", "41"], "sku": "LD-42"}
    assert model_that_must_not_be_called.requests == []


def test_a_list_of_properties_is_tried_in_order(api, shop, model_that_must_not_be_called):
    schema = readme_schema()
    assert extracted(api, f"{shop}/aggregate", schema)["price"] == 59  # no offers.price: offers.lowPrice
    assert extracted(api, f"{shop}/both-prices", schema)["price"] == 70  # both: the first path wins
    reversed_paths = copy.deepcopy(schema)
    reversed_paths["properties"]["price"]["x-property"] = ["offers.lowPrice", "offers.price"]
    assert extracted(api, f"{shop}/both-prices", reversed_paths)["price"] == 59
    assert model_that_must_not_be_called.requests == []


def test_x_fallback_reads_the_attribute_when_no_structured_data_has_the_value(api, shop, model_that_must_not_be_called):
    result = extracted(api, f"{shop}/fallback", readme_schema())
    assert result == {"name": "Sandal", "price": 12.5, "sizes": ["40", "41"], "sku": "LD-9"}
    without_fallback = copy.deepcopy(readme_schema())
    del without_fallback["properties"]["price"]["x-fallback"]
    without_fallback["properties"]["price"]["type"] = ["number", "null"]
    # "structured" ends with the meta source, which reads a stray itemprop too; JSON-LD alone has no price.
    assert extracted(api, f"{shop}/fallback", without_fallback)["price"] == 12.5
    without_fallback["properties"]["price"]["x-source"] = "jsonld"
    assert extracted(api, f"{shop}/fallback", without_fallback)["price"] is None
    assert model_that_must_not_be_called.requests == []


def test_structured_reads_microdata_when_there_is_no_json_ld_item_of_the_type(api, shop, model_that_must_not_be_called):
    schema = readme_schema()
    schema["properties"]["sku"]["x-source"] = "microdata"
    result = extracted(api, f"{shop}/microdata", schema)
    assert result == {"name": "Boot", "price": 149.0, "sizes": ["40", "41"], "sku": "MD-3"}
    assert model_that_must_not_be_called.requests == []


@pytest.mark.parametrize(("source", "sku"), [("microdata", "MD-1"), ("jsonld", "LD-1"), ("structured", "LD-1")])
def test_x_source_names_where_the_value_is_read(api, shop, model_that_must_not_be_called, source, sku):
    schema = {
        "type": "object",
        "x-type": "Product",
        "properties": {"sku": {"type": "string", "x-source": source}, "name": {"type": "string", "x-selector": "h1"}},
    }
    assert extracted(api, f"{shop}/two-sources", schema) == {"sku": sku, "name": "Clog"}
    assert model_that_must_not_be_called.requests == []
