from __future__ import annotations

from dataclasses import dataclass, field

from runs.engine.spec import RunAborted


@dataclass
class ListRecorder:
    """Keeps steps in memory; `abort_after` checkpoints simulates a cancel."""

    steps: list[dict] = field(default_factory=list)
    checkpoints: int = 0
    abort_after: int | None = None

    def step(self, *, action, url, observation, screenshot, duration_ms, page=None) -> None:
        self.steps.append(
            {
                "action": action,
                "url": url,
                "observation": observation,
                "screenshot": screenshot,
                "ms": duration_ms,
                "page": page,
            }
        )

    def checkpoint(self) -> None:
        self.checkpoints += 1
        if self.abort_after is not None and self.checkpoints > self.abort_after:
            raise RunAborted()
