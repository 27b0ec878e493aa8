// One run as the same CSV that GET /api/export?format=csv writes (runs/export.py): the run's own columns, then
// one column per dotted result field, one row per result record. Used for "export this run" (the export API
// has no id filter), so a single run exports exactly like the history does.

import type { Run } from "../api/types";

const RUN_COLUMNS = ["runId", "kind", "url", "status", "createdAt"] as const;
const VALUE_COLUMN = "result";
const RESERVED = new Set<string>([...RUN_COLUMNS, VALUE_COLUMN]);
// OWASP's list of cell openings a spreadsheet may take for a formula.
const FORMULA_STARTS = ["=", "+", "-", "@", "\t", "\r"];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isPlainObject(value: unknown): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A run's result as records: its objects, or one value (also for no result, so every run has a row). */
export function resultRecords(result: unknown): unknown[] {
  if (Array.isArray(result) && result.length > 0 && result.every(isPlainObject)) return result;
  return [result];
}

/** (dotted name, value) of every field: nested objects are walked; lists and empty objects are values. */
export function leaves(
  record: Record<string, unknown>,
  prefix = "",
  into: [string, unknown][] = [],
): [string, unknown][] {
  for (const [key, item] of Object.entries(record)) {
    if (isPlainObject(item) && Object.keys(item).length > 0) leaves(item, `${prefix}${key}.`, into);
    else into.push([prefix + key, item]);
  }
  return into;
}

export function resultColumn(name: string): string {
  return RESERVED.has(name) || name.startsWith("result.") ? `result.${name}` : name;
}

export function textCell(text: string): string {
  let value = text;
  if (FORMULA_STARTS.some((start) => value.startsWith(start))) value = "'" + value;
  if (/[",\n\r]/.test(value)) return '"' + value.replace(/"/g, '""') + '"';
  return value;
}

export function cell(value: unknown): string {
  if (typeof value === "string") return textCell(value);
  if (value === null || value === undefined) return "";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") return String(value);
  return textCell(JSON.stringify(value));
}

export function runsToCsv(runs: Pick<Run, "id" | "kind" | "url" | "status" | "createdAt" | "result">[]): string {
  const header: string[] = [...RUN_COLUMNS];
  const indexOf = new Map<string | null, number>();
  for (const run of runs) {
    for (const record of resultRecords(run.result)) {
      let names: (string | null)[];
      if (isPlainObject(record)) names = leaves(record).map(([name]) => name);
      else if (record !== null && record !== undefined) names = [null];
      else continue;
      for (const name of names) {
        if (!indexOf.has(name)) {
          indexOf.set(name, header.length);
          header.push(name === null ? VALUE_COLUMN : resultColumn(name));
        }
      }
    }
  }
  const lines = [header.map(textCell).join(",")];
  const valueIndex = indexOf.get(null);
  for (const run of runs) {
    const runCells = [run.id, run.kind, textCell(run.url), run.status, run.createdAt];
    for (const record of resultRecords(run.result)) {
      const row = [...runCells, ...new Array<string>(header.length - RUN_COLUMNS.length).fill("")];
      if (isPlainObject(record)) {
        for (const [name, value] of leaves(record)) {
          const index = indexOf.get(name);
          if (index !== undefined) row[index] = cell(value);
        }
      } else if (record !== null && record !== undefined && valueIndex !== undefined) {
        row[valueIndex] = cell(record);
      }
      lines.push(row.join(","));
    }
  }
  return lines.join("\r\n") + "\r\n";
}

/** Offer text as a file download. */
export function downloadText(filename: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
