import type { Run } from "../api/types";

/** 850 ms, 4.2 s, 3 min 05 s, 2 h 04 min. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${String(Math.round(seconds % 60)).padStart(2, "0")} s`;
  const hours = Math.floor(minutes / 60);
  return `${hours} h ${String(minutes % 60).padStart(2, "0")} min`;
}

/** How long a run took (finished) or has taken so far (running); null while queued. */
export function runDurationMs(run: Pick<Run, "startedAt" | "finishedAt">, now: number = Date.now()): number | null {
  if (!run.startedAt) return null;
  const start = Date.parse(run.startedAt);
  const end = run.finishedAt ? Date.parse(run.finishedAt) : now;
  return Math.max(0, end - start);
}

const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : absolute.format(date);
}

export function formatRelative(iso: string | null | undefined, now: number = Date.now()): string {
  if (!iso) return "never";
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return iso;
  const seconds = Math.round((then - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return "just now";
  if (abs < 2700) return relative.format(Math.round(seconds / 60), "minute");
  if (abs < 86400 * 1.5) return relative.format(Math.round(seconds / 3600), "hour");
  if (abs < 86400 * 30) return relative.format(Math.round(seconds / 86400), "day");
  return formatDateTime(iso);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function formatCount(value: number | undefined, noun: string): string {
  const n = value ?? 0;
  return `${n.toLocaleString()} ${noun}${n === 1 ? "" : "s"}`;
}

export function shortId(id: string): string {
  return id.slice(0, 8);
}

/** What a run was about, in a few words: the query name, the goal, or nothing. */
export function runSubject(run: Pick<Run, "query" | "spec" | "kind">): string {
  if (run.query) return run.query;
  if (run.kind === "agent" && run.spec.goal) return run.spec.goal;
  if (run.kind === "extract" && run.spec.instruction) return run.spec.instruction;
  return "";
}
