// The history's filter lives in its URL (/history?kind=…&status=…&query=…); the last one used is remembered
// for this tab so that the Export screen can offer "the history's current filter".

import type { RunFilter } from "../api/endpoints";
import { RUN_KINDS, RUN_STATUSES, type RunKind, type RunStatus } from "../api/types";

const STORAGE_KEY = "wds.historyFilter";

export function filterFromSearch(search: URLSearchParams): RunFilter {
  const kind = search.get("kind") ?? "";
  const status = search.get("status") ?? "";
  return {
    kind: (RUN_KINDS as readonly string[]).includes(kind) ? (kind as RunKind) : "",
    status: (RUN_STATUSES as readonly string[]).includes(status) ? (status as RunStatus) : "",
    query: search.get("query") ?? "",
    since: search.get("since") ?? "",
    until: search.get("until") ?? "",
  };
}

export function searchFromFilter(filter: RunFilter): URLSearchParams {
  const search = new URLSearchParams();
  if (filter.kind) search.set("kind", filter.kind);
  if (filter.status) search.set("status", filter.status);
  if (filter.query?.trim()) search.set("query", filter.query.trim());
  if (filter.since) search.set("since", filter.since);
  if (filter.until) search.set("until", filter.until);
  return search;
}

export function rememberHistoryFilter(filter: RunFilter): void {
  try {
    sessionStorage.setItem(STORAGE_KEY, searchFromFilter(filter).toString());
  } catch {
    // storage may be unavailable (private mode); the filter is still in the URL
  }
}

/** "?kind=…" of the last history filter, or "". */
export function historySearch(): string {
  try {
    const text = sessionStorage.getItem(STORAGE_KEY) ?? "";
    return text ? `?${text}` : "";
  } catch {
    return "";
  }
}

export function describeFilter(filter: RunFilter): string {
  const parts: string[] = [];
  if (filter.kind) parts.push(`kind ${filter.kind}`);
  if (filter.status) parts.push(`status ${filter.status}`);
  if (filter.query?.trim()) parts.push(`query “${filter.query.trim()}”`);
  if (filter.since) parts.push(`since ${filter.since}`);
  if (filter.until) parts.push(`until ${filter.until}`);
  return parts.length ? parts.join(", ") : "all runs";
}
