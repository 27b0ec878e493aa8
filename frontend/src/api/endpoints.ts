import { api, query } from "./client";
import type {
  DeliveryAttempt,
  Profile,
  Reextract,
  Run,
  RunDetail,
  RunKind,
  RunPage,
  RunSpec,
  RunStatus,
  QuerySchedule,
  SavedQuery,
  Session,
  WebhookCreated,
  WebhookEvent,
  WebhookHook,
} from "./types";

export const session = {
  get: () => api<Session>("/api/session"),
  signIn: (key: string) => api<Session>("/api/session", { method: "POST", body: { key } }),
  signOut: () => api<Session>("/api/session", { method: "DELETE" }),
};

export interface RunFilter {
  id?: string;
  kind?: RunKind | "";
  status?: RunStatus | "";
  query?: string;
  /** A crawl's pages: the crawl run's id. */
  parent?: string;
  since?: string;
  until?: string;
}

export function filterParams(filter: RunFilter): Record<string, string> {
  const params: Record<string, string> = {};
  if (filter.id) params.id = filter.id;
  if (filter.kind) params.kind = filter.kind;
  if (filter.status) params.status = filter.status;
  if (filter.query?.trim()) params.query = filter.query.trim();
  if (filter.parent) params.parent = filter.parent;
  if (filter.since) params.since = filter.since;
  if (filter.until) params.until = filter.until;
  return params;
}

export const runs = {
  submit: (spec: RunSpec) => api<Run>("/api/runs", { method: "POST", body: spec }),
  list: (filter: RunFilter, cursor: string | null, limit: number, signal?: AbortSignal) =>
    api<RunPage>(`/api/runs${query({ ...filterParams(filter), cursor, limit })}`, { signal }),
  get: (id: string, signal?: AbortSignal) => api<RunDetail>(`/api/runs/${encodeURIComponent(id)}`, { signal }),
  /** One run with its result and without its trace (a list of one, include=result). */
  withResult: async (id: string, signal?: AbortSignal) =>
    (await api<{ results: Run[] }>(`/api/runs${query({ id, include: "result", limit: 1 })}`, { signal })).results[0],
  cancel: (id: string) => api<Run>(`/api/runs/${encodeURIComponent(id)}/cancel`, { method: "POST" }),
  reextract: (id: string, changes: Reextract) =>
    api<Run>(`/api/runs/${encodeURIComponent(id)}/reextract`, { method: "POST", body: changes }),
};

export function exportUrl(format: "json" | "csv", filter: RunFilter): string {
  return `/api/export${query({ format, ...filterParams(filter) })}`;
}

export interface QueryEdit {
  url: string;
  schema: unknown;
  instruction: string;
}

export const queries = {
  list: () => api<SavedQuery[]>("/api/queries"),
  get: (name: string) => api<SavedQuery>(`/api/queries/${encodeURIComponent(name)}`),
  fromRun: (name: string, runId: string) =>
    api<SavedQuery>("/api/queries", { method: "POST", body: { name, fromRun: runId } }),
  create: (name: string, edit: QueryEdit) =>
    api<SavedQuery>("/api/queries", { method: "POST", body: { name, ...edit } }),
  update: (name: string, edit: QueryEdit) =>
    api<SavedQuery>(`/api/queries/${encodeURIComponent(name)}`, { method: "PUT", body: edit }),
  schedule: (name: string, schedule: QuerySchedule | null) =>
    api<SavedQuery>(`/api/queries/${encodeURIComponent(name)}`, { method: "PATCH", body: { schedule } }),
  remove: (name: string) => api<void>(`/api/queries/${encodeURIComponent(name)}`, { method: "DELETE" }),
  run: (name: string, overrides: { url?: string; instruction?: string }) =>
    api<Run>(`/api/queries/${encodeURIComponent(name)}/run`, { method: "POST", body: overrides }),
};

export const webhooks = {
  list: () => api<WebhookHook[]>("/api/webhooks"),
  create: (body: { url: string; events: WebhookEvent[]; query?: string }) =>
    api<WebhookCreated>("/api/webhooks", { method: "POST", body }),
  remove: (id: string) => api<void>(`/api/webhooks/${encodeURIComponent(id)}`, { method: "DELETE" }),
  deliveries: (id: string) => api<DeliveryAttempt[]>(`/api/webhooks/${encodeURIComponent(id)}/deliveries`),
};

export const profiles = {
  list: () => api<Profile[]>("/api/profiles"),
  importState: (name: string, state: unknown, overwrite: boolean) =>
    api<Profile>("/api/profiles/import", { method: "POST", body: { name, state, overwrite } }),
  remove: (name: string) => api<void>(`/api/profiles/${encodeURIComponent(name)}`, { method: "DELETE" }),
};
