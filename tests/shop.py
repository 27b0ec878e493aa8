"""A generated shop on 127.0.0.1 with known answers: three page templates (JSON-LD, microdata only, neither) of
product pages (name, price, currency, sku, availability, features). `restyle(template)` renames the classes of a
template, as a site's redesign does. Used by the compile tests and the compiled_replay benchmark."""

from __future__ import annotations

import collections
import html
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

TEMPLATES = ("jsonld", "microdata", "plain")
ADJECTIVES = ["Trail", "Road", "Alpine", "Urban", "Coastal", "Desert", "Forest", "Summit", "River", "Canyon"]
NOUNS = ["runner", "boot", "jacket", "pack", "tent", "lamp", "bottle", "glove", "hat", "sock"]
FEATURES = [
    "Waterproof membrane",
    "Recycled laces",
    "Reflective trim",
    "Vibram sole",
    "Two-year warranty",
    "Machine washable",
    "Packs into its own pocket",
    "Breathable mesh",
    "Lightweight frame",
    "Adjustable straps",
]
CURRENCIES = ["EUR", "USD", "CHF"]
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "price": {"type": "number"},
        "currency": {"type": "string"},
        "sku": {"type": "string"},
        "availability": {"type": "string"},
        "features": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "price", "currency", "sku", "availability", "features"],
}
INSTRUCTION = "The product's name, price (a number), currency code, SKU, availability as shown, and its features."


def product(template: str, index: int) -> dict:
    """The ground truth of one page: the same for every run (seeded by the page)."""
    rng = random.Random(f"{template}-{index}")
    return {
        "name": f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {index + 1}",
        "price": round(rng.uniform(9, 1900), 2),
        "currency": rng.choice(CURRENCIES),
        "sku": f"{template[:2].upper()}-{rng.randrange(10_000, 99_999)}",
        "availability": rng.choice(["In stock", "Out of stock", "Ships in 3 days"]),
        "features": rng.sample(FEATURES, rng.randint(2, 5)),
    }


def _money(price: float) -> str:
    whole, cents = f"{price:.2f}".split(".")
    return f"{int(whole):,}".replace(",", ".") + "," + cents  # 1.234,50 (as many European shops write it)


def page(template: str, index: int, restyled: bool = False) -> str:
    item = product(template, index)
    e = html.escape
    c = (lambda name: f"v2-{name}") if restyled else (lambda name: name)
    features = "".join(f'<li class="{c("feature")}">{e(f)}</li>' for f in item["features"])
    related = (
        f'<aside class="{c("related")}"><h2>You may also like</h2><ul>'
        f'<li><a href="/{template}/{(index + 1) % 50}">Another product</a> <span class="{c("tag")}">'
        f"{_money(round(item['price'] * 0.5, 2))}</span></li></ul></aside>"
    )
    nav = '<nav><a href="/">Home</a> <a href="/sale">Sale</a></nav>'
    if template == "jsonld":
        data = {
            "@context": "https://schema.org",
            "@type": "Product",
            "name": item["name"],
            "sku": item["sku"],
            "offers": {
                "@type": "Offer",
                "price": f"{item['price']:.2f}",
                "priceCurrency": item["currency"],
                "availability": "https://schema.org/InStock",
            },
        }
        head = f'<script type="application/ld+json">{json.dumps(data)}</script>'
        body = (
            f'<main class="{c("product")}"><h1 class="{c("title")}">{e(item["name"])}</h1>'
            f'<p class="{c("price")}">{_money(item["price"])} {item["currency"]}</p>'
            f'<p class="{c("stock")}">{e(item["availability"])}</p>'
            f'<p class="{c("sku")}">SKU {e(item["sku"])}</p>'
            f'<ul class="{c("features")}">{features}</ul></main>'
        )
    elif template == "microdata":
        head = ""
        body = (
            f'<main itemscope itemtype="https://schema.org/Product" class="{c("item")}">'
            f'<h1 itemprop="name" class="{c("item-name")}">{e(item["name"])}</h1>'
            f'<div itemprop="offers" itemscope itemtype="https://schema.org/Offer">'
            f'<span itemprop="price" content="{item["price"]:.2f}" class="{c("amount")}">{_money(item["price"])}</span>'
            f' <span itemprop="priceCurrency" class="{c("cur")}">{item["currency"]}</span></div>'
            f'<p class="{c("availability")}">{e(item["availability"])}</p>'
            f'<p>Item number <span itemprop="sku" class="{c("code")}">{e(item["sku"])}</span></p>'
            f'<ul class="{c("highlights")}">{features}</ul></main>'
        )
    else:
        head = ""
        body = (
            f'<div id="content"><div class="{c("product-box")}"><h1 class="{c("product-title")}">'
            f'{e(item["name"])}</h1><div class="{c("buy")}"><span class="{c("price-amount")}">'
            f'{_money(item["price"])}</span> <span class="{c("currency")}">{item["currency"]}</span></div>'
            f'<div class="{c("meta")}"><span class="{c("sku-code")}">{e(item["sku"])}</span> · '
            f'<span class="{c("stock-state")}">{e(item["availability"])}</span></div>'
            f'<ul class="{c("feature-list")}">{features}</ul></div></div>'
        )
    return (
        f"<!doctype html><html><head><title>{e(item['name'])} | Shop</title>{head}</head>"
        f"<body>{nav}{body}{related}<footer>© Shop</footer></body></html>"
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        shop: Shop = self.server.shop
        path = urlsplit(self.path).path
        parts = path.strip("/").split("/")
        with shop.lock:
            shop.hits[path] += 1
        if len(parts) == 2 and parts[0] in TEMPLATES and parts[1].isdigit():
            body = page(parts[0], int(parts[1]), restyled=parts[0] in shop.restyled).encode()
            status = 200
        else:
            body, status = b"<html><body>not here</body></html>", 404
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Shop:
    def __init__(self):
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.http.daemon_threads = True
        self.http.shop = self
        self.lock = threading.Lock()
        self.hits: collections.Counter = collections.Counter()
        self.restyled: set[str] = set()
        self._thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def url(self, template: str, index: int) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/{template}/{index}"

    def truth(self, count: int = 50) -> dict[str, dict]:
        """The ground truth by page URL, for a model that knows it."""
        return {self.url(t, i): product(t, i) for t in TEMPLATES for i in range(count)}

    def restyle(self, template: str) -> None:
        self.restyled.add(template)

    def __enter__(self) -> Shop:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.http.shutdown()
        self.http.server_close()
