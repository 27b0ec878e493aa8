import { describe, expect, it } from "vitest";
import type { RunDetail, RunFrame } from "../api/types";
import { applyFrame, applySnapshot, initialLiveState, type LiveState } from "./liveRun";

const RUN = "run-1";

function frames(...list: RunFrame[]): LiveState {
  return list.reduce(applyFrame, initialLiveState);
}

function detail(overrides: Partial<RunDetail>): RunDetail {
  return {
    id: RUN,
    kind: "fetch",
    status: "running",
    url: "https://example.com/",
    spec: { kind: "fetch", url: "https://example.com/" },
    query: null,
    batch: null,
    parent: null,
    attempts: 1,
    result: null,
    error: null,
    drift: null,
    usage: {},
    extractedBy: null,
    stepCount: 0,
    createdAt: "2026-01-01T00:00:00Z",
    startedAt: "2026-01-01T00:00:01Z",
    finishedAt: null,
    steps: [],
    ...overrides,
  };
}

describe("the live view's state", () => {
  it("builds steps and their screenshots from frames, in index order", () => {
    const state = frames(
      { type: "run-started", eventId: 1, runId: RUN, attempt: 1, at: "2026-01-01T00:00:01Z" },
      { type: "step", eventId: 3, runId: RUN, index: 1, action: "snapshot", url: "u", observation: "# Hi" },
      { type: "step", eventId: 2, runId: RUN, index: 0, action: "navigate", url: "u", observation: "HTTP 200" },
      { type: "screenshot", eventId: 4, runId: RUN, index: 0, url: "/api/runs/run-1/steps/0/screenshot" },
    );
    expect(state.status).toBe("running");
    expect(state.startedAt).toBe("2026-01-01T00:00:01Z");
    expect(state.steps.map((step) => [step.index, step.action, step.screenshot])).toEqual([
      [0, "navigate", "/api/runs/run-1/steps/0/screenshot"],
      [1, "snapshot", null],
    ]);
  });

  it("merges a read of the run with frames without duplicating steps", () => {
    const live = frames({
      type: "step",
      eventId: 2,
      runId: RUN,
      index: 0,
      action: "snapshot",
      url: "u",
      observation: "x".repeat(2000),
      truncated: true,
    });
    const merged = applySnapshot(
      live,
      detail({
        steps: [
          {
            index: 0,
            action: "snapshot",
            url: "u",
            observation: "x".repeat(5000),
            screenshot: null,
            page: null,
            at: "t",
            durationMs: 12,
          },
        ],
      }),
    );
    expect(merged.steps).toHaveLength(1);
    expect(merged.steps[0]?.observation).toHaveLength(5000);
    expect(merged.steps[0]?.truncated).toBe(false);
    // A late frame for the same step keeps the complete observation.
    const again = applyFrame(merged, {
      type: "step",
      eventId: 2,
      runId: RUN,
      index: 0,
      action: "snapshot",
      url: "u",
      observation: "x".repeat(2000),
      truncated: true,
    });
    expect(again.steps[0]?.observation).toHaveLength(5000);
  });

  it("never moves a finished run back, even when an older read arrives late", () => {
    const finished = frames({
      type: "run-finished",
      eventId: 9,
      runId: RUN,
      status: "failed",
      error: { code: "timeout", message: "Too slow." },
      at: "2026-01-01T00:01:00Z",
    });
    const stale = applySnapshot(finished, detail({ status: "running" }));
    expect(stale.status).toBe("failed");
    expect(stale.error?.code).toBe("timeout");
    expect(stale.finishedAt).toBe("2026-01-01T00:01:00Z");
  });

  it("counts retries", () => {
    const state = frames(
      { type: "run-started", eventId: 1, runId: RUN, attempt: 1 },
      { type: "run-started", eventId: 5, runId: RUN, attempt: 2 },
    );
    expect(state.attempt).toBe(2);
  });
});
