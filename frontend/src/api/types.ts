// The JSON shapes of the service's API (DESIGN.md section 4): generated from its OpenAPI document into schema.d.ts
// (`make api-types`; a test fails when that file is stale), named here for the pages. The WebSocket frames below are
// not in the OpenAPI document and are written by hand.

import type { components } from "./schema";

type Schemas = components["schemas"];

export type RunKind = Schemas["RunKindEnum"];
export type RunStatus = Schemas["RunStatusEnum"];
export type Render = Schemas["RenderEnum"];
export type CrawlOptions = Schemas["CrawlOptions"];
export type CrawlScope = Schemas["ScopeEnum"];
export type CrawlSitemap = Schemas["SitemapEnum"];

/** Every member of a union, once: a list that misses one (or names another) does not compile. */
function allOf<T extends string>() {
  return <const L extends readonly T[]>(list: L & ([T] extends [L[number]] ? unknown : "misses a member")) => list;
}

export const RUN_KINDS: readonly RunKind[] = allOf<RunKind>()(["fetch", "extract", "agent", "crawl"]);
export const RUN_STATUSES: readonly RunStatus[] = allOf<RunStatus>()([
  "queued",
  "running",
  "succeeded",
  "failed",
  "cancelled",
]);
export const FINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "cancelled"];

export function isFinal(status: RunStatus): boolean {
  return FINAL_STATUSES.includes(status);
}

/** A run's spec as the service keeps it; what the form sends (one shape per kind) is checked by the service. */
export type RunSpec = Schemas["RunSpec"];
export type RunOptions = Schemas["Options"];
export type RunError = Schemas["RunError"];
export type Drift = Schemas["Drift"];
export type Usage = Schemas["Usage"];
export type Run = Schemas["Run"];
export type ExtractedBy = Schemas["ExtractedByEnum"];
export type Step = Schemas["Step"];
export type ArchivedPage = Schemas["ArchivedPage"];
export type Reextract = Schemas["ReextractRequest"];
export type RunDetail = Schemas["RunDetail"];
export type RunSummary = Schemas["RunSummary"];
/** A page of GET /api/runs as the playground asks for it: summaries (it never sends include=result). */
export type RunPage = Omit<Schemas["PaginatedRunListItemList"], "results"> & { results: RunSummary[] };
export type FetchResult = Schemas["FetchResponse"];
export type SavedQuery = Schemas["SavedQuery"];
export type QuerySchedule = Schemas["QuerySchedule"];
export type WebhookHook = Schemas["Webhook"];
export type WebhookCreated = Schemas["WebhookCreated"];
export type WebhookEvent = Schemas["WebhookCreateRequest"]["events"][number];
export type DeliveryAttempt = Schemas["DeliveryAttempt"];
export type ProfileStatus = Schemas["CookieSummaryStatusEnum"];
export type CookieSummary = Schemas["CookieSummary"];
export type Profile = Schemas["Profile"];
export type Session = Schemas["Session"];

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
