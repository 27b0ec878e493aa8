"""Extraction without a model on shared/datasets/product-extraction (Zyte's product extraction benchmark): F1 for
price, sku and availability — ours next to a plain extruct baseline, both scored by the same scorer on the same pages
in the same run.

    .venv/bin/python -m tests.bench.product_extraction

The scorer is the benchmark's own definition (its README and evaluate.py): every attribute has a set of accepted
values in dataset/ground-truth.json, taken as given; a system predicts at most one value per attribute. A prediction
in the set is a true positive; any other prediction is a false positive, and also a false negative when the page has
the attribute; no prediction for a present attribute is a false negative. Price is compared as a Decimal number
(currency not scored), sku and availability as exact strings (InStock or OutOfStock). The README says empty
availabilities were filled with InStock, but its extruct baseline fills only its separate InStock/OutOfStock fields
and the published availability F1 (recall 0.479) is scored without filling: so is ours. Precision, recall and F1 are
summed over all pages (micro), as evaluate.py does.

Both systems' outputs are put into the benchmark's vocabulary by the same adapter (`answer`): a price as the text of
its number, a schema.org availability URL or word mapped by its suffix (what the benchmark's own extruct baseline
does). The ground truth is never rewritten.

The baseline is the benchmark's idea of extruct (extractors/run_extruct.py), written here: extruct's uniform
OpenGraph, JSON-LD and microdata, the first Product item's sku and first offer's price and availability, later
syntaxes overriding earlier ones. The baseline reads a price with a small number reader (`read_price`) where the
original uses price-parser; its published F1 (price 0.685, sku 0.537, availability 0.626) is
printed next to what it scores here, to show how close this baseline is to the original.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import time
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

import extruct

from runs.engine.extract_rules import extract_by_rules
from tests.bench.goals import Result, print_table, rows
from tests.datasets import DATASETS

DATASET = DATASETS / "product-extraction" / "dataset"
ATTRIBUTES = ("price", "sku", "availability")
PUBLISHED_EXTRUCT = {"price": 0.685, "sku": 0.537, "availability": 0.626}

# What a user would write to get these fields without a model (the README's rule language): "structured" reads
# JSON-LD, then microdata, then meta tags, then the visible page, field by field.
SCHEMA = {
    "type": "object",
    "x-type": "Product",
    "properties": {
        "price": {
            "type": ["number", "null"],
            "x-source": "structured",
            "x-property": ["offers.price", "offers.lowPrice", "offers.priceSpecification.price", "price"],
        },
        "sku": {"type": ["string", "null"], "x-source": "structured", "x-property": ["sku", "offers.sku"]},
        "availability": {
            "type": ["string", "null"],
            "x-source": "structured",
            "x-property": ["offers.availability", "availability"],
        },
    },
}

# The suffixes the benchmark's extruct baseline maps availability values by.
IN_STOCK = ("instock", "in_stock", "limitedavailability", "limited_availability", "presale", "preorder")
IN_STOCK += ("instoreonly", "in_store_only")
OUT_OF_STOCK = ("outofstock", "out_of_stock", "sold_out", "discontinued", "soldout")


def availability_word(value: Any) -> str | None:
    text = str(value).strip().lower() if value not in (None, "") else ""
    if text.endswith(IN_STOCK) or text in {"in stock"}:
        return "InStock"
    if text.endswith(OUT_OF_STOCK) or text in {"out of stock"}:
        return "OutOfStock"
    return None


def answer(found: dict) -> dict[str, str | None]:
    """A system's output in the benchmark's vocabulary (the same for both systems)."""
    price, sku = found.get("price"), found.get("sku")
    return {
        "price": None if price in (None, "") else str(price),
        "sku": None if sku in (None, "") else str(sku),
        "availability": availability_word(found.get("availability")),
    }


# -- the scorer ---------------------------------------------------------------------------------------------------


def as_decimal(value: str) -> Decimal | None:
    try:
        return Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        return None


def counts(accepted: list[str], predicted: str | None, attribute: str) -> tuple[int, int, int]:
    """tp, fp, fn of one prediction against a page's accepted values."""
    if attribute == "price":
        truth = {as_decimal(value) for value in accepted}
        guess = None if predicted is None else as_decimal(predicted)
        # A prediction that is not a number is a wrong prediction, not a missing one.
        hit = guess is not None and guess in truth
    else:
        truth, hit = set(accepted), predicted in set(accepted)
    if predicted is None:
        return 0, 0, 1 if truth else 0
    if hit:
        return 1, 0, 0
    return 0, 1, 1 if truth else 0


def f1_scores(truth: dict[str, dict], predictions: dict[str, dict]) -> dict[str, dict[str, float]]:
    scores = {}
    for attribute in ATTRIBUTES:
        tp = fp = fn = 0
        for page_id, expected in truth.items():
            a, b, c = counts(expected.get(attribute, []), predictions[page_id][attribute], attribute)
            tp, fp, fn = tp + a, fp + b, fn + c
        precision = 1.0 if fp == fn == 0 else (tp / (tp + fp) if tp + fp else 0.0)
        recall = 1.0 if fp == fn == 0 else (tp / (tp + fn) if tp + fn else 0.0)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[attribute] = {"f1": f1, "precision": precision, "recall": recall, "tp": tp, "fp": fp, "fn": fn}
    return scores


