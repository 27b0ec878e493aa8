import type { ReactNode } from "react";
import { ApiError, describeError } from "../api/client";
import type { ExtractedBy, ProfileStatus, RunKind, RunStatus, SavedQuery } from "../api/types";
import { formatDateTime, formatRelative } from "../lib/format";

const STATUS_LABELS: Record<RunStatus, string> = {
  queued: "Queued",
  running: "Running",
  succeeded: "Succeeded",
  failed: "Failed",
  cancelled: "Cancelled",
};

export function StatusBadge({ status }: { status: RunStatus }) {
  return (
    <span className={`badge status status-${status}`} data-status={status}>
      <span className="dot" aria-hidden="true" />
      {STATUS_LABELS[status]}
    </span>
  );
}

export function KindBadge({ kind }: { kind: RunKind }) {
  return <span className={`badge kind kind-${kind}`}>{kind}</span>;
}

const EXTRACTED_BY: Record<ExtractedBy, [string, string]> = {
  rules: ["rules", "Extracted by rules alone: no model call."],
  mixed: ["rules + model", "The saved query's compiled rules, and the model for the fields they do not fill."],
  model: ["model", "Extracted by the model."],
};

/** Who filled an extract run's result (shown when it was not the model alone). */
export function ExtractedByBadge({ by }: { by: ExtractedBy | null }) {
  if (!by || by === "model") return null;
  const [label, hint] = EXTRACTED_BY[by];
  return (
    <span className={`badge extracted extracted-${by}`} title={hint} data-extracted-by={by}>
      {label}
    </span>
  );
}

/** A saved query whose answers compiled into rules: its replays need no model while the page keeps its layout. */
export function CompiledBadge({ query }: { query: SavedQuery }) {
  if (!query.compiled) return null;
  const rules = Object.values(query.compiled.fields).filter((who) => who === "rule").length;
  const all = Object.keys(query.compiled.fields).length;
  const text = rules === all ? "compiled — replays without a model" : `compiled — ${rules} of ${all} fields by rules`;
  return (
    <span className="badge compiled" title={`Rules verified ${query.compiled.verifiedAt ?? ""}`} data-compiled>
      {text}
    </span>
  );
}

const PROFILE_LABELS: Record<ProfileStatus, string> = {
  fresh: "Fresh",
  expiring: "Expiring",
  expired: "Expired",
  "session-only": "Session only",
  empty: "Empty",
};

const PROFILE_HINTS: Record<ProfileStatus, string> = {
  fresh: "Every persistent cookie is valid for more than 7 days.",
  expiring: "Some cookies expire within 7 days (or already have).",
  expired: "Every cookie has expired: log in again.",
  "session-only": "Only session cookies: they may be refused after a while.",
  empty: "No cookies at all.",
};

export function ProfileBadge({ status }: { status: ProfileStatus }) {
  return (
    <span className={`badge profile profile-${status}`} title={PROFILE_HINTS[status]} data-status={status}>
      <span className="dot" aria-hidden="true" />
      {PROFILE_LABELS[status]}
    </span>
  );
}

export function Time({ iso, relative = true }: { iso: string | null | undefined; relative?: boolean }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={formatDateTime(iso)}>
      {relative ? formatRelative(iso) : formatDateTime(iso)}
    </time>
  );
}

/** An API error (or anything thrown) as a readable message; field errors listed below it. */
export function ErrorBanner({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const fields = error instanceof ApiError ? Object.entries(error.fields) : [];
  const message = describeError(error);
  const first = fields[0]?.[1][0];
  const repeated = fields.length === 1 && first !== undefined && message.endsWith(first);
  return (
    <div className="banner banner-error" role="alert">
      {title && <strong className="banner-title">{title}</strong>}
      <p>{message}</p>
      {fields.length > 0 && !repeated && (
        <ul className="field-list">
          {fields.map(([name, messages]) => (
            <li key={name}>
              <code>{name}</code>: {messages.join(" ")}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Notice({ children, tone = "info" }: { children: ReactNode; tone?: "info" | "success" | "warning" }) {
  return (
    <div className={`banner banner-${tone}`} role="status">
      {children}
    </div>
  );
}

interface FieldProps {
  id: string;
  label: ReactNode;
  hint?: ReactNode;
  error?: string | null;
  children: ReactNode;
  className?: string;
}

/** A labelled form control with its hint and error; the control should use describedBy(id, …). */
export function Field({ id, label, hint, error, children, className }: FieldProps) {
  return (
    <div className={`field${error ? " has-error" : ""}${className ? ` ${className}` : ""}`}>
      <label htmlFor={id}>{label}</label>
      {children}
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {error && (
        <p className="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

interface SelectFieldProps<T extends string | number> {
  id: string;
  label: ReactNode;
  value: T;
  options: readonly { value: T; label: string }[];
  onChange(value: T): void;
}

/** A labelled <select> offering one choice of `options`; onChange gets the chosen option's value, of its own type. */
export function SelectField<T extends string | number>({ id, label, value, options, onChange }: SelectFieldProps<T>) {
  function choose(chosen: string) {
    const option = options.find((candidate) => String(candidate.value) === chosen);
    if (option) onChange(option.value);
  }
  return (
    <Field id={id} label={label}>
      <select id={id} value={value} onChange={(event) => choose(event.target.value)}>
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
    </Field>
  );
}

export function describedBy(id: string, hint: unknown, error: unknown): string | undefined {
  const ids = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean);
  return ids.length ? ids.join(" ") : undefined;
}

export function Loading({ label = "Loading…" }: { label?: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children && <div className="empty-body">{children}</div>}
    </div>
  );
}

export function PageHeader({
  title,
  subtitle,
  actions,
}: {
  title: ReactNode;
  subtitle?: ReactNode;
  actions?: ReactNode;
}) {
  return (
    <header className="page-header">
      <div className="page-heading">
        <h1>{title}</h1>
        {subtitle && <p className="subtitle">{subtitle}</p>}
      </div>
      {actions && <div className="page-actions">{actions}</div>}
    </header>
  );
}

const ERROR_TITLES: Record<string, string> = {
  http_error: "The page answered with an HTTP error",
  timeout: "Timed out",
  dns_error: "The host name was not found",
  connection_refused: "The connection was refused",
  not_html: "Not an HTML page",
  url_not_allowed: "This address is not allowed",
  navigation_error: "The page could not be loaded",
  worker_lost: "The worker stopped",
  cancelled: "Cancelled",
  schema_mismatch: "The result does not match the schema",
  model_auth_error: "The model provider refused the key",
  model_rate_limited: "The model provider is rate-limiting",
  agent_failed: "The agent gave up",
  max_steps: "The step limit was reached",
  unknown_profile: "Unknown profile",
  unknown_credential: "Unknown credential",
};

export function errorTitle(code: string): string {
  const known = ERROR_TITLES[code];
  if (known) return known;
  const words = code.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Why a run did not succeed: a title for its error code, the service's sentence, the code for searching. */
export function RunErrorBanner({ error }: { error: { code: string; message: string } }) {
  const cancelled = error.code === "cancelled";
  return (
    <div className={`banner ${cancelled ? "banner-warning" : "banner-error"}`} role={cancelled ? "status" : "alert"}>
      <strong className="banner-title">
        {errorTitle(error.code)}
        {!cancelled && <code className="error-code">{error.code}</code>}
      </strong>
      <p>{error.message}</p>
    </div>
  );
}
