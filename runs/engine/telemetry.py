"""What the engine reports to whoever listens, without knowing who: the service counts it (runs/metrics.py).

report(what, detail): "guard_refused" (detail: the refusal's code), "browser_launched", "browser_crashed".
A listener that fails is logged and never fails the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

Listener = Callable[[str, str], None]
_listeners: list[Listener] = []


def listen(listener: Listener) -> None:
    if listener not in _listeners:
        _listeners.append(listener)


def report(what: str, detail: str = "") -> None:
    for listener in _listeners:
        try:
            listener(what, detail)
        except Exception:
            log.exception("telemetry listener failed on %s", what)