# -- the two systems ----------------------------------------------------------------------------------------------


def ours(page_html: str, url: str | None) -> dict:
    return extract_by_rules(page_html, SCHEMA, url=url) or {}


_NUMBER = re.compile(r"\d[\d.,\s]*")


def read_price(value: Any) -> str | None:
    """The number in a price text ("1.299,00 €", "$87.11", 450): the last separator followed by one or two digits
    is the decimal point, other separators group thousands."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    match = _NUMBER.search(str(value or ""))
    if not match:
        return None
    digits = re.sub(r"\s", "", match.group()).rstrip(".,")
    decimal = re.search(r"[.,](\d{1,2})$", digits)
    whole = re.sub(r"[.,]", "", digits[: decimal.start()] if decimal else digits)
    return f"{whole}.{decimal.group(1)}" if decimal else whole


def _lowered(item: dict) -> dict:
    return {str(key).lower(): value for key, value in item.items()}


def _first(item: dict, *keys: str) -> Any:
    for key in keys:
        if item.get(key) is not None:
            return item[key]
    return None


def _is_product(item: dict) -> bool:
    return any(
        "Product" in value for key in ("@type", "additionalType") if isinstance(value := item.get(key), str | list)
    )


def _from_schema_org(items: list[dict]) -> dict:
    products = [item for item in items if _is_product(item)]
    if not products:
        products = [item["mainEntity"] for item in items if item.get("@type") == "ItemPage" and "mainEntity" in item]
    if not products or not isinstance(products[0], dict):
        return {}
    product = _lowered(products[0])
    offers = product.get("offers") or []
    offer = (offers if isinstance(offers, dict) else (offers[0] if offers else {})) or {}
    if not isinstance(offer, dict):
        offer = {}
    return {
        "price": read_price(_first(offer, "price", "highPrice", "lowPrice")),
        "sku": _first(product, "sku", "productid"),
        "availability": availability_word(offer.get("availability")),
    }


def _from_opengraph(items: list[dict]) -> dict:
    if not items:
        return {}
    tags = _lowered(items[0])
    return {
        "price": read_price(_first(tags, "og:price:amount", "product:price:amount")),
        "sku": _first(tags, "og:sku", "product:sku"),
        "availability": availability_word(_first(tags, "og:availability", "product:availability")),
    }


def extruct_baseline(page_html: str, url: str | None) -> dict:
    data = extruct.extract(
        page_html, base_url=url, uniform=True, syntaxes=["opengraph", "json-ld", "microdata"], errors="ignore"
    )
    found: dict = {}
    for part in (
        _from_opengraph(data["opengraph"]),
        _from_schema_org(data["json-ld"]),
        _from_schema_org(data["microdata"]),
    ):
        found.update({key: value for key, value in part.items() if value not in (None, "")})
    return found


# -- the run ------------------------------------------------------------------------------------------------------


def measure() -> dict[str, float | int | str]:
    truth = json.loads((DATASET / "ground-truth.json").read_text())
    systems: dict[str, Callable[[str, str | None], dict]] = {"ours": ours, "extruct baseline": extruct_baseline}
    predictions: dict[str, dict[str, dict]] = {name: {} for name in systems}
    timings: dict[str, list[float]] = {name: [] for name in systems}
    for page_id, expected in truth.items():
        page_html = gzip.decompress((DATASET / "html" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
        for name, system in systems.items():
            started = time.perf_counter()
            found = system(page_html, expected.get("url"))
            timings[name].append((time.perf_counter() - started) * 1000)
            predictions[name][page_id] = answer(found)
    scores = {name: f1_scores(truth, predictions[name]) for name in systems}
    print(f"product-extraction, {len(truth)} pages, no model; the benchmark's scorer, the ground truth as given")
    for attribute in ATTRIBUTES:
        ours_score, theirs = scores["ours"][attribute], scores["extruct baseline"][attribute]
        print(
            f"  {attribute:<13} ours F1 {ours_score['f1']:.3f} (P {ours_score['precision']:.3f} R "
            f"{ours_score['recall']:.3f})   extruct baseline F1 {theirs['f1']:.3f} (P {theirs['precision']:.3f} "
            f"R {theirs['recall']:.3f}; published {PUBLISHED_EXTRUCT[attribute]:.3f})"
        )
    for name in systems:
        print(
            f"  {name}: ms/page p50 {statistics.median(timings[name]):.1f}  mean {statistics.mean(timings[name]):.1f}"
        )
    figures: dict[str, float | int | str] = {}
    for attribute in ATTRIBUTES:
        figures[f"{attribute} F1, ours"] = scores["ours"][attribute]["f1"]
    for attribute in ATTRIBUTES:
        figures[f"{attribute} F1, extruct baseline (same scorer, same run)"] = scores["extruct baseline"][attribute][
            "f1"
        ]
    figures["ms/page p50, ours"] = statistics.median(timings["ours"])
    return figures


def figures(full: bool = False) -> Result:
    return Result("140 pages", measure())  # the whole set takes seconds: the same in both modes


def main() -> None:
    print_table(rows("product_extraction", figures()))


if __name__ == "__main__":
    main()
