// The JSON shapes of the service's API (DESIGN.md section 4, README "API").

export type RunKind = "fetch" | "extract" | "agent";
export type RunStatus = "queued" | "running" | "succeeded" | "failed" | "cancelled";
export type Render = "auto" | "browser" | "http";

export const RUN_KINDS: readonly RunKind[] = ["fetch", "extract", "agent"];
export const RUN_STATUSES: readonly RunStatus[] = ["queued", "running", "succeeded", "failed", "cancelled"];
export const FINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "cancelled"];

export function isFinal(status: RunStatus): boolean {
  return FINAL_STATUSES.includes(status);
}

export interface RunOptions {
  mainContent?: boolean;
  render?: Render;
  timeoutMs?: number;
  maxSteps?: number;
  screenshots?: boolean;
  waitFor?: string | null;
  model?: string;
}

export interface RunSpec {
  kind: RunKind;
  url: string;
  schema?: unknown;
  instruction?: string;
  goal?: string;
  cred?: string;
  saveProfile?: string;
  /** Replace the saveProfile profile if it exists (else the run is refused). */
  overwriteProfile?: boolean;
  profile?: string;
  storageStatePath?: string;
  options?: RunOptions;
}

export interface RunError {
  code: string;
  message: string;
}

export interface Drift {
  comparedWith: string | null;
  changed: string[];
  emptied: string[];
  appeared: string[];
}

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  browserMs?: number;
}

export interface Run {
  id: string;
  kind: RunKind;
  status: RunStatus;
  url: string;
  spec: RunSpec;
  query: string | null;
  batch: string | null;
  attempts: number;
  result: unknown;
  error: RunError | null;
  drift: Drift | null;
  usage: Usage;
  stepCount: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface Step {
  index: number;
  action: string;
  url: string;
  observation: string;
  screenshot: string | null;
  at: string;
  durationMs: number | null;
}

export interface RunDetail extends Run {
  steps: Step[];
}

export interface Page<T> {
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface FetchResult {
  url: string;
  finalUrl: string;
  status: number;
  title: string;
  markdown: string;
  links: string[];
  render?: Render;
  /** How far the browser got: "domcontentloaded" when the load event did not come in time. */
  loadState?: "load" | "domcontentloaded";
  /** The page was longer than the service reads: the result is of its beginning. */
  truncated?: boolean;
}

export interface SavedQuery {
  name: string;
  url: string;
  schema: unknown;
  instruction: string;
  runCount: number;
  lastRunAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export type ProfileStatus = "fresh" | "expiring" | "expired" | "session-only" | "empty";

export interface CookieSummary {
  cookieCount: number;
  domains: string[];
  earliestExpiry: string | null;
  expired: number;
  expiringWithin7Days: number;
  sessionOnly: number;
  originsWithStorage: number;
  status: ProfileStatus;
}

export interface Profile {
  name: string;
  updatedAt: string;
  size: number;
  cookies: CookieSummary;
}

export interface Session {
  signedIn: boolean;
  keyName: string | null;
}

// Frames of the /api/events WebSocket (DESIGN.md section 5).
interface FrameBase {
  eventId: number;
  runId: string;
  at?: string;
}

export interface RunQueuedFrame extends FrameBase {
  type: "run-queued";
  kind: RunKind;
}

export interface RunStartedFrame extends FrameBase {
  type: "run-started";
  attempt: number;
}

export interface StepFrame extends FrameBase {
  type: "step";
  index: number;
  action: string;
  url: string;
  observation: string;
  truncated?: boolean;
}

export interface ScreenshotFrame extends FrameBase {
  type: "screenshot";
  index: number;
  url: string;
}

export interface RunFinishedFrame extends FrameBase {
  type: "run-finished";
  status: RunStatus;
  error?: RunError;
}

export interface ResyncFrame {
  type: "resync";
  oldestEventId?: number;
}

export type RunFrame = RunQueuedFrame | RunStartedFrame | StepFrame | ScreenshotFrame | RunFinishedFrame;
export type EventFrame = RunFrame | ResyncFrame;
