// Talking to /api with the playground's session cookie. Every unsafe request echoes the csrftoken cookie in
// X-CSRFToken; every failure becomes an ApiError with a sentence a person can read.

export type FieldErrors = Record<string, string[]>;

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly fields: FieldErrors;

  constructor(status: number, code: string, message: string, fields: FieldErrors = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.fields = fields;
  }

  /** The first message for a field name, also matching nested names ("options.timeoutMs" for "options"). */
  field(name: string): string | undefined {
    const exact = this.fields[name];
    if (exact?.length) return exact[0];
    const nested = Object.entries(this.fields).find(([key]) => key.startsWith(name + "."));
    return nested ? `${nested[0].slice(name.length + 1)}: ${nested[1][0] ?? ""}` : undefined;
  }
}

const STATUS_SENTENCES: Record<number, string> = {
  400: "The service could not accept this request.",
  401: "You are not signed in, or your key has been revoked.",
  403: "The service refused this request.",
  404: "Not found.",
  405: "This action is not allowed here.",
  409: "This conflicts with something that already exists.",
  413: "The request is too large.",
  429: "Too many requests; try again in a moment.",
  500: "The service hit an unexpected error.",
  502: "The service (or a page it contacted) answered badly.",
  503: "The service is not available right now.",
  504: "The service took too long to answer.",
};

export function statusSentence(status: number): string {
  return STATUS_SENTENCES[status] ?? `The service answered with HTTP ${status}.`;
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown; fields?: unknown };
}

function readFields(raw: unknown): FieldErrors {
  if (!raw || typeof raw !== "object") return {};
  const fields: FieldErrors = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (Array.isArray(value)) fields[key] = value.map(String);
    else if (value != null) fields[key] = [String(value)];
  }
  return fields;
}

/** An ApiError from a response that is not ok; never shows raw JSON or HTML to the user. */
export async function errorFromResponse(response: Response): Promise<ApiError> {
  let body: ErrorBody | null = null;
  try {
    const text = await response.text();
    body = text ? (JSON.parse(text) as ErrorBody) : null;
  } catch {
    body = null;
  }
  const error = body && typeof body === "object" ? body.error : undefined;
  const code = typeof error?.code === "string" ? error.code : `http_${response.status}`;
  let message = typeof error?.message === "string" && error.message ? error.message : statusSentence(response.status);
  if (response.status === 403 && /csrf/i.test(message)) {
    message = "Your session's security token is missing or out of date. Reload the page and try again.";
  }
  return new ApiError(response.status, code, message, readFields(error?.fields));
}

export function csrfToken(cookies: string = typeof document === "undefined" ? "" : document.cookie): string | null {
  for (const part of cookies.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === "csrftoken") return decodeURIComponent(rest.join("="));
  }
  return null;
}

type UnauthorizedListener = () => void;
let onUnauthorized: UnauthorizedListener | null = null;

/** The session context listens here: any 401 means this browser is signed out. */
export function setUnauthorizedListener(listener: UnauthorizedListener | null): void {
  onUnauthorized = listener;
}

export function notifyUnauthorized(): void {
  onUnauthorized?.();
}

export interface RequestOptions {
  method?: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  body?: unknown;
  signal?: AbortSignal;
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

async function send(path: string, options: RequestOptions): Promise<Response> {
  const method = options.method ?? "GET";
  const headers: Record<string, string> = { Accept: "application/json" };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  if (UNSAFE.has(method)) {
    const token = csrfToken();
    if (token) headers["X-CSRFToken"] = token;
  }
  try {
    return await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") throw error;
    throw new ApiError(0, "network_error", "Cannot reach the service. Check that it is running, then try again.");
  }
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  let response = await send(path, options);
  if (response.status === 403 && UNSAFE.has(options.method ?? "GET") && !csrfToken()) {
    // No CSRF cookie yet (a cleared cookie jar): GET /api/session sets one; try once more.
    await fetch("/api/session", { credentials: "same-origin" });
    response = await send(path, options);
  }
  if (!response.ok) {
    const error = await errorFromResponse(response);
    if (response.status === 401 && path !== "/api/session") notifyUnauthorized();
    throw error;
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A readable sentence for anything thrown. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error && error.message) return error.message;
  return "Something went wrong.";
}

/** Path and query of an absolute `next`/`previous` URL from a paginated answer (same origin). */
export function relativeUrl(url: string): string {
  const parsed = new URL(url, "http://placeholder.invalid");
  return parsed.pathname + parsed.search;
}

export function cursorOf(url: string | null): string | null {
  if (!url) return null;
  return new URL(url, "http://placeholder.invalid").searchParams.get("cursor");
}

export function query(params: Record<string, string | number | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}
