"""Train the page-type classifier (runs/engine/page_type.py) on the WCXB development split and write its weights to
runs/engine/page_type_weights.py.

    .venv/bin/python -m tests.bench.train_page_type [--check]

Trained on half of the split (tests/datasets.py's wcxb_halves: files sorted by id, even positions) and reported on
both halves, so the held-out figure is not fitted to itself, and on the held-out pages of sites with no page in the
tuning half; the weights shipped are those of that half-split model. A multinomial logistic
regression with L2, by plain stochastic gradient descent on standardised features (folded back into the weights
written). --check prints the accuracies of the shipped weights without training.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

from runs.engine import page_type
from tests.datasets import DATASETS, wcxb_halves

DATASET = DATASETS / "wcxb-dev"
WEIGHTS_FILE = Path(page_type.__file__).with_name("page_type_weights.py")


def pages() -> list[tuple[str, str, dict[str, float]]]:
    """(half, labelled type, features) of every page of the split, sorted by id; half as wcxb_halves gives it."""
    halves = wcxb_halves()
    found = []
    for truth_file in sorted((DATASET / "ground-truth").glob("*.json")):
        truth = json.loads(truth_file.read_text())
        html = gzip.decompress((DATASET / "html" / f"{truth_file.stem}.html.gz").read_bytes()).decode(
            "utf-8", "replace"
        )
        label = truth["_internal"]["page_type"]["primary"]
        url = truth.get("url")
        found.append((halves[truth_file.stem], label, page_type.features(html, url)))
    return found


def train(rows: list[tuple[str, dict[str, float]]], names: list[str], *, epochs: int, l2: float, seed: int = 7):
    """Weights and biases in the raw feature scale."""
    kinds = page_type.TYPES
    columns = [[found.get(name, 0.0) for _, found in rows] for name in names]
    means = [statistics.fmean(column) for column in columns]
    spreads = [statistics.pstdev(column) or 1.0 for column in columns]
    data = [
        (
            [(found.get(name, 0.0) - mean) / spread for name, mean, spread in zip(names, means, spreads, strict=True)],
            kinds.index(label),
        )
        for label, found in rows
    ]
    weights = [[0.0] * len(names) for _ in kinds]
    biases = [0.0] * len(kinds)
    shuffle = random.Random(seed)
    for epoch in range(epochs):
        rate = 0.05 / (1 + epoch / 20)
        shuffle.shuffle(data)
        for x, y in data:
            logits = [
                b + sum(w * v for w, v in zip(row, x, strict=True)) for row, b in zip(weights, biases, strict=True)
            ]
            top = max(logits)
            exp = [math.exp(value - top) for value in logits]
            total = sum(exp)
            for k, row in enumerate(weights):
                error = exp[k] / total - (1.0 if k == y else 0.0)
                biases[k] -= rate * error
                for j, v in enumerate(x):
                    row[j] -= rate * (error * v + l2 * row[j])
    raw_weights = {
        kind: {name: round(w / spread, 5) for name, w, spread in zip(names, row, spreads, strict=True) if abs(w) > 1e-4}
        for kind, row in zip(kinds, weights, strict=True)
    }
    raw_bias = {
        kind: round(b - sum(w * mean / spread for w, mean, spread in zip(row, means, spreads, strict=True)), 5)
        for kind, row, b in zip(kinds, weights, biases, strict=True)
    }
    return raw_bias, raw_weights


def accuracy(rows, bias, weights) -> tuple[float, Counter]:
    confusions: Counter = Counter()
    right = 0
    for label, found in rows:
        logits = {kind: bias[kind] + sum(w * found.get(n, 0.0) for n, w in weights[kind].items()) for kind in bias}
        guess = max(logits, key=logits.get)
        right += guess == label
        confusions[(label, guess)] += 1
    return right / len(rows), confusions


def write(bias, weights) -> None:
    lines = [
        '"""Page-type classifier weights, written by tests/bench/train_page_type.py (do not edit by hand)."""',
        "",
        f"TYPES = {tuple(page_type.TYPES)!r}",
        f"BIAS = {json.dumps(bias, indent=4)}",
        f"WEIGHTS: dict[str, dict[str, float]] = {json.dumps(weights, indent=4)}",
        "",
    ]
    WEIGHTS_FILE.write_text("\n".join(lines))
    # In the repository's style, as `make lint` checks it.
    subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", str(WEIGHTS_FILE)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--l2", type=float, default=1e-2)
    args = parser.parse_args()
    everything = pages()
    tuning = [(label, found) for half, label, found in everything if half == "tuning"]
    held_out = [(label, found) for half, label, found in everything if half.startswith("held-out")]
    other_sites = [(label, found) for half, label, found in everything if half == "held-out"]
    if args.check:
        from runs.engine.page_type_weights import BIAS, WEIGHTS

        bias, weights = BIAS, WEIGHTS
    else:
        names = sorted({name for _, found in tuning for name in found} - {"bias"})
        bias, weights = train(tuning, names, epochs=args.epochs, l2=args.l2)
        write(bias, weights)
    for label, rows in (("tuning half", tuning), ("held-out half", held_out), ("held-out, other sites", other_sites)):
        share, confusions = accuracy(rows, bias, weights)
        print(f"{label}: accuracy {share:.3f} on {len(rows)} pages")
        wrong = Counter({pair: n for pair, n in confusions.items() if pair[0] != pair[1]})
        print("  most confused (label, guess):", wrong.most_common(8))


if __name__ == "__main__":
    main()
