// The live view's state: a run's steps and status built from event frames and from full reads of the run.
// Both sources overlap (a read after connecting repeats what frames said, a replay repeats a read), so every
// update is keyed: steps by index, status only moves forward.

import type { ArchivedPage, RunDetail, RunError, RunFrame, RunStatus } from "../api/types";
import { isFinal } from "../api/types";

export interface LiveStep {
  index: number;
  action: string;
  url: string;
  observation: string;
  /** The frame carried only the first 2000 characters; the run detail has all of it. */
  truncated: boolean;
  screenshot: string | null;
  /** The page the step loaded, archived (a run detail says; frames do not). */
  page?: ArchivedPage | null;
  at: string | null;
  durationMs: number | null;
}

export interface LiveState {
  status: RunStatus | null;
  error: RunError | null;
  attempt: number;
  steps: LiveStep[];
  startedAt: string | null;
  finishedAt: string | null;
}

export const initialLiveState: LiveState = {
  status: null,
  error: null,
  attempt: 0,
  steps: [],
  startedAt: null,
  finishedAt: null,
};

const RANK: Record<RunStatus, number> = { queued: 0, running: 1, succeeded: 2, failed: 2, cancelled: 2 };

function advance(current: RunStatus | null, next: RunStatus): RunStatus {
  if (current === null) return next;
  if (isFinal(current)) return current; // a finished run stays finished
  return RANK[next] >= RANK[current] ? next : current;
}

function upsertStep(steps: LiveStep[], index: number, update: (step: LiveStep | undefined) => LiveStep): LiveStep[] {
  const position = steps.findIndex((step) => step.index === index);
  if (position >= 0) {
    const copy = steps.slice();
    copy[position] = update(steps[position]);
    return copy;
  }
  const added = [...steps, update(undefined)];
  added.sort((a, b) => a.index - b.index);
  return added;
}

function blankStep(index: number): LiveStep {
  return {
    index,
    action: "",
    url: "",
    observation: "",
    truncated: false,
    screenshot: null,
    at: null,
    durationMs: null,
  };
}

export function applyFrame(state: LiveState, frame: RunFrame): LiveState {
  switch (frame.type) {
    case "run-queued":
      return { ...state, status: advance(state.status, "queued") };
    case "run-started":
      return {
        ...state,
        status: advance(state.status, "running"),
        attempt: Math.max(state.attempt, frame.attempt),
        startedAt: state.startedAt ?? frame.at ?? null,
      };
    case "step":
      return {
        ...state,
        status: advance(state.status, "running"),
        steps: upsertStep(state.steps, frame.index, (existing) => {
          // A full observation from a read of the run beats the frame's cut one.
          const keepExisting = existing && existing.action !== "" && !existing.truncated;
          return {
            ...(existing ?? blankStep(frame.index)),
            action: frame.action,
            url: frame.url,
            observation: keepExisting ? existing.observation : frame.observation,
            truncated: keepExisting ? false : Boolean(frame.truncated),
            at: existing?.at ?? frame.at ?? null,
          };
        }),
      };
    case "screenshot":
      return {
        ...state,
        steps: upsertStep(state.steps, frame.index, (existing) => ({
          ...(existing ?? blankStep(frame.index)),
          screenshot: frame.url,
        })),
      };
    case "run-finished":
      return {
        ...state,
        status: advance(state.status, frame.status),
        error: state.error ?? frame.error ?? null,
        finishedAt: state.finishedAt ?? frame.at ?? null,
      };
    default:
      return state;
  }
}

export function applySnapshot(state: LiveState, run: RunDetail): LiveState {
  let steps = state.steps;
  for (const step of run.steps) {
    steps = upsertStep(steps, step.index, (existing) => ({
      index: step.index,
      action: step.action,
      url: step.url,
      observation: step.observation,
      truncated: false,
      screenshot: step.screenshot ?? existing?.screenshot ?? null,
      at: step.at,
      durationMs: step.durationMs,
    }));
  }
  return {
    status: advance(state.status, run.status),
    error: run.error ?? state.error,
    attempt: Math.max(state.attempt, run.attempts),
    steps,
    startedAt: run.startedAt ?? state.startedAt,
    finishedAt: run.finishedAt ?? state.finishedAt,
  };
}
