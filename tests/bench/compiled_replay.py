"""Compiled saved queries: replays without a model, measured on a generated shop and on real product pages.

    .venv/bin/python -m tests.bench.compiled_replay [--pages 50] [--model-latency 0]

The whole service runs (serve, a worker, Chromium, the network guard: the default configuration). A local shop
(tests/shop.py) has 3 page templates (JSON-LD, microdata only, neither) of product pages with known answers; an
OpenAI-compatible server on loopback answers each extraction from the ground truth (after --model-latency
seconds) and counts its calls. Per template, one query is saved on the first page and replayed on the others; a
second query with `"compile": false` replays the same pages, alternating with the first (the model path, side by
side). Then the template's classes are renamed: the next replay must fall back to the model and recompile, the
following ones need no model again.

Reported per template: field accuracy against the ground truth, model calls of the compiled query, the replay time
(the run's startedAt to finishedAt) p50 of each path and their ratio, tokens saved. Last, the compiler alone on the
real product pages of shared/datasets/product-extraction, each page's ground truth standing in for a model's
answer: how many fields compile into a rule that gives the value back.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from runs.engine.compile import RULE, compile_answer, same
from tests.bench.goals import Result, print_table, rows
from tests.datasets import DATASETS
from tests.fake_models import GroundTruthOpenAI
from tests.live import LiveService
from tests.shop import INSTRUCTION, SCHEMA, TEMPLATES, Shop, product

DATASET = DATASETS / "product-extraction" / "dataset"
DATASET_FIELDS = ("price", "sku", "availability", "brand", "gtin")


class SlowGroundTruth(GroundTruthOpenAI):
    def __init__(self, truth: dict, latency: float):
        super().__init__(truth)
        self.latency = latency

    def answer(self, path: str, body: dict):
        time.sleep(self.latency)
        return super().answer(path, body)


def seconds(run: dict) -> float:
    return (datetime.fromisoformat(run["finishedAt"]) - datetime.fromisoformat(run["startedAt"])).total_seconds()


def replay(service: LiveService, name: str, url: str) -> dict:
    queued = service.post(f"/api/queries/{name}/run", {"url": url})
    assert queued.status_code == 201, queued.text
    run = service.wait(queued.json()["id"], timeout=120)
    if run["status"] != "succeeded":
        raise SystemExit(f"replay of {name} on {url} {run['status']}: {run['error']}")
    return run


def tokens(run: dict) -> int:
    return run["usage"].get("inputTokens", 0) + run["usage"].get("outputTokens", 0)


def shop_figures(pages: int, latency: float) -> dict[str, float]:
    figures: dict[str, float] = {}
    with Shop() as shop, SlowGroundTruth(shop.truth(pages), latency) as model, tempfile.TemporaryDirectory() as data:
        service = LiveService(
            Path(data),
            MODEL_PROVIDER="openai",
            MODEL_NAME="ground-truth",
            OPENAI_API_KEY="sk-bench",
            OPENAI_BASE_URL=model.base_url + "/v1",
        ).start()
        try:
            for template in TEMPLATES:
                for name, compile_ in ((template, True), (f"{template}-model", False)):
                    body = {"name": name, "url": shop.url(template, 0), "schema": SCHEMA, "instruction": INSTRUCTION}
                    created = service.post("/api/queries", {**body, "compile": compile_})
                    assert created.status_code == 201, created.text
                calls_before = len(model.requests)
                replay(service, template, shop.url(template, 0))  # the model answers, the answer compiles
                compiled, plain = [], []
                correct = total = 0
                for index in range(1, pages):
                    url = shop.url(template, index)
                    run = replay(service, template, url)
                    compiled.append(run)
                    plain.append(replay(service, f"{template}-model", url))
                    truth = product(template, index)
                    correct += sum(same(run["result"].get(key), value) for key, value in truth.items())
                    total += len(truth)
                calls = len(model.requests) - calls_before - len(plain)
                p50_rules = statistics.median(seconds(run) for run in compiled)
                p50_model = statistics.median(seconds(run) for run in plain)
                by_rules = sum(run["extractedBy"] == "rules" for run in compiled)
                print(
                    f"{template:<9} accuracy {correct / total:.4f}  model calls {calls}  replays by rules "
                    f"{by_rules}/{len(compiled)}  p50 compiled {p50_rules * 1000:.0f} ms, model path "
                    f"{p50_model * 1000:.0f} ms ({p50_model / p50_rules:.1f}x)  tokens saved "
                    f"{sum(map(tokens, plain)) - sum(map(tokens, compiled))}"
                )
                figures[f"{template}: field accuracy"] = round(correct / total, 4)
                figures[f"{template}: model calls"] = calls
                figures[f"{template}: replay p50 ms, compiled"] = round(p50_rules * 1000)
                figures[f"{template}: replay p50 ms, model path"] = round(p50_model * 1000)
                figures[f"{template}: model path / compiled p50"] = round(p50_model / p50_rules, 2)
                figures[f"{template}: tokens saved"] = sum(map(tokens, plain)) - sum(map(tokens, compiled))

            # A redesign of one template: fall back, recompile, then no model again.
            shop.restyle("plain")
            before = len(model.requests)
            after = [replay(service, "plain", shop.url("plain", index)) for index in range(1, min(pages, 6))]
            recompiled = service.get("/api/queries/plain").json()["compiled"]["fromRun"] == after[0]["id"]
            who = [run["extractedBy"] for run in after]
            print(f"after renaming the plain template's classes: {who}, model calls {len(model.requests) - before}")
            figures["restyled: first replay falls back to the model"] = int(who[0] == "model")
            figures["restyled: recompiled from that replay"] = int(recompiled)
            figures["restyled: model calls in the following replays"] = len(model.requests) - before - 1
        finally:
            service.stop()
    return figures


def dataset_figures(limit: int | None = None) -> dict[str, float]:
    """The compiler on real product pages, each page's ground truth standing in for the model's answer."""
    truth = json.loads((DATASET / "ground-truth.json").read_text())
    asked = compiled = pages = 0
    per_field = {name: [0, 0] for name in DATASET_FIELDS}
    started = time.monotonic()
    for page_id, expected in list(truth.items())[:limit]:
        answer = {name: expected[name][0] for name in DATASET_FIELDS if expected.get(name)}
        if not answer:
            continue
        schema = {"type": "object", "properties": {name: {"type": "string"} for name in answer}}
        if "price" in answer:  # a price as a model gives it for a number field
            try:
                answer["price"] = float(answer["price"].replace(",", ""))
                schema["properties"]["price"] = {"type": "number"}
            except ValueError:
                pass
        html = gzip.decompress((DATASET / "html" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
        result = compile_answer(html, expected.get("url"), schema, answer)
        pages += 1
        for name in answer:
            per_field[name][1] += 1
            if result.fields.get(name) == RULE:
                per_field[name][0] += 1
        asked += len(answer)
        compiled += result.rule_count
    elapsed = time.monotonic() - started
    print(
        f"product-extraction: {compiled}/{asked} fields compiled and verified on {pages} pages "
        f"({elapsed / max(pages, 1) * 1000:.0f} ms a page); "
        + ", ".join(f"{name} {done}/{of}" for name, (done, of) in per_field.items())
    )
    figures = {"product-extraction: fields compiled and verified": round(compiled / asked, 3)}
    figures |= {f"product-extraction: {name} compiled": f"{done}/{of}" for name, (done, of) in per_field.items()}
    figures["product-extraction: compile ms a page"] = round(elapsed / max(pages, 1) * 1000)
    return figures


def figures(full: bool = False) -> Result:
    pages = 50 if full else 12
    return Result(f"{pages} pages a template", shop_figures(pages, 0.0) | dataset_figures(None if full else 40))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=50, help="Product pages a template (default 50).")
    parser.add_argument("--model-latency", type=float, default=0.0, help="Seconds the model takes an answer.")
    args = parser.parse_args()
    result = Result(f"{args.pages} pages a template", shop_figures(args.pages, args.model_latency) | dataset_figures())
    print_table(rows("compiled_replay", result))


if __name__ == "__main__":
    main()
