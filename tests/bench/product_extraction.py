"""Extraction without a model on shared/datasets/product-extraction: F1 for price, sku, availability.

    .venv/bin/python -m tests.bench.product_extraction

Scoring as the dataset's benchmark: per attribute, a prediction that matches one of the page's accepted
values is a true positive; a wrong prediction is a false positive (and a false negative when the page has
the attribute); a missing prediction for a present attribute is a false negative. Published extruct
baseline F1: price 0.685, sku 0.537, availability 0.626.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import time
from pathlib import Path

from runs.engine.extract_rules import _parse_number, extract_by_rules

DATASET = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "product-extraction" / "dataset"
BASELINE = {"price": 0.685, "sku": 0.537, "availability": 0.626}

SCHEMA = {
    "type": "object",
    "x-type": "Product",
    "properties": {
        "price": {
            "type": ["number", "null"],
            "x-source": "structured",
            "x-property": ["offers.price", "offers.lowPrice", "offers.priceSpecification.price", "price"],
        },
        "sku": {
            "type": ["string", "null"],
            "x-source": "structured",
            "x-property": ["sku", "offers.sku"],
            "x-fallback": [
                {"x-selector": "[itemprop=sku][content]", "x-attr": "content"},
                {"x-selector": "[itemprop=sku]"},
            ],
        },
        "availability": {
            "type": ["string", "null"],
            "x-source": "structured",
            "x-property": ["offers.availability", "availability"],
            "x-fallback": [
                {"x-selector": "[itemprop=availability][href]", "x-attr": "href"},
                {"x-selector": "[itemprop=availability][content]", "x-attr": "content"},
                {"x-selector": "meta[property='product:availability']", "x-attr": "content"},
                {"x-selector": "meta[property='og:availability']", "x-attr": "content"},
            ],
        },
    },
}


def matches(attribute: str, predicted, accepted: list[str]) -> bool:
    if attribute == "price":
        values = [_parse_number(str(a)) for a in accepted]
        return predicted is not None and any(v is not None and abs(float(predicted) - v) < 0.005 for v in values)

    def letters(value) -> str:  # "In stock", "instock" and "InStock" are the same answer
        return re.sub(r"[^a-z0-9]", "", re.sub(r"^https?://schema\.org/", "", str(value).strip().lower()))

    return letters(predicted) in {letters(a) for a in accepted}


def main() -> None:
    truth = json.loads((DATASET / "ground-truth.json").read_text())
    counts = {a: {"tp": 0, "fp": 0, "fn": 0} for a in BASELINE}
    timings = []
    for page_id, expected in truth.items():
        page_html = gzip.decompress((DATASET / "html" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
        started = time.perf_counter()
        result = extract_by_rules(page_html, SCHEMA, url=expected.get("url"))
        timings.append((time.perf_counter() - started) * 1000)
        for attribute, count in counts.items():
            predicted, accepted = result.get(attribute), expected.get(attribute)
            if predicted in (None, ""):
                count["fn"] += 1 if accepted else 0
            elif accepted and matches(attribute, predicted, accepted):
                count["tp"] += 1
            else:
                count["fp"] += 1
                count["fn"] += 1 if accepted else 0
    print(f"product-extraction, {len(truth)} pages, no model (JSON-LD + microdata rules)")
    for attribute, count in counts.items():
        f1 = 2 * count["tp"] / max(1, 2 * count["tp"] + count["fp"] + count["fn"])
        print(f"  {attribute:<13} F1 {f1:.3f}  (extruct baseline {BASELINE[attribute]:.3f})  {count}")
    print(f"  ms/page: mean {statistics.mean(timings):.1f}  p50 {statistics.median(timings):.1f}")


if __name__ == "__main__":
    main()
