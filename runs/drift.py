"""How a saved query's result changed since its previous successful replay: pages change shape silently."""

from __future__ import annotations

from typing import Any


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves by dotted path: {"a": {"b": 1}, "c": [{"d": 2}]} -> {"a.b": 1, "c.0.d": 2}. Empty containers are
    leaves (an emptied list is worth reporting)."""
    if isinstance(value, dict) and value:
        items = value.items()
    elif isinstance(value, list) and value:
        items = ((str(index), item) for index, item in enumerate(value))
    else:
        return {prefix: value} if prefix else {}
    leaves: dict[str, Any] = {}
    for key, item in items:
        leaves.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return leaves


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def result_drift(previous: Any, current: Any) -> dict[str, list[str]]:
    """changed: fields with a value both times, but another one now; emptied: fields that had a value and now are
    missing or empty; appeared: fields that were missing or empty and now have a value."""
    before, after = _flatten(previous), _flatten(current)
    changed, emptied, appeared = [], [], []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if _is_empty(old) and _is_empty(new):
            continue
        if _is_empty(new):
            emptied.append(path)
        elif _is_empty(old):
            appeared.append(path)
        elif old != new:
            changed.append(path)
    return {"changed": changed, "emptied": emptied, "appeared": appeared}
